"""`bayesrepro check` on the bundled kreutzer_marking_partial grid: its wall time and memory against `vca`'s.

    python benchmarks/bench_check.py                 # 3 runs of each command
    python benchmarks/bench_check.py --repeats 1 --simulations 100

Both commands read the bundled data (56,214 scores), fit ``GRID`` by REML and print JSON; ``check`` also
simulates 250 data sets (``--simulations``), computes their quantile residuals and the tests, the fitted values
and every level effect. The target: ``check`` within 3 times ``vca``'s wall time. Printed: median wall seconds,
peak resident memory, the ratio check/vca.
"""

from __future__ import annotations

import argparse
import statistics

from bench_frequentist import CACHE, bayesrepro_command, run_command

GRID = ("ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout) + (1|decoder_dropout)"
        " + (1|decoder_dropout_hidden) + (1|delta_scheme)")
CATEGORICAL = "learning_rate,seed,encoder_dropout,decoder_dropout,decoder_dropout_hidden,delta_scheme"


def measure(command: str, repeats: int, extra: list[str]) -> dict:
    return summary([run_command([*bayesrepro_command(), command, "kreutzer_marking_partial", "--formula", GRID,
                                 "--categorical", CATEGORICAL, "--json", *extra]) for _ in range(repeats)])


def summary(runs: list) -> dict:
    """The median wall seconds and the peak memory of repeated runs of one command, or the first failure."""
    failed = [run for run in runs if run.status != "ok"]
    if failed:
        return {"status": failed[0].status, "stderr": failed[0].stderr[-300:]}
    return {"status": "ok", "seconds": statistics.median(run.seconds for run in runs),
            "peak_mb": max(run.peak_mb for run in runs)}


def print_summaries(summaries: dict[str, dict], width: int) -> None:
    """One line per command: its ``summary``, the label padded to ``width``."""
    for label, result in summaries.items():
        if result["status"] != "ok":
            print(f"  {label}: {result['status']} {result.get('stderr', '')}")
        else:
            print(f"  {label:{width}s} {result['seconds']:6.1f} s  {result['peak_mb']:6.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--simulations", type=int, default=250)
    args = parser.parse_args()
    CACHE.mkdir(exist_ok=True)
    vca = measure("vca", args.repeats, [])
    check = measure("check", args.repeats, ["--simulations", str(args.simulations)])
    print(f"kreutzer_marking_partial: 56,214 rows; check with {args.simulations} simulations")
    print_summaries({"vca": vca, "check": check}, 6)
    if vca["status"] == check["status"] == "ok":
        print(f"  check/vca wall {check['seconds'] / vca['seconds']:.2f}x (target <= 3)")


if __name__ == "__main__":
    main()
