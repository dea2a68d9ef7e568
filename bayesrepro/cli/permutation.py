"""`bayesrepro permutation`: approximate randomization test of two systems."""

from __future__ import annotations

from .bootstrap import add_comparison_arguments, best_instances, describe, progress_bar, report, select_pair

HELP = "approximate randomization (permutation) test of two systems scored on the same items"


def register(subparsers) -> None:
    parser = subparsers.add_parser("permutation", help=HELP, description=HELP)
    add_comparison_arguments(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..instruments.resampling import permutation_test

    a, b = select_pair(args)
    scores_a, scores_b, chosen = best_instances(args, a, b)
    with progress_bar(args, "permutation") as bar:
        result = permutation_test(scores_a, scores_b, n_resamples=args.resamples, seed=args.seed,
                                  alternative=args.alternative, progress=bar.update)
    report({**describe(args, a, b, chosen), **result.to_dict()}, args.json)
    return 0
