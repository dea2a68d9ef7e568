"""A crossed maximal design of 100,000 rows (issue 22) by REML against lme4.

    python benchmarks/bench_slopes.py                       # ours and lme4, lme4 limited to 900 s
    python benchmarks/bench_slopes.py --lme4-timeout 300 --json-out slopes.json

Data (simulated here, seeded, written once as CSV to benchmarks/.cache/): 500
subjects × 200 items, every pair observed once, a condition ``c`` = ±0.5 that
varies within subjects and within items (counterbalanced), and the model
``y ~ c + (1 + c | subject) + (1 + c | item)`` with subject SDs 1 and 0.5
(correlation 0.3), item SDs 0.8 and 0.4 (correlation −0.2), residual SD 1.

In one run, under /usr/bin/time -v (wall seconds, CPU seconds, peak memory):
our whole command ``bayesrepro vca DATA --formula F --json``, and lme4's
whole script (``Rscript benchmarks/lmer_fit.R``: read.csv, factors, lmer by
REML), killed at ``--lme4-timeout``. Also our fit alone (the model frame and
the REML fit after the data are read, in a fresh process) against lmer's own
time, as the script reports it. Printed: both times, the ratios lme4/ours,
the number of criterion evaluations our fit took, and both REML criteria with
their relative difference, which must be within 1e-6 (exit status 1 if not).

``--design sparse`` takes issue 31's design instead: 400 subjects × 500 items, each
cell observed with probability 1/2 (about 100,000 rows), ``c`` = ±0.5 drawn per
row (not counterbalanced), the same SDs, response ``rt``. Our command is then also
timed without ``--json`` (no Satterthwaite degrees of freedom), so the cost of the
degrees of freedom is printed beside the ratio to lme4.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from bench_frequentist import CACHE, HERE, bayesrepro_command, last_json_line, run_command

REPO = HERE.parent
FORMULA = "y ~ c + (1 + c | subject) + (1 + c | item)"
SUBJECTS, ITEMS, SEED = 500, 200, 22
SPARSE_FORMULA = "rt ~ c + (1 + c | subject) + (1 + c | item)"
SPARSE_SUBJECTS, SPARSE_ITEMS, SPARSE_SEED = 400, 500, 31
CRITERION_TOLERANCE = 1e-6
# The fit alone in a fresh process: the model frame from the read table, the REML fit, and how many times the
# criterion was evaluated (counted on the objective's class, so nothing in the fit changes).
FIT_ALONE = """
import json, sys, time
from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame, parse_formula
from bayesrepro.frequentist import sparse_deviance
from bayesrepro.frequentist.lmm import fit_model_frame
counts = {"solve": 0}
solve = sparse_deviance.SparseProfiledDeviance.solve
def counted(self, theta, *args, **kwargs):
    counts["solve"] += 1
    return solve(self, theta, *args, **kwargs)
sparse_deviance.SparseProfiledDeviance.solve = counted
data = read_table(sys.argv[1], categorical=["subject", "item"])
start = time.perf_counter()
fit = fit_model_frame(build_model_frame(parse_formula(sys.argv[2], slopes=True), data), "reml")
print(json.dumps({"fit_seconds": time.perf_counter() - start, "evaluations": counts["solve"],
                  "reml_criterion": fit.criterion, "converged": fit.converged}))
"""


def data_path() -> Path:
    path = CACHE / f"crossed_maximal_{SUBJECTS}x{ITEMS}_{SEED}.csv"
    if path.exists():
        return path
    rng = np.random.default_rng(SEED)
    subject, item = (a.ravel() for a in np.meshgrid(np.arange(SUBJECTS), np.arange(ITEMS), indexing="ij"))
    c = np.where((subject + item) % 2 == 0, -0.5, 0.5)
    subject_effects = _correlated(rng, SUBJECTS, 1.0, 0.5, 0.3)
    item_effects = _correlated(rng, ITEMS, 0.8, 0.4, -0.2)
    y = (0.3 + 0.2 * c + subject_effects[subject, 0] + subject_effects[subject, 1] * c
         + item_effects[item, 0] + item_effects[item, 1] * c + rng.normal(size=len(c)))
    CACHE.mkdir(exist_ok=True)
    pd.DataFrame({"subject": [f"s{s}" for s in subject], "item": [f"i{i}" for i in item], "c": c, "y": y}) \
        .to_csv(path, index=False)
    return path


def sparse_data_path() -> Path:
    """Issue 31's design: about half of the subject × item cells observed at random, c = ±0.5 drawn per row."""
    path = CACHE / f"crossed_sparse_{SPARSE_SUBJECTS}x{SPARSE_ITEMS}_{SPARSE_SEED}.csv"
    if path.exists():
        return path
    rng = np.random.default_rng(SPARSE_SEED)
    subject, item = np.nonzero(rng.random((SPARSE_SUBJECTS, SPARSE_ITEMS)) < 0.5)
    c = rng.choice([-0.5, 0.5], size=len(subject))
    subject_effects = _correlated(rng, SPARSE_SUBJECTS, 1.0, 0.5, 0.3)
    item_effects = _correlated(rng, SPARSE_ITEMS, 0.8, 0.4, -0.2)
    rt = (0.3 + 0.2 * c + subject_effects[subject, 0] + subject_effects[subject, 1] * c
          + item_effects[item, 0] + item_effects[item, 1] * c + rng.normal(size=len(c)))
    CACHE.mkdir(exist_ok=True)
    pd.DataFrame({"subject": [f"s{s}" for s in subject], "item": [f"i{i}" for i in item], "c": c, "rt": rt}) \
        .to_csv(path, index=False)
    return path


def _correlated(rng, levels: int, sd_intercept: float, sd_slope: float, correlation: float) -> np.ndarray:
    covariance = np.array([[sd_intercept ** 2, correlation * sd_intercept * sd_slope],
                           [correlation * sd_intercept * sd_slope, sd_slope ** 2]])
    return rng.multivariate_normal(np.zeros(2), covariance, size=levels)


def run_ours(path: Path, timeout: float, formula: str = FORMULA, without_json: bool = False) -> dict:
    run = run_command([*bayesrepro_command(), "vca", str(path), "--formula", formula, "--json"], timeout)
    payload = last_json_line(run.stdout) if run.status == "ok" else None
    result = {"status": run.status, "seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "peak_mb": run.peak_mb}
    if payload:
        result["reml_criterion"] = payload["reml_criterion"]
        result["converged"] = payload["converged"]
    else:
        result["error"] = run.stderr.strip()[-400:]
    if without_json:
        plain = run_command([*bayesrepro_command(), "vca", str(path), "--formula", formula], timeout)
        result["without_json"] = {"status": plain.status, "seconds": plain.seconds, "cpu_seconds": plain.cpu_seconds,
                                  "peak_mb": plain.peak_mb}
    alone = subprocess.run([sys.executable, "-c", FIT_ALONE, str(path), formula], capture_output=True, text=True,
                           cwd=REPO, timeout=timeout)
    result["fit_alone"] = last_json_line(alone.stdout) or {"error": alone.stderr.strip()[-400:]}
    return result


def run_lme4(path: Path, timeout: float, formula: str = FORMULA) -> dict:
    if shutil.which("Rscript") is None:
        return {"status": "skipped (no Rscript)"}
    run = run_command(["Rscript", str(HERE / "lmer_fit.R"), str(path), formula, "subject,item"], timeout)
    result = {"status": run.status, "seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "peak_mb": run.peak_mb,
              "limit": timeout}
    payload = last_json_line(run.stdout) if run.status == "ok" else None
    if payload:
        result.update(reml_criterion=payload["reml_criterion"], fit_seconds=payload["fit_seconds"],
                      warnings=payload["warnings"])
    return result


def show(ours: dict, lme4: dict, formula: str = FORMULA, design: str = "") -> bool:
    """Print the comparison; whether the two REML criteria agree (True when lme4 gave none to compare)."""
    def cell(result):
        if result.get("status") != "ok":
            return str(result.get("status"))
        return f"{result['seconds']:7.1f} s {result['cpu_seconds']:7.1f} cpu-s {result['peak_mb']:7.0f} MB"

    alone = ours.get("fit_alone", {})
    print(f"{formula}: {design}")
    print(f"  ours  whole command: {cell(ours)}")
    plain = ours.get("without_json")
    if plain and plain.get("status") == "ok":
        print(f"  ours  without --json: {cell(plain)} (the degrees of freedom: "
              f"{ours['seconds'] - plain['seconds']:+.1f} s)")
    print(f"  lme4  whole script:  {cell(lme4)}")
    if ours.get("status") == "ok" and lme4.get("status") == "ok":
        print(f"  lme4/ours whole: wall {lme4['seconds'] / ours['seconds']:.2f}x, "
              f"cpu {lme4['cpu_seconds'] / ours['cpu_seconds']:.2f}x")
    elif ours.get("status") == "ok" and lme4.get("status") == "timeout":
        print(f"  lme4/ours whole: wall > {lme4['seconds'] / ours['seconds']:.1f}x (lme4 stopped)")
    if "fit_seconds" in alone:
        print(f"  ours fit alone: {alone['fit_seconds']:.2f} s, {alone['evaluations']} evaluations of the criterion")
        if "fit_seconds" in lme4:
            print(f"  lmer alone: {lme4['fit_seconds']:.2f} s; lmer/ours fit {lme4['fit_seconds'] / alone['fit_seconds']:.2f}x")
    else:
        print(f"  ours fit alone failed: {alone.get('error')}")
    agree = True
    # the fit alone's criterion in full precision (the command's JSON rounds it)
    criterion = alone.get("reml_criterion", ours.get("reml_criterion"))
    if criterion is not None and "reml_criterion" in lme4:
        relative = (criterion - lme4["reml_criterion"]) / abs(lme4["reml_criterion"])
        agree = abs(relative) <= CRITERION_TOLERANCE
        print(f"  REML criterion ours {criterion:.8f} (command {ours.get('reml_criterion')}), "
              f"lme4 {lme4['reml_criterion']:.8f}, relative {relative:+.2e} "
              f"({'within' if agree else 'OUTSIDE'} {CRITERION_TOLERANCE:g})")
    if lme4.get("warnings"):
        print(f"  lme4 warnings: {lme4['warnings']}")
    return agree


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lme4-timeout", type=float, default=900.0)
    parser.add_argument("--ours-timeout", type=float, default=900.0)
    parser.add_argument("--skip-lme4", action="store_true")
    parser.add_argument("--design", choices=("balanced", "sparse"), default="balanced",
                        help="balanced: 500 x 200 counterbalanced; sparse: issue 31's 400 x 500, half the cells")
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    if args.design == "sparse":
        path, formula = sparse_data_path(), SPARSE_FORMULA
        design = f"{SPARSE_SUBJECTS} subjects x {SPARSE_ITEMS} items, half the cells observed, c drawn per row"
    else:
        path, formula = data_path(), FORMULA
        design = f"{SUBJECTS * ITEMS:,} rows, {SUBJECTS} subjects x {ITEMS} items"
    print(f"load average before the run: {os.getloadavg()[0]:.1f}")
    ours = run_ours(path, args.ours_timeout, formula, without_json=args.design == "sparse")
    lme4 = {"status": "skipped"} if args.skip_lme4 else run_lme4(path, args.lme4_timeout, formula)
    agree = show(ours, lme4, formula, design)
    if args.json_out:
        args.json_out.write_text(json.dumps({"ours": ours, "lme4": lme4}, indent=1))
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
