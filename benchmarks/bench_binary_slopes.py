"""Whole-command benchmark of binary GLMMs with random slopes against lme4's glmer, on the test data.

Usage:
    python benchmarks/bench_binary_slopes.py [--repeats 1] [--lme4-timeout 1800] [--json-out FILE]

Two designs of tests/data (``tests/reference/glmer_slopes.R`` writes the second):

  verbagg   lme4's VerbAgg, 7,584 rows: r2 ~ Anger + Gender + btype + (1 + Anger|item) + (1|id)
  crossed   60 subjects x 40 items x 2 conditions less 15%, 4,080 rows: y ~ c + (1 + c|subject) + (1 + c|item)

Both contenders fit each model by ML with the Laplace approximation, timed as a user runs them, start-up and
reading the CSV included, in the same run:

  ours   bayesrepro vca DATA --formula F --family bernoulli --object item --json   (median of --repeats)
  lme4   Rscript benchmarks/glmer_fit.R DATA F FACTORS   (read.csv, factors, glmer's defaults, once)

It prints wall and CPU seconds, peak memory, the ratio lme4/ours and the difference of the log-likelihoods (ours minus
glmer's). No target is asserted.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from bench_binary import print_runs
from bench_frequentist import CACHE, HERE, bayesrepro_command, last_json_line, repeated_json, run_command

DATA = HERE.parent / "tests" / "data"
GLMER_SCRIPT = HERE / "glmer_fit.R"
DESIGNS = {
    "verbagg": (DATA / "verbagg.csv.gz", "r2 ~ Anger + Gender + btype + (1 + Anger | item) + (1 | id)",
                ["id", "item", "Gender", "btype"]),
    "crossed": (DATA / "binary_crossed.csv.gz", "y ~ c + (1 + c | subject) + (1 + c | item)", ["subject", "item"]),
}


def run_ours(path, formula: str, repeats: int) -> dict:
    summary, fit = repeated_json([*bayesrepro_command(), "vca", str(path), "--formula", formula, "--family",
                                  "bernoulli", "--object", "item", "--json"], repeats)
    return summary if fit is None else {**summary, "loglik": fit["loglik"], "converged": fit["converged"]}


def run_glmer(path, formula: str, factors: list[str], timeout: float) -> dict:
    run = run_command(["Rscript", str(GLMER_SCRIPT), str(path), formula, ",".join(factors)], timeout)
    fit = last_json_line(run.stdout)
    if run.status != "ok" or fit is None:
        return {"status": run.status, "seconds": run.seconds, "error": run.stderr.strip()[-400:]}
    return {"status": "ok", "seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "peak_mb": run.peak_mb,
            "loglik": fit["loglik"],
            "fit_seconds": fit["fit_seconds"], "warnings": fit["warnings"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--lme4-timeout", type=float, default=1800.0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    CACHE.mkdir(exist_ok=True)   # run_command's timing files
    results = {}
    for name, (path, formula, factors) in DESIGNS.items():
        ours, lme4 = run_ours(path, formula, args.repeats), run_glmer(path, formula, factors, args.lme4_timeout)
        results[name] = {"ours": ours, "lme4": lme4}
        print(f"{name}: {formula}")
        print_runs(ours, lme4)
        if ours["status"] == lme4["status"] == "ok":
            print(f"  ratio lme4/ours: {lme4['seconds'] / ours['seconds']:.2f}x wall, "
                  f"{lme4['cpu_seconds'] / ours['cpu_seconds']:.2f}x CPU (glmer alone: {lme4['fit_seconds']:.1f} s); "
                  f"log-likelihood ours {ours['loglik']:.6f} - glmer {lme4['loglik']:.6f} = "
                  f"{ours['loglik'] - lme4['loglik']:+.2e}")
            if lme4["warnings"]:
                print(f"  glmer warnings: {'; '.join(lme4['warnings'])}")
        sys.stdout.flush()
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
