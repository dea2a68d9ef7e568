"""`bayesrepro circularity`: does a GAM on a few features explain the model's predictions?"""

from __future__ import annotations

from .. import limits
from .common import add_count, add_data_options, print_json, read_rows

HELP = "circularity test: rank feature subsets by the deviance of the predictions their GAM explains"


def register(subparsers) -> None:
    parser = subparsers.add_parser("circularity", help=HELP, description=HELP)
    add_data_options(parser)
    parser.add_argument("--prediction", required=True, help="column with the model's predictions")
    parser.add_argument("--features", required=True, nargs="+", metavar="COL", help="candidate feature columns")
    parser.add_argument("--defining", nargs="+", metavar="COL", default=[],
                        help="features the target is defined from (needed for a verdict)")
    add_count(parser, limits.MAX_SIZE, None, "largest subset size to fit, at most the number of features",
              default_text="all")
    add_count(parser, limits.GAM_DF, 10, "B-spline basis size per smooth; the GAM on all features needs 10 rows "
                                         "per coefficient")
    parser.add_argument("--tie-tolerance", type=float, default=0.01,
                        help="D² differences up to this count as ties (default 0.01)")
    parser.add_argument("--d2-threshold", type=float, default=0.9,
                        help="D² a circular candidate must reach (default 0.9)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..api.circularity import circularity

    frame = read_rows(args, list(args.features) + [args.prediction])
    result = circularity(frame, args.prediction, list(args.features), defining=args.defining,
                         max_size=args.max_size, df=args.df, tie_tolerance=args.tie_tolerance,
                         d2_threshold=args.d2_threshold)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.summary())
    return 0
