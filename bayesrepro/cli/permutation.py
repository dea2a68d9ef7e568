"""`bayesrepro permutation`: approximate randomization test of two systems."""

from __future__ import annotations

from .bootstrap import add_comparison_arguments, run_comparison

HELP = "approximate randomization (permutation) test of two systems scored on the same items"


def register(subparsers) -> None:
    parser = subparsers.add_parser("permutation", help=HELP, description=HELP)
    add_comparison_arguments(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..api.resampling import permutation

    return run_comparison(permutation, args)
