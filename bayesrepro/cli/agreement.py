"""`bayesrepro agreement`: Krippendorff's alpha, Cohen's kappa and Scott's pi."""

from __future__ import annotations

from .common import add_data_options, print_json, read_rows

HELP = "chance-corrected agreement of raters (Krippendorff's alpha; Cohen's kappa, Scott's pi for 2 raters)"


def register(subparsers) -> None:
    parser = subparsers.add_parser("agreement", help=HELP, description=HELP)
    add_data_options(parser)
    parser.add_argument("--item", required=True, nargs="+", metavar="COL",
                        help="column(s) whose combination is the rated unit")
    parser.add_argument("--rater", required=True, help="column identifying the rater")
    parser.add_argument("--score", required=True,
                        help="column with the rating (numbers; text is allowed at the nominal level)")
    parser.add_argument("--level", choices=("nominal", "ordinal", "interval", "ratio"), default="nominal",
                        help="level of measurement, which sets the distance between two ratings in alpha "
                             "(default nominal); kappa and pi are given at the nominal and interval levels")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..api.agreement import agreement

    # a missing score is a rating not given; missing unit or rater ids follow --drop-missing
    frame = read_rows(args, list(args.item) + [args.rater])
    result = agreement(frame, list(args.item), args.rater, args.score, level=args.level)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.summary())
    return 0
