"""`bayesrepro bootstrap`: paired bootstrap (or multi-bootstrap) test of two systems."""

from __future__ import annotations

from .. import limits
from .common import add_count, add_data_options, add_seed, print_json, read_rows

HELP = "paired bootstrap test (shift method) of two systems scored on the same items"


def register(subparsers) -> None:
    parser = subparsers.add_parser("bootstrap", help=HELP, description=HELP)
    add_comparison_arguments(parser)
    parser.add_argument("--instances", choices=("best", "multi"), default="best",
                        help="with --instance: compare each system's best instance (default) or "
                             "resample instances and items together (multi-bootstrap)")
    parser.set_defaults(func=run)


def add_comparison_arguments(parser) -> None:
    """Arguments shared by the bootstrap and permutation commands."""
    add_data_options(parser, progress=True)
    parser.add_argument("--item", required=True, help="column identifying the evaluation item")
    parser.add_argument("--system", required=True, help="column identifying the system")
    parser.add_argument("--score", required=True, help="column with the per-item score")
    parser.add_argument("--a", required=True, help="first system (statistic = metric(a) - metric(b))")
    parser.add_argument("--b", required=True, help="second system")
    parser.add_argument("--instance", help="column identifying trained instances (seeds) of a system")
    parser.add_argument("--lower-is-better", action="store_true",
                        help="lower scores are better (e.g. TER); used to pick the best instance")
    add_count(parser, limits.RESAMPLES, 10_000, "number of resamples; resamples x items at most 2,000,000,000, "
                                               "which take a few minutes")
    add_seed(parser, None)
    parser.add_argument("--alternative", choices=("two-sided", "greater", "less"), default="two-sided",
                        help="the alternative hypothesis about metric(a) - metric(b) (default two-sided)")


def run_comparison(test, args, **options) -> int:
    """Run ``test`` (``bootstrap`` or ``permutation`` of the public API) on the command's rows and print it."""
    columns = [args.item, args.system, args.score] + ([args.instance] if args.instance is not None else [])
    result = test(read_rows(args, columns), args.item, args.system, args.score, args.a, args.b,
                  instance=args.instance, lower_is_better=args.lower_is_better, resamples=args.resamples,
                  seed=args.seed, alternative=args.alternative, progress=True if args.progress else None,
                  **options)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.summary())
    return 0


def run(args) -> int:
    from ..api.resampling import bootstrap

    return run_comparison(bootstrap, args, instances=args.instances)
