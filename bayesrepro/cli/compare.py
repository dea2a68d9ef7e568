"""`bayesrepro compare`: the frequentist and the Bayesian answer to one formula, side by side."""

from __future__ import annotations

from .common import add_data_options, add_side_by_side_options, categorical_columns, print_json


def register(subparsers) -> None:
    parser = subparsers.add_parser("compare", help="REML with bootstrap intervals next to the posterior; disagreements in words")
    add_data_options(parser)
    parser.add_argument("--formula", required=True, help="e.g. 'ter ~ system + (1|sentence_id)'")
    parser.add_argument("--object", help="object of measurement of phi (default: the grouping factor with most levels)")
    parser.add_argument("--factor", help="categorical fixed effect whose levels are compared (default: the first one)")
    parser.add_argument("--by", help="data property the factor interacts with (default: read from the formula)")
    parser.add_argument("--h0", help="null model of the omnibus GLRT (default: the formula without the factor's terms)")
    add_side_by_side_options(parser)
    parser.add_argument("--prob", type=float, default=0.95, help="interval probability (default 0.95)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..compare import compare
    from ..data import read_table

    data = read_table(args.data, where=args.where, categorical=categorical_columns(args))
    result = compare(args.formula, data, args.object, factor=args.factor, by=args.by, h0=args.h0,
                     n_boot=args.bootstrap, draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed,
                     prob=args.prob, allow_unconverged=args.allow_unconverged, drop_missing=args.drop_missing)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result)
    return 0 if result.reml.converged and result.bayes.diagnostics.converged else 1
