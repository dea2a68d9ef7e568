"""Random slopes, Bayesian: our whole `phi` command against brms's sampling alone, in bulk ESS per second.

Usage:
    python benchmarks/bench_bayes_slopes.py [--draws 1000,4000] [--seed 1] [--skip-brms] [--json-out FILE]

Model: lme4's sleepstudy, ``Reaction ~ Days + (Days | Subject)`` with brms's default priors (``--prior brms``).

Ours: ``python -m bayesrepro phi tests/data/sleepstudy.csv.gz --formula F --prior brms --json`` with 4 chains,
1,000 tuning steps and each ``--draws`` per chain, timed end to end as a user runs it (interpreter start-up,
imports, reading the data, loading the compiled density from numba's cache, sampling, summaries). One
untimed run first fills the cache.
brms: ``tests/reference/brms_slopes.R`` (4 chains × 5,000 draws after 1,000 warm-up steps), of which only
Stan's sampling time (post-warm-up, summed over the chains, which run one after another) is counted:
no start-up, no compilation, no warm-up.

ESS per second: the smallest bulk ESS of the two SDs, the correlation and σ over the counted seconds.
Printed last: the ratio ours / brms against the target of 10. Stan times its sampling with ``clock()``, the processor
time of R's process, which other work on the machine does not stretch; ours is wall-clock time, which it does. So
the processor seconds (user + system) of our command are given too, with the ratio on that common footing.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "sleepstudy.csv.gz"
FORMULA = "Reaction ~ Days + (Days|Subject)"
TARGET = 10.0


def timed_phi(arguments: list[str]) -> tuple[dict, float, float]:
    """``bayesrepro phi ARGUMENTS --json --allow-unconverged`` as a user runs it, from the repository: its JSON, wall
    seconds and processor seconds."""
    command = [sys.executable, "-m", "bayesrepro", "phi", *arguments, "--json", "--allow-unconverged"]
    start, usage = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    seconds, after = time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - usage.ru_utime - usage.ru_stime
    if result.returncode not in (0, 3):   # 3: not converged, the draws kept (--allow-unconverged)
        raise SystemExit(f"bayesrepro phi failed: {result.stderr.strip()}")
    return json.loads(result.stdout), seconds, cpu


def report_ratios(report: dict, ess_per_second: float, ess_per_cpu_second: float, peer_ess_per_second: float,
                  target: float) -> None:
    """Our bulk ESS per second over brms's sampling's, in wall and in processor seconds, printed and kept in
    ``report``, with the target met or not."""
    report["ratio"] = ess_per_second / peer_ess_per_second
    report["cpu_ratio"] = ess_per_cpu_second / peer_ess_per_second
    print(f"ours / brms in processor seconds on both sides: {report['cpu_ratio']:.2f}")
    print(f"ours / brms (bulk ESS per second): {report['ratio']:.2f} (target >= {target:g}: "
          f"{'met' if report['ratio'] >= target else 'NOT met'})")


def ours(draws: int, seed: int) -> dict:
    out, seconds, cpu = timed_phi([str(DATA), "--formula", FORMULA, "--prior", "brms", "--draws", str(draws),
                                   "--tune", "1000", "--chains", "4", "--seed", str(seed)])
    rows = out["random_effects"]
    ess = min(row["ess_bulk"] for row in rows)
    return {"draws": draws, "seconds": seconds, "cpu_seconds": cpu, "ess_bulk_min": ess,
            "ess_per_second": ess / seconds, "ess_per_cpu_second": ess / cpu,
            "r_hat_max": max(row["r_hat"] for row in rows)}


def brms() -> dict:
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "brms.json"
        subprocess.run(["Rscript", str(ROOT / "tests" / "reference" / "brms_slopes.R"), str(out)], check=True,
                       capture_output=True)
        result = json.loads(out.read_text())
    ess = min(result["ess_bulk"].values())
    seconds = result["sampling_seconds"]
    return {"seconds": seconds, "ess_bulk_min": ess, "ess_per_second": ess / seconds,
            "draws": result["settings"]["chains"] * (result["settings"]["iter"] - result["settings"]["warmup"])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", default="1000,4000", help="draws per chain of our runs, comma-separated")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-brms", action="store_true")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    ours(200, args.seed)   # fills numba's cache: later runs load the compiled density
    runs = [ours(int(d), args.seed) for d in args.draws.split(",")]
    for run in runs:
        print(f"bayesrepro phi, 4 x {run['draws']} draws: {run['seconds']:.1f} s whole command, bulk ESS min "
              f"{run['ess_bulk_min']:.0f} (R-hat max {run['r_hat_max']:.4f}): {run['ess_per_second']:.0f} ESS/s; "
              f"{run['cpu_seconds']:.1f} s of processor time, {run['ess_per_cpu_second']:.0f} ESS per processor second")
    report = {"ours": runs}
    if not args.skip_brms:
        peer = brms()
        report["brms"] = peer
        print(f"brms, {peer['draws']} draws: {peer['seconds']:.1f} s sampling alone, bulk ESS min "
              f"{peer['ess_bulk_min']:.0f}: {peer['ess_per_second']:.0f} ESS/s")
        report_ratios(report, max(run["ess_per_second"] for run in runs),
                      max(run["ess_per_cpu_second"] for run in runs), peer["ess_per_second"], TARGET)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
