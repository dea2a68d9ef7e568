"""`bayesrepro check` on the bundled kreutzer_marking_partial grid: its wall and CPU time and memory against `vca`'s.

    python benchmarks/bench_check.py                 # 5 runs of each command
    python benchmarks/bench_check.py --repeats 1 --simulations 100

Both commands read the bundled data (56,214 scores), fit ``GRID`` by REML and print JSON; ``check`` also
simulates 250 data sets (``--simulations``), computes their quantile residuals and the tests, the fitted values
and every level effect. The target: ``check`` within 3 times ``vca``'s time. The two commands run in turn (vca,
check, vca, ...), so that both meet the same load of a shared machine. Printed: the load average, the median and
the best wall seconds, the best CPU seconds (user + system: what the command itself cost, less sensitive to
the load than the wall time), the peak resident memory, and the ratios check/vca of each.
"""

from __future__ import annotations

import argparse
import os
import statistics

from bench_frequentist import CACHE, bayesrepro_command, run_command

GRID = ("ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout) + (1|decoder_dropout)"
        " + (1|decoder_dropout_hidden) + (1|delta_scheme)")
CATEGORICAL = "learning_rate,seed,encoder_dropout,decoder_dropout,decoder_dropout_hidden,delta_scheme"


def command(name: str, extra: list[str]) -> list[str]:
    return [*bayesrepro_command(), name, "kreutzer_marking_partial", "--formula", GRID, "--categorical", CATEGORICAL,
            "--json", *extra]


def summary(runs: list) -> dict:
    """The median and best wall seconds, the best CPU seconds and the peak memory of repeated runs of one
    command, or the first failure."""
    failed = [run for run in runs if run.status != "ok"]
    if failed:
        return {"status": failed[0].status, "stderr": failed[0].stderr[-300:]}
    return {"status": "ok", "seconds": statistics.median(run.seconds for run in runs),
            "best_seconds": min(run.seconds for run in runs), "cpu_seconds": min(run.cpu_seconds for run in runs),
            "peak_mb": max(run.peak_mb for run in runs)}


def print_summaries(summaries: dict[str, dict], width: int) -> None:
    """One line per command: its ``summary``, the label padded to ``width``."""
    for label, result in summaries.items():
        if result["status"] != "ok":
            print(f"  {label}: {result['status']} {result.get('stderr', '')}")
        else:
            print(f"  {label:{width}s} wall {result['seconds']:6.2f} s (best {result['best_seconds']:.2f})  "
                  f"CPU {result['cpu_seconds']:6.2f} s (best)  {result['peak_mb']:6.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--simulations", type=int, default=250)
    args = parser.parse_args()
    CACHE.mkdir(exist_ok=True)
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} cores at start")
    runs = {"vca": [], "check": []}
    for _ in range(args.repeats):
        runs["vca"].append(run_command(command("vca", [])))
        runs["check"].append(run_command(command("check", ["--simulations", str(args.simulations)])))
    vca, check = summary(runs["vca"]), summary(runs["check"])
    print(f"kreutzer_marking_partial: 56,214 rows; check with {args.simulations} simulations; {args.repeats} runs each")
    print_summaries({"vca": vca, "check": check}, 6)
    if vca["status"] == check["status"] == "ok":
        print(f"  check/vca: median wall {check['seconds'] / vca['seconds']:.2f}x, best wall "
              f"{check['best_seconds'] / vca['best_seconds']:.2f}x, best CPU "
              f"{check['cpu_seconds'] / vca['cpu_seconds']:.2f}x (target <= 3)")
    print(f"load average {' '.join(f'{v:.2f}' for v in os.getloadavg())} at the end")


if __name__ == "__main__":
    main()
