"""`bayesrepro glrt`: likelihood-ratio test of two nested models."""

from __future__ import annotations

from .common import add_data_options, add_family_options, categorical_columns, print_json


def register(subparsers) -> None:
    parser = subparsers.add_parser("glrt", help="generalized likelihood-ratio test of nested LMMs or binary GLMMs (ML fits)")
    add_data_options(parser)
    parser.add_argument("--h0", required=True, help="the smaller model, e.g. 'ter ~ 1 + (1|sentence_id)'")
    parser.add_argument("--h1", required=True, help="the larger model, e.g. 'ter ~ system + (1|sentence_id)'")
    add_family_options(parser)
    parser.add_argument(
        "--reference", default="auto",
        help="reference distribution of the p-value: auto (default: calibrated when a grouping factor with fewer "
             "than 50 levels carries the tested effect, chi2 otherwise), chi2 (the boundary mixture for one "
             "variance component), kenward-roger, satterthwaite, bootstrap, exact-rlrt")
    parser.add_argument("--bootstrap-samples", default="1000",
                        help="refits of data simulated under H0 for --reference bootstrap (default 1000)")
    parser.add_argument("--seed", default=None, help="seed of the simulated references (bootstrap, exact-rlrt)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..data import read_table
    from ..errors import BayesreproError
    from ..frequentist import glrt
    from ..frequentist.bootstrap_test import check_samples
    from ..frequentist.reference import check_reference

    reference = check_reference(args.reference)
    samples = check_samples(args.bootstrap_samples)
    if args.seed is not None and not str(args.seed).isdigit():
        raise BayesreproError(f"--seed must be a non-negative whole number, got {args.seed!r}")
    seed = None if args.seed is None else int(args.seed)
    data = read_table(args.data, where=args.where, categorical=categorical_columns(args))
    result = glrt(args.h0, args.h1, data, drop_missing=args.drop_missing, reference=reference,
                  bootstrap_samples=samples, seed=seed, family=args.family, link=args.link)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result)
    return 0
