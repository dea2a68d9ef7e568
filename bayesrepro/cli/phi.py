"""`bayesrepro phi`: posterior distribution of the reliability φ and of every variance component."""

from __future__ import annotations

from .common import (add_data_options, add_family_options, add_formula_options, add_sampling_options,
                     convergence_status, model_of, print_json)

HELP = ("posterior distribution of every variance component and of reliability phi (NUTS), "
        "with R-hat, ESS and divergences")


def register(subparsers) -> None:
    from ..choices import BACKENDS, PRIOR_CHOICES, SAMPLERS

    parser = subparsers.add_parser("phi", help=HELP, description=HELP)
    add_data_options(parser, engines=True)
    add_formula_options(parser)
    add_sampling_options(parser, seed_default=None)
    parser.add_argument("--backend", default="auto", choices=BACKENDS,
                        help="fast: exact marginal model (Gaussian); bambi: Bambi's own model; auto: fast when possible")
    add_family_options(parser)
    parser.add_argument("--prior", choices=PRIOR_CHOICES,
                        help="scaled (default): half-normal SD priors with 95%% of their mass below the SD of the "
                             "scores; bambi: Bambi's wider automatic priors; r2d2: total SD x Dirichlet shares; "
                             "brms: brms's defaults (Student-t(3) on SDs and the intercept, flat coefficients, "
                             "LKJ(1))")
    parser.add_argument("--prior-scale", action="append", default=[], metavar="NAME=VALUE",
                        help="override one prior scale (a grouping factor, Residual, total or concentration): an SD "
                             "scale within a factor of 10^6 of the SD of the scores, a concentration from 0.01 to 100; "
                             "repeatable")
    parser.add_argument("--sampler", default="auto", choices=SAMPLERS,
                        help="NUTS implementation; auto (default): nutpie on the compiled fast path, PyMC for "
                             "Bambi's model")
    parser.set_defaults(func=run)


def run(args) -> int:
    model = model_of(args, args.formula, args.object)
    posterior = model.sample(args.draws, args.tune, args.chains, args.seed, args.prior,
                             prior_scales(args.prior_scale), args.backend, args.sampler, args.allow_unconverged,
                             args.prob, args.target_accept)
    if args.json:
        print_json(posterior.to_dict())
    else:
        print(posterior.summary())
    # without --allow-unconverged an unconverged run was refused above (exit 3)
    return convergence_status(posterior.not_converged())


def prior_scales(items: list[str]) -> dict[str, str]:
    """``--prior-scale NAME=VALUE`` options as a mapping (``Model.sample`` checks names and values)."""
    from ..errors import BayesreproError

    overrides = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep:
            raise BayesreproError(f"--prior-scale '{item}' needs the form NAME=VALUE, e.g. seed=0.05")
        overrides[name.strip()] = value.strip()
    return overrides
