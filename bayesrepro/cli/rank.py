"""`bayesrepro rank`: a leaderboard of the levels of one factor with the uncertainty of every rank."""

from __future__ import annotations

from .. import limits
from .common import (add_count, add_data_options, add_family_options, add_formula_options, add_side_by_side_options,
                     convergence_status, model_of, print_json)

HELP = ("leaderboard with rank uncertainty: per level of a factor the posterior probability of being best, of being "
        "in the top k, the expected rank and a rank interval, next to parametric-bootstrap rank intervals")


def register(subparsers) -> None:
    from ..choices import PRIOR_CHOICES

    parser = subparsers.add_parser("rank", help=HELP, description=HELP)
    add_data_options(parser, engines=True)
    add_formula_options(parser)
    parser.add_argument("--factor", default="system",
                        help="the factor whose levels are ranked: a categorical fixed effect (default: system)")
    add_count(parser, limits.TOP, 1, "report the probability of ranking among the best K levels; at most the "
              "number of levels", metavar="K")
    parser.add_argument("--lower-is-better", action="store_true",
                        help="rank the lowest mean first (error rates, TER)")
    parser.add_argument("--prior", choices=PRIOR_CHOICES,
                        help="family of priors, as for phi (default: scaled for Gaussian scores, Bambi's for 0/1)")
    add_family_options(parser)
    add_side_by_side_options(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    model = model_of(args, args.formula, args.object)
    result = model.rank(args.factor, args.top, args.lower_is_better, args.prob, args.bootstrap, args.seed,
                        args.draws, args.tune, args.chains, args.prior, args.allow_unconverged, args.target_accept)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.summary())
    return convergence_status(result.not_converged())
