"""`bayesrepro glrt`: likelihood-ratio test of two nested models."""

from __future__ import annotations

from .common import add_data_options, add_family_options, categorical_columns, print_json


def register(subparsers) -> None:
    parser = subparsers.add_parser("glrt", help="generalized likelihood-ratio test of nested LMMs or binary GLMMs (ML fits)")
    add_data_options(parser)
    parser.add_argument("--h0", required=True, help="the smaller model, e.g. 'ter ~ 1 + (1|sentence_id)'")
    parser.add_argument("--h1", required=True, help="the larger model, e.g. 'ter ~ system + (1|sentence_id)'")
    add_family_options(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..data import read_table
    from ..frequentist import glrt

    data = read_table(args.data, where=args.where, categorical=categorical_columns(args))
    result = glrt(args.h0, args.h1, data, drop_missing=args.drop_missing, family=args.family, link=args.link)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result)
    return 0
