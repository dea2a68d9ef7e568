"""`bayesrepro baselines`: the field's usual error bars for 0/1 scores, beside the binary GLMM's answer."""

from __future__ import annotations

from .common import add_data_options, categorical_columns, convergence_status, print_json

HELP = ("the field's usual error bars of 0/1 scores (Wilson intervals, clustered SEs, the paired difference, "
        "McNemar's test) beside the binary GLMM's GLRT and contrasts")


def register(subparsers) -> None:
    parser = subparsers.add_parser("baselines", help=HELP, description=HELP)
    add_data_options(parser)
    parser.add_argument("--score", required=True, help="column of 0/1 scores, e.g. correct")
    parser.add_argument("--item", required=True, help="column of test items (the clusters)")
    parser.add_argument("--system", required=True, help="column of the systems compared")
    parser.add_argument("--formula",
                        help="binary GLMM whose GLRT and contrasts of the systems are shown beside, "
                             "e.g. 'correct ~ system + (1|item) + (1|system:seed)'")
    parser.add_argument("--link", choices=("logit", "probit"), help="link of the GLMM (default logit)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..api.baselines import baselines

    result = baselines(args.data, args.score, args.item, args.system, formula=args.formula, where=args.where,
                       categorical=categorical_columns(args), drop_missing=args.drop_missing, link=args.link)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.summary())
    return convergence_status(result.not_converged())
