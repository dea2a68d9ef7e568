"""`bayesrepro glrt`: likelihood-ratio test of two nested models."""

from __future__ import annotations

from .. import limits
from .common import add_count, add_data_options, add_family_options, add_seed, convergence_status, model_of, print_json

HELP = ("generalized likelihood-ratio test of two nested models, both fitted by ML (LMMs, or binary GLMMs by "
        "Laplace); the p-value's reference is named, and calibrated when few levels carry the tested effect")


def register(subparsers) -> None:
    parser = subparsers.add_parser("glrt", help=HELP, description=HELP)
    add_data_options(parser, engines=True)
    parser.add_argument("--h0", required=True, help="the smaller model, e.g. 'ter ~ 1 + (1|sentence_id)'")
    parser.add_argument("--h1", required=True, help="the larger model, e.g. 'ter ~ system + (1|sentence_id)'")
    add_family_options(parser)
    parser.add_argument(
        "--reference", default="auto",
        help="reference distribution of the p-value: auto (default: calibrated when a grouping factor with fewer "
             "than 50 levels carries the tested effect, chi2 otherwise), chi2 (the boundary mixture for one "
             "variance component, or one random slope with its correlations), kenward-roger, satterthwaite, "
             "bootstrap, exact-rlrt (not for random slopes)")
    add_count(parser, limits.BOOTSTRAP_SAMPLES, 1000, "refits of data simulated under H0 for --reference bootstrap")
    add_seed(parser, None, "the simulated references (bootstrap, exact-rlrt)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..design import parse_formula
    from ..frequentist.reference import check_reference

    check_reference(args.reference)
    parse_formula(args.h0, slopes=True)
    model = model_of(args, args.h1)
    test = model.glrt(args.h0, args.reference, args.bootstrap_samples, args.seed)
    if args.json:
        print_json(test.to_dict())
    else:
        print(test.summary())
    return convergence_status(test.not_converged())
