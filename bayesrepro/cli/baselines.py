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
    from ..data import read_table
    from ..instruments.binary_baselines import binary_baselines

    data = read_table(args.data, where=args.where, categorical=categorical_columns(args))
    baselines = binary_baselines(data, args.score, args.item, args.system)
    comparison = None
    if args.formula:
        from ..frequentist.binary_comparison import compare_binary_levels

        comparison = compare_binary_levels(args.formula, data, factor=args.system, drop_missing=args.drop_missing,
                                           link=args.link)
    if args.json:
        print_json({"baselines": baselines.to_dict(), "glmm": comparison.to_dict() if comparison else None})
    else:
        print(baselines)
        if comparison:
            print(f"\nThe binary GLMM ({comparison.fit.approximation}), which also counts the variation the "
                  "formula's other random effects describe:")
            print(comparison)
    fits = [] if comparison is None else [("H0", comparison.test.h0), ("the GLMM", comparison.fit)]
    return convergence_status([f"the ML fit of {name} did not converge ({fit.message})"
                               for name, fit in fits if not fit.converged])
