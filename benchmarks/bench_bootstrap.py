"""The parametric-bootstrap GLRT against one lme4 fit and pbkrtest's PBmodcomp, on the partial grid.

Usage:
    python benchmarks/bench_bootstrap.py [--samples 1000] [--pb-samples 20] [--pb-timeout 1800] [--repeats 1]

Design: kreutzer_marking_partial (56,214 rows), the learning rate as a fixed
effect with seeds nested in it and the other meta-parameters crossed:

    H1  ter ~ learning_rate + (1|sentence_id) + (1|learning_rate:seed) + (1|encoder_dropout)
              + (1|decoder_dropout) + (1|delta_scheme)
    H0  the same with ter ~ 1

Contenders, each a whole command as a user types it (start-up and reading included):
  ours      bayesrepro glrt DATA --h0 H0 --h1 H1 --reference bootstrap --bootstrap-samples N --seed 1 --json
            (both ML fits, then N simulations under H0 with both models refitted; two processes)
  lme4      Rscript benchmarks/lmer_fit.R DATA H1 FACTORS ML: one ML fit of H1
  pbkrtest  Rscript benchmarks/pbmodcomp.R DATA H1 H0 FACTORS M: both ML fits, then PBmodcomp with M
            simulations (each refits both models with lme4); its time for N simulations is
            extrapolated from M, and says so
The target: N = 1,000 replicates in about the time of one lme4 fit.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from bench_frequentist import CACHE, DATASETS, LMER_SCRIPT, bayesrepro_command, last_json_line, run_command

HERE = Path(__file__).resolve().parent
PB_SCRIPT = HERE / "pbmodcomp.R"
DATA = "kreutzer_marking_partial"
CSV = DATASETS / f"{DATA}.csv.gz"
RANDOM = "(1|sentence_id) + (1|learning_rate:seed) + (1|encoder_dropout) + (1|decoder_dropout) + (1|delta_scheme)"
H1 = f"ter ~ learning_rate + {RANDOM}"
H0 = f"ter ~ 1 + {RANDOM}"
FACTORS = "sentence_id,learning_rate,seed,encoder_dropout,decoder_dropout,delta_scheme"


def run_ours(samples: int, repeats: int) -> dict:
    command = [*bayesrepro_command(), "glrt", DATA, "--h0", H0, "--h1", H1, "--reference", "bootstrap",
               "--bootstrap-samples", str(samples), "--seed", "1", "--json"]
    runs = [run_command(command) for _ in range(repeats)]
    results = [last_json_line(r.stdout) for r in runs]
    if any(r is None for r in results):
        return {"status": "failed", "error": next(r.stderr for r, p in zip(runs, results) if p is None)[-400:]}
    return {"status": "ok", "seconds": statistics.median(r.seconds for r in runs),
            "cpu_seconds": statistics.median(r.cpu_seconds for r in runs), "peak_mb": max(r.peak_mb for r in runs),
            "all_seconds": [round(r.seconds, 1) for r in runs], **results[0]}


def run_lme4(timeout: float) -> dict:
    run = run_command(["Rscript", str(LMER_SCRIPT), str(CSV), H1, FACTORS, "ML"], timeout)
    fit = last_json_line(run.stdout)
    if run.status != "ok" or fit is None:
        return {"status": run.status, "seconds": run.seconds, "error": run.stderr.strip()[-400:]}
    return {"status": "ok", "seconds": run.seconds, "cpu_seconds": run.cpu_seconds, **fit}


def run_pbmodcomp(samples: int, timeout: float) -> dict:
    run = run_command(["Rscript", str(PB_SCRIPT), str(CSV), H1, H0, FACTORS, str(samples)], timeout)
    if run.status == "timeout":
        return {"status": "timeout", "seconds": run.seconds, "limit": timeout}
    result = last_json_line(run.stdout)
    if run.status != "ok" or result is None:
        return {"status": "failed", "seconds": run.seconds, "error": run.stderr.strip()[-400:]}
    return {"status": "ok", "seconds": run.seconds, **result}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=1000, help="bootstrap replicates of ours (default 1000)")
    parser.add_argument("--pb-samples", type=int, default=20, help="PBmodcomp simulations actually run (default 20)")
    parser.add_argument("--pb-timeout", type=float, default=1800.0)
    parser.add_argument("--repeats", type=int, default=1, help="runs of our command (median)")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    CACHE.mkdir(exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")
    have_r = shutil.which("Rscript") is not None and subprocess.run(
        ["Rscript", "-e", "library(lme4); library(pbkrtest); library(jsonlite)"], capture_output=True).returncode == 0
    load = os.getloadavg()
    print(f"machine: {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at start")
    print(f"data: {DATA}\n  H1: {H1}\n  H0: {H0}", flush=True)

    ours = run_ours(args.samples, args.repeats)
    if ours["status"] != "ok":
        print(f"ours FAILED: {ours['error']}")
        return 1
    print(f"ours: bayesrepro glrt --reference bootstrap --bootstrap-samples {args.samples}: {ours['seconds']:.1f} s "
          f"wall ({ours['cpu_seconds']:.1f} s cpu, {ours['peak_mb']:.0f} MB); chi2 = {ours['chi2']:.3f}, "
          f"bootstrap p = {ours['p']:.4f} (Monte-Carlo SE {ours['mc_se']:.4f}), chi2 p = {ours['p_asymptotic']:.3g}, "
          f"{ours['unconverged']} refits failing the convergence test", flush=True)
    lme4 = run_lme4(args.pb_timeout) if have_r else {"status": "skipped"}
    if lme4["status"] == "ok":
        print(f"lme4 {lme4['lme4']}: one ML fit of H1, {lme4['seconds']:.1f} s wall (lmer alone "
              f"{lme4['fit_seconds']:.1f} s, read.csv {lme4['read_seconds']:.1f} s)"
              + (f"; lme4 warned: {'; '.join(lme4['warnings'])}" if lme4["warnings"] else ""), flush=True)
    else:
        print(f"lme4: {lme4['status']} {lme4.get('error', '')}", flush=True)
    pb = run_pbmodcomp(args.pb_samples, args.pb_timeout) if have_r else {"status": "skipped"}
    if pb["status"] == "ok":
        per = pb["pb_seconds"] / pb["nsim"]
        pb["extrapolated_seconds"] = pb["read_seconds"] + pb["fit_seconds"] + per * args.samples
        print(f"pbkrtest {pb['pbkrtest']} PBmodcomp: {pb['nsim']} simulations in {pb['pb_seconds']:.0f} s "
              f"({per:.1f} s each) after both fits ({pb['fit_seconds']:.1f} s); LRT {pb['lrt']:.3f}, p = {pb['p']:.3f}; "
              f"{args.samples} simulations would take about {pb['extrapolated_seconds']:.0f} s (extrapolated)",
              flush=True)
    else:
        print(f"pbkrtest PBmodcomp: {pb['status']} {pb.get('error', '')}", flush=True)

    print()
    load = os.getloadavg()
    print(f"Whole commands, wall seconds; load average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"  ours, {args.samples}-replicate bootstrap GLRT : {ours['seconds']:8.1f}")
    if lme4["status"] == "ok":
        print(f"  lme4, one ML fit of H1                 : {lme4['seconds']:8.1f}   "
              f"ours / one lme4 fit = {ours['seconds'] / lme4['seconds']:.2f}")
    if pb["status"] == "ok":
        print(f"  pbkrtest PBmodcomp, {args.samples} simulations : {pb['extrapolated_seconds']:8.0f}*  "
              f"PBmodcomp / ours = {pb['extrapolated_seconds'] / ours['seconds']:.0f}x")
        print(f"  * extrapolated from {pb['nsim']} simulations")
    if args.json_out:
        args.json_out.write_text(json.dumps({"ours": ours, "lme4": lme4, "pbmodcomp": pb}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
