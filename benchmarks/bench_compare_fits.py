"""The REML and ML fits `bayesrepro compare` runs, and its time, in one checkout or two.

Usage:
    python benchmarks/bench_compare_fits.py CHECKOUT [CHECKOUT ...] [--repeats 3] [-- COMPARE ARGS]

Each CHECKOUT is a directory holding a `bayesrepro` package (this repository, or an export of an earlier
commit: `git archive COMMIT | tar -x -C DIR`). The command (default: the README's comparison of the systems
of kreutzer_ter) runs in a fresh interpreter per repeat, the checkouts taking turns so that they share the
machine's load; every call of the engine's fit of a model frame (REML or ML, bootstrap refits excluded) is
counted by formula and method, and the command's wall time is the median of the repeats. Checkouts from
before fits were kept on their frame count `fit_model_frame`, later ones `fit_frame_once`, the fit it
computes once.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

DEFAULT = ["compare", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--json"]
COUNTER = """
import collections, json, sys, time
import bayesrepro.frequentist.lmm as lmm
name = "fit_frame_once" if hasattr(lmm, "fit_frame_once") else "fit_model_frame"
original = getattr(lmm, name)
counts = collections.Counter()
def counted(frame, method):
    counts[f"{method} {frame.formula}"] += 1
    return original(frame, method)
from bayesrepro.cli import COMMANDS, main
import importlib
for command in COMMANDS:
    importlib.import_module(f"bayesrepro.cli.{command}")
import bayesrepro.compare, bayesrepro.frequentist.analyses, bayesrepro.frequentist.glrt, bayesrepro.plan.pilot
for module in [m for m in list(sys.modules.values()) if m is not None and m.__name__.startswith("bayesrepro")]:
    if getattr(module, name, None) is original:
        setattr(module, name, counted)
start = time.perf_counter()
status = main(sys.argv[1:])
print("FITS " + json.dumps({"status": status, "seconds": time.perf_counter() - start, "fits": counts}),
      file=sys.stderr)
"""


def run(checkout: str, argv: list[str]) -> dict:
    env = dict(os.environ, PYTHONPATH=checkout)
    result = subprocess.run([sys.executable, "-c", COUNTER, *argv], capture_output=True, text=True, env=env,
                            cwd=checkout, timeout=900)
    line = next(line for line in result.stderr.splitlines() if line.startswith("FITS "))
    return json.loads(line.removeprefix("FITS "))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs="+")
    parser.add_argument("--repeats", type=int, default=3)
    args, rest = parser.parse_known_args()
    argv = rest[1:] if rest[:1] == ["--"] else (rest or DEFAULT)
    runs = {checkout: [] for checkout in args.checkouts}
    for _ in range(args.repeats):
        for checkout in args.checkouts:
            runs[checkout].append(run(checkout, argv))
    for checkout, results in runs.items():
        fits = results[-1]["fits"]
        print(f"{checkout}: {sum(fits.values())} fits {fits}; median {statistics.median(r['seconds'] for r in results):.2f} s "
              f"of {[round(r['seconds'], 2) for r in results]}; exit status {results[-1]['status']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
