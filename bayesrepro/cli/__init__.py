"""The `bayesrepro` command line: one subcommand per module in this package."""

from __future__ import annotations

import argparse
import importlib
import sys

from ..errors import BayesreproError

# modules of this package, each registering its subcommand (import_logs registers `import`)
COMMANDS = ("vca", "glrt", "demo", "phi", "compare", "report", "bootstrap", "permutation", "budget", "agreement",
            "circularity", "baselines", "import_logs", "plan")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="bayesrepro",
        description="Inferential reproducibility for ML evaluations: LMMs, GLRTs, variance components, reliability.",
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f".{name}", __name__).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BayesreproError as error:
        print(f"bayesrepro: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("bayesrepro: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
