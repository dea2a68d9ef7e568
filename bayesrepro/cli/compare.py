"""`bayesrepro compare`: the frequentist and the Bayesian answer to one formula, side by side."""

from __future__ import annotations

from .common import (add_data_options, add_family_options, add_formula_options, add_side_by_side_options,
                     convergence_status, formula_of, frame_of, print_json, sampling_settings)

HELP = ("REML (for 0/1 scores: the binary GLMM by ML) with parametric-bootstrap intervals next to the posterior, "
        "contrasts with p next to the probability of direction and LOO; where the two engines disagree, a sentence says so")


def register(subparsers) -> None:
    parser = subparsers.add_parser("compare", help=HELP, description=HELP)
    add_data_options(parser, engines=True)
    add_formula_options(parser)
    parser.add_argument("--factor", help="categorical fixed effect whose levels are compared (default: the first one)")
    parser.add_argument("--by", help="data property the factor interacts with (default: read from the formula)")
    parser.add_argument("--h0", help="null model of the omnibus GLRT (default: the formula without the factor's terms)")
    add_family_options(parser)
    add_side_by_side_options(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    import sys

    from ..compare import check_bootstrap, compare

    spec = formula_of(args.formula, object=args.object)
    if args.h0 is not None:
        formula_of(args.h0, "--h0")
    check_bootstrap(args.bootstrap)
    settings = sampling_settings(args, progress=args.progress or None)
    result = compare(frame_of(args, spec), object=args.object, factor=args.factor, by=args.by, h0=args.h0,
                     n_boot=args.bootstrap, prob=args.prob, sampling=settings, family=args.family, link=args.link)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result)
    return convergence_status(result.not_converged())
