"""`bayesrepro check`: the model checked against data simulated from it (frequentist fit or posterior)."""

from __future__ import annotations

from ..errors import BayesreproError
from .common import (add_count, add_data_options, add_family_options, add_formula_options, add_sampling_options,
                     convergence_status, model_of, print_json)

HELP = ("check the model against data simulated from it: randomized quantile residuals (uniformity), dispersion, "
        "missing random slopes and outlying levels, each with what it found; figures with --out")
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def register(subparsers) -> None:
    from ..limits import CHECK_SIMULATIONS

    parser = subparsers.add_parser("check", help=HELP, description=HELP)
    add_data_options(parser, engines=True)
    add_formula_options(parser)
    add_family_options(parser)
    parser.add_argument("--out", metavar="FIGURE", help="write the check's figures to this .png/.pdf/.svg")
    parser.add_argument("--bayes", action="store_true",
                        help="check the posterior (posterior predictive draws) instead of the REML/ML fit")
    add_count(parser, CHECK_SIMULATIONS, 250, "simulated data sets (posterior predictive draws with --bayes) every "
                                              "test reads against; the smallest p-value is 1/(simulations + 1)")
    add_sampling_options(parser, seed_default=0)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..output import atomic_path, check_writable
    from .common import sampling_settings

    out = check_writable(args.out, FIGURE_SUFFIXES, "--out") if args.out else None
    model = model_of(args, args.formula, args.object)
    if not model.frame.has_rows:   # refused before a fit or a sampler runs for nothing
        raise BayesreproError(f"--engine {args.engine}: model checks need the rows in memory, and this engine keeps "
                              "only their sums; use --engine memory")
    if args.bayes:
        settings = sampling_settings(args)
        posterior = model.sample(settings.draws, settings.tune, settings.chains, settings.seed,
                                 allow_unconverged=settings.allow_unconverged, prob=args.prob,
                                 target_accept=settings.target_accept)
        check, problems = posterior.check(seed=args.seed, simulations=args.simulations), posterior.not_converged()
    else:
        fit = model.fit()
        check, problems = fit.check(seed=args.seed, simulations=args.simulations), fit.not_converged()
    if out is not None:
        with atomic_path(out) as temporary:
            check.plot().savefig(temporary, format=out.suffix.lstrip(".").lower(), dpi=110)
    if args.json:
        print_json(check.to_dict())
    else:
        print(check.summary())
    return convergence_status(problems)
