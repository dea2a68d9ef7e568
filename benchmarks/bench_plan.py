"""Whole-command benchmark of `bayesrepro plan`: a 6,000-row Gaussian pilot, 3 planned sizes × 500 simulations.

Usage:
    python benchmarks/bench_plan.py [--simulations 500] [--sizes 100,400,1600] [--workers 2]
        [--peer-simulations 20] [--skip-peer]

The pilot (written once to benchmarks/.cache/) has 1,000 items crossed with
systems A and B and three seeds nested in each system, one score per cell,
drawn from score = 0.4 + 0.02 [B] + item + system:seed + residual with SDs
0.25, 0.02 and 0.12. Ours is the command a user runs, start-up included:

    bayesrepro plan PILOT --formula 'score ~ system + (1|item) + (1|system:seed)' --contrast system=B-A
        --effect 0.02 --vary item=100,400,1600 --vary seed=3 --simulations 500 --workers 2 --test wald --json

(the Wald z test, as the lme4 peer computes it; the default test of three
seeds per system would be Kenward-Roger's).

The peer is the simr-style loop in lme4 (benchmarks/plan_lme4.R): lmer on the
pilot, simulate() in each planned design, refit() and the Wald z of systemB,
run with --peer-simulations per size and its time per refit extrapolated to
the same number of simulations (printed as such). The script prints the
machine's load average first: other jobs on the machine slow both sides.
The simulated powers are printed next to the closed form of the same test
(``plan.planned_test``: the REML estimate of the seed variance integrated
over, zero included) and lme4's. The last line is the figure to record in
benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = HERE / ".cache"
PILOT = CACHE / "plan_pilot_1000x2x3.csv"
FORMULA = "score ~ system + (1|item) + (1|system:seed)"
EFFECT = 0.02


def write_pilot() -> Path:
    if PILOT.exists():
        return PILOT
    CACHE.mkdir(exist_ok=True)
    rng = np.random.default_rng(20240614)
    rows = pd.DataFrame(list(itertools.product(["A", "B"], [f"i{i:05d}" for i in range(1000)], [f"s{j:02d}" for j in range(3)])),
                        columns=["system", "item", "seed"])
    b = (rows.system == "B").to_numpy().astype(int)
    item = rows.item.str[1:].astype(int).to_numpy()
    seed = b * 3 + rows.seed.str[1:].astype(int).to_numpy()
    rows["score"] = (0.4 + EFFECT * b + rng.normal(0, 0.25, 1000)[item] + rng.normal(0, 0.02, 6)[seed]
                     + rng.normal(0, 0.12, len(rows)))
    rows.to_csv(PILOT, index=False)
    return PILOT


def run_ours(pilot: Path, sizes: str, simulations: int, workers: int) -> tuple[float, dict]:
    command = [sys.executable, "-m", "bayesrepro", "plan", str(pilot), "--formula", FORMULA, "--contrast", "system=B-A",
               "--effect", str(EFFECT), "--vary", f"item={sizes}", "--vary", "seed=3", "--simulations", str(simulations),
               "--workers", str(workers), "--test", "wald", "--json"]
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO,
                         env={**os.environ, "PYTHONPATH": str(REPO)})
    return time.perf_counter() - start, json.loads(out.stdout)


def run_lme4(pilot: Path, sizes: str, simulations: int) -> tuple[float, dict]:
    command = ["Rscript", str(HERE / "plan_lme4.R"), str(pilot), str(EFFECT), sizes, "3", str(simulations), "1"]
    start = time.perf_counter()
    out = subprocess.run(command, capture_output=True, text=True, check=True, cwd=REPO)
    return time.perf_counter() - start, json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--simulations", type=int, default=500)
    parser.add_argument("--sizes", default="100,400,1600")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--peer-simulations", type=int, default=20)
    parser.add_argument("--skip-peer", action="store_true")
    args = parser.parse_args()
    pilot = write_pilot()
    print(f"load average before the run: {', '.join(f'{v:.2f}' for v in os.getloadavg())} on {os.cpu_count()} cores")
    seconds, payload = run_ours(pilot, args.sizes, args.simulations, args.workers)
    n_sizes = len(args.sizes.split(","))
    print(f"bayesrepro plan: {n_sizes} sizes x {args.simulations} simulations in {seconds:.1f} s "
          f"({args.workers} workers, whole command), target < 60 s")
    peer = None
    if not args.skip_peer and shutil.which("Rscript"):
        peer_seconds, peer = run_lme4(pilot, args.sizes, args.peer_simulations)
        per_refit = sum(r["seconds"] for r in peer["rows"]) / (n_sizes * args.peer_simulations)
        extrapolated = peer["fit_seconds"] + per_refit * n_sizes * args.simulations
        print(f"lme4 simulate + refit: {per_refit * 1000:.0f} ms per refit ({args.peer_simulations} per size, "
              f"{peer_seconds:.1f} s whole command); extrapolated to {n_sizes} x {args.simulations}: {extrapolated:.0f} s "
              f"on one core; ratio lme4 (one core) / ours ({args.workers} workers): {extrapolated / seconds:.1f}")
    print(f"{'item':>6} {'power':>7} {'mc_se':>7} {'closed form':>12} {'difference':>11} {'df':>5} {'lme4 power':>11}")
    for k, row in enumerate(payload["rows"]):
        theirs = f"{peer['rows'][k]['power']:.3f}" if peer else "-"
        print(f"{row['item']:>6} {row['power']:>7.3f} {row['mc_se']:>7.3f} {row['power_closed_form']:>12.3f} "
              f"{row['power'] - row['power_closed_form']:>+11.3f} {row['df']:>5.1f} {theirs:>11}")
    print("assumed components (REML of the pilot): "
          + ", ".join(f"{c['name']} {c['variance']:.4g}" for c in payload["assumed"]["components"]))
    largest = max(abs(row["power"] - row["power_closed_form"]) for row in payload["rows"])
    print(f"RECORD: bench_plan {n_sizes} sizes x {args.simulations} simulations, {args.workers} workers: "
          f"{seconds:.1f} s whole command (target < 60 s); largest |simulated - closed form| {largest:.3f}; "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
