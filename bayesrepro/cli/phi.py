"""`bayesrepro phi`: posterior distribution of the reliability φ and of every variance component."""

from __future__ import annotations

from .common import add_data_options, add_family_options, categorical_columns, print_json


def register(subparsers) -> None:
    parser = subparsers.add_parser("phi", help="Bayesian variance components and the posterior of reliability phi")
    add_data_options(parser)
    parser.add_argument("--formula", required=True, help="e.g. 'ter ~ 1 + (1|sentence_id) + (1|seed)'")
    parser.add_argument("--object", help="object of measurement (default: the grouping factor with most levels)")
    parser.add_argument("--draws", type=int, default=1000, help="posterior draws per chain (default 1000)")
    parser.add_argument("--tune", type=int, default=1000, help="tuning iterations per chain (default 1000)")
    parser.add_argument("--chains", type=int, default=4, help="number of chains (default 4)")
    parser.add_argument("--seed", type=int, help="random seed; the same seed gives the same draws")
    parser.add_argument("--backend", default="auto", choices=("auto", "fast", "bambi"),
                        help="fast: exact marginal model (Gaussian); bambi: Bambi's own model; auto: fast when possible")
    add_family_options(parser)
    parser.add_argument("--prior",
                        help="scaled (default): half-normal SD priors with 95%% of their mass below the SD of the "
                             "scores; bambi: Bambi's wider automatic priors; r2d2: total SD x Dirichlet shares")
    parser.add_argument("--prior-scale", action="append", default=[], metavar="NAME=VALUE",
                        help="override one prior scale (a factor, Residual, total or concentration); repeatable")
    parser.add_argument("--sampler", default="auto", choices=("auto", "pymc", "nutpie"),
                        help="NUTS implementation; auto (default): nutpie on the compiled fast path, PyMC for Bambi's model")
    parser.add_argument("--prob", type=float, default=0.95, help="probability of the intervals (default 0.95)")
    parser.add_argument("--allow-unconverged", action="store_true",
                        help="report the draws even if R-hat/ESS/divergences say the run did not converge")
    parser.add_argument("--progress", action="store_true",
                        help="show the sampler's progress bar (shown anyway when stderr is a terminal)")
    parser.set_defaults(func=run)


def run(args) -> int:
    import sys

    from ..bayes import fit_bayes
    from ..data import read_table
    from ..errors import BayesreproError

    overrides = {}
    for item in args.prior_scale:
        name, sep, value = item.partition("=")
        if not sep:
            raise BayesreproError(f"--prior-scale '{item}' needs the form NAME=VALUE, e.g. seed=0.05")
        overrides[name.strip()] = value.strip()
    data = read_table(args.data, where=args.where, categorical=categorical_columns(args))
    fit = fit_bayes(
        args.formula,
        data,
        object=args.object,
        family=args.family,
        link=args.link,
        backend=args.backend,
        prior=args.prior,
        prior_overrides=overrides,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        seed=args.seed,
        sampler=args.sampler,
        allow_unconverged=args.allow_unconverged,
        progress=args.progress or sys.stderr.isatty(),
        drop_missing=args.drop_missing,
    )
    if args.json:
        print_json(fit.to_dict(args.prob))
    else:
        print(fit)
    return 0
