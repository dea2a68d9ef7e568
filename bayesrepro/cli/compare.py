"""`bayesrepro compare`: the frequentist and the Bayesian answer to one formula, side by side."""

from __future__ import annotations

from .common import (add_data_options, add_family_options, add_formula_options, add_side_by_side_options,
                     convergence_status, model_of, print_json)

HELP = ("REML (for 0/1 scores: the binary GLMM by ML) with parametric-bootstrap intervals next to the posterior, "
        "contrasts with p next to the probability of direction and LOO; where the two engines disagree, a sentence says so")


def register(subparsers) -> None:
    parser = subparsers.add_parser("compare", help=HELP, description=HELP)
    add_data_options(parser, engines=True)
    add_formula_options(parser)
    parser.add_argument("--factor", help="categorical fixed effect whose levels are compared (default: the first one)")
    parser.add_argument("--by", help="data property the factor interacts with (default: read from the formula)")
    parser.add_argument("--h0", help="null model of the omnibus GLRT (default: the formula without the factor's terms)")
    parser.add_argument("--no-phi", action="store_true",
                        help="leave out phi, for a design without an object of measurement (a grid of meta-parameters)")
    add_family_options(parser)
    add_side_by_side_options(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    model = model_of(args, args.formula, args.object)
    result = model.compare(args.factor, args.by, args.h0, args.seed, args.bootstrap, args.draws, args.tune,
                           args.chains, args.allow_unconverged, args.prob, args.target_accept, not args.no_phi)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.summary())
    return convergence_status(result.not_converged())
