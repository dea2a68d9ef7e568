"""`bayesrepro demo`: the papers' analyses on the bundled data."""

from __future__ import annotations

HELP = ("run the papers' analyses on the bundled data and print their tables "
        "(GLRTs, variance components, reliability; takes no options)")


def register(subparsers) -> None:
    parser = subparsers.add_parser("demo", help=HELP, description=HELP)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..paper import run_demo

    run_demo()
    return 0
