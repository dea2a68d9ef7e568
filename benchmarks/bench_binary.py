"""Whole-command benchmark of the binary GLMM against lme4's glmer on a simulated 0/1 benchmark grid.

Usage:
    python benchmarks/bench_binary.py [--items 2000] [--repeats 3] [--lme4-timeout 1800] [--json-out FILE]

The grid: every one of ``--items`` test items (default 2,000) answered by 3
systems × 5 seeds per system × 4 prompt templates, 0/1 scores from the logit
model of ``bayesrepro.simulate.binary_grid`` (item SD 1.5, seed SD 0.2,
prompt SD 0.3; 120,000 rows by default), written once to benchmarks/.cache/.
Both contenders fit ``correct ~ system + (1|item) + (1|system:seed) + (1|prompt)``
by ML with the Laplace approximation, timed as a user runs them, start-up
and reading the CSV included, in the same run:

  ours   bayesrepro vca DATA --formula F --family bernoulli --json     (median of --repeats)
  lme4   Rscript benchmarks/glmer_fit.R DATA F FACTORS  (read.csv, factors, glmer(binomial), once)

It prints wall and CPU seconds, peak memory, the ratios lme4/ours, the
largest relative difference of the variance components and the difference
of the log-likelihoods (ours minus glmer's). Targets: at least 20× faster,
components within 1e-2 relative.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

from bench_frequentist import CACHE, HERE, bayesrepro_command, last_json_line, run_command

FORMULA = "correct ~ system + (1|item) + (1|system:seed) + (1|prompt)"
FACTORS = ["item", "system", "seed", "prompt"]
GLMER_SCRIPT = HERE / "glmer_fit.R"
SIMULATION_SEED = 20240613


def grid_file(items: int) -> Path:
    path = CACHE / f"binary_grid_{items}x3x5x4_{SIMULATION_SEED}.csv"
    if not path.exists():
        from bayesrepro.simulate import binary_grid

        CACHE.mkdir(exist_ok=True)
        binary_grid(items=items, seeds=5, prompts=4, random_state=SIMULATION_SEED).to_csv(path, index=False)
    return path


def run_ours(path: Path, repeats: int) -> dict:
    command = [*bayesrepro_command(), "vca", str(path), "--formula", FORMULA, "--family", "bernoulli", "--json"]
    runs = [run_command(command) for _ in range(repeats)]
    parsed = [last_json_line(run.stdout) for run in runs]
    if any(p is None for p in parsed):
        return {"status": "failed", "error": next(r.stderr for r, p in zip(runs, parsed) if p is None)[-400:]}
    fit = parsed[0]
    return {"status": "ok", "seconds": statistics.median(r.seconds for r in runs),
            "all_seconds": [round(r.seconds, 2) for r in runs],
            "cpu_seconds": statistics.median(r.cpu_seconds for r in runs), "peak_mb": max(r.peak_mb for r in runs),
            "variances": {c["name"]: c["variance"] for c in fit["components"] if c["name"] != "Residual"},
            "loglik": fit["loglik"], "converged": fit["converged"], "n_obs": fit["n_obs"]}


def run_glmer(path: Path, timeout: float) -> dict:
    run = run_command(["Rscript", str(GLMER_SCRIPT), str(path), FORMULA, ",".join(FACTORS)], timeout)
    fit = last_json_line(run.stdout)
    if run.status != "ok" or fit is None:
        return {"status": run.status, "seconds": run.seconds, "error": run.stderr.strip()[-400:]}
    return {"status": "ok", "seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "peak_mb": run.peak_mb,
            "variances": fit["variances"], "loglik": fit["loglik"], "fit_seconds": fit["fit_seconds"],
            "read_seconds": fit["read_seconds"], "warnings": fit["warnings"], "lme4": fit["lme4"]}


def print_runs(ours: dict, lme4: dict) -> None:
    """One line per contender: wall and CPU seconds and peak memory, or why it has none."""
    for name, result in (("bayesrepro", ours), ("lme4 glmer", lme4)):
        if result["status"] != "ok":
            print(f"  {name:11s} {result['status']}: {result.get('error', '')}")
            continue
        print(f"  {name:11s} {result['seconds']:8.2f} s wall  {result['cpu_seconds']:8.2f} s CPU  "
              f"{result['peak_mb']:7.0f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lme4-timeout", type=float, default=1800.0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    path = grid_file(args.items)
    ours, lme4 = run_ours(path, args.repeats), run_glmer(path, args.lme4_timeout)
    print(f"binary grid: {args.items} items x 3 systems x 5 seeds x 4 prompts ({path.name}); {FORMULA}")
    print_runs(ours, lme4)
    if ours["status"] == lme4["status"] == "ok":
        print(f"  ratio lme4/ours: {lme4['seconds'] / ours['seconds']:.1f}x wall, "
              f"{lme4['cpu_seconds'] / ours['cpu_seconds']:.1f}x CPU (glmer alone: {lme4['fit_seconds']:.1f} s)")
        worst = max(abs(ours["variances"][name] / lme4["variances"][name] - 1) for name in ours["variances"])
        print(f"  largest relative difference of a variance component: {worst:.2e}; "
              f"log-likelihood ours - glmer: {ours['loglik'] - lme4['loglik']:+.2e}")
        for name, value in ours["variances"].items():
            print(f"    {name:12s} ours {value:.6g}  glmer {lme4['variances'][name]:.6g}")
        if lme4["warnings"]:
            print(f"  glmer warnings: {'; '.join(lme4['warnings'])}")
    if args.json_out:
        args.json_out.write_text(json.dumps({"ours": ours, "lme4": lme4, "items": args.items}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
