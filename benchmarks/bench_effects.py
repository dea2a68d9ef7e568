"""`bayesrepro effects` on the crowd designs of bench_crowd.py: its time and memory against `vca`'s whole run.

    python benchmarks/bench_effects.py                       # skewed, uniform and binary, 3 runs each
    python benchmarks/bench_effects.py --designs skewed --repeats 1

Both commands read the CSV, fit the model and print JSON; ``effects`` also computes every level's conditional
mode and conditional SD (20,000 items and up to 8,000 raters). The target: ``effects`` within twice ``vca``'s
wall time and under 1 GB. Printed: median wall seconds, peak resident memory, the ratio effects/vca.
"""

from __future__ import annotations

import argparse

from bench_check import print_summaries, summary
from bench_crowd import DESIGNS, FORMULA
from bench_frequentist import bayesrepro_command, run_command


def measure(design, command: str, repeats: int) -> dict:
    return summary([run_command([*bayesrepro_command(), command, str(design.path()), "--formula", FORMULA,
                                 "--object", "item", "--json"]) for _ in range(repeats)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", default="skewed,uniform,binary")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for name in args.designs.split(","):
        design = DESIGNS[name]
        vca, effects = (measure(design, command, args.repeats) for command in ("vca", "effects"))
        print(f"\n{name}: {design.rows:,} rows, {design.items:,} items x {design.raters:,} raters")
        print_summaries({"vca": vca, "effects": effects}, 8)
        if vca["status"] == effects["status"] == "ok":
            print(f"  effects/vca wall {effects['seconds'] / vca['seconds']:.2f}x (target <= 2), "
                  f"peak {effects['peak_mb']:.0f} MB (target < 1024)")


if __name__ == "__main__":
    main()
