"""`bayesrepro permutation`: approximate randomization test of two systems."""

from __future__ import annotations

from .bootstrap import add_comparison_arguments, describe, report, select_pair

HELP = "approximate randomization (permutation) test of two systems scored on the same items"


def register(subparsers) -> None:
    parser = subparsers.add_parser("permutation", help=HELP, description=HELP)
    add_comparison_arguments(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..instruments.resampling import permutation_test

    a, b = select_pair(args)
    name_a, scores_a = a.best_instance(args.lower_is_better)
    name_b, scores_b = b.best_instance(args.lower_is_better)
    result = permutation_test(scores_a, scores_b, n_resamples=args.resamples, seed=args.seed,
                              alternative=args.alternative)
    chosen = ({"instance_a": name_a, "instance_b": name_b} if args.instance else
              {"instance_a": None, "instance_b": None})
    report({**describe(args, a, b, chosen), **result.to_dict()}, args.json)
    return 0
