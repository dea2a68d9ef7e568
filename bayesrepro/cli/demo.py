"""`bayesrepro demo`: the papers' analyses on the bundled data."""

from __future__ import annotations


def register(subparsers) -> None:
    parser = subparsers.add_parser("demo", help="run the papers' analyses on the bundled data and print their tables")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..paper import run_demo

    run_demo()
    return 0
