"""`bayesrepro demo`: the papers' analyses on the bundled data."""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser("demo", help="run the papers' analyses on the bundled data and print their tables")
    parser.add_argument("--full-grid", action="store_true", help="also analyse the 337,284-row full meta-parameter grid")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..paper import run_demo

    run_demo(full_grid=args.full_grid)
    return 0
