"""Crowd-annotation designs (issue 24): thousands of raters, each scoring a few items, against lme4.

    python benchmarks/bench_crowd.py                          # every design, lme4 limited to 600 s each
    python benchmarks/bench_crowd.py --designs skewed,million --lme4-timeout 300 --json-out crowd.json
    python benchmarks/bench_crowd.py --designs skewed --phi   # also `bayesrepro phi` on the skewed design

Designs (``bayesrepro.simulate.simulate_crowd``, seeded; item SD 1, rater SD
0.5, residual SD 1; every item scored by at least two distinct raters; rater
activity uniform or skewed, the rater of rank r drawn with probability ∝ 1/r),
written once as CSV to benchmarks/.cache/:

- ``skewed``:  40,000 rows, 20,000 items × 8,000 raters, skewed activity
- ``uniform``: the same size, uniform activity
- ``binary``:  the skewed design with 0/1 scores (logit model, no residual)
- ``million``: 1,000,000 rows, 200,000 items × 20,000 raters, skewed

For each, in one run and under /usr/bin/time -v (wall seconds, CPU seconds, peak
resident memory): ``bayesrepro vca DATA --formula F --json --progress`` and
lme4's whole script (``Rscript benchmarks/lmer_fit.R`` or ``glmer_fit.R``: read.csv,
factors, fit), lme4 killed at ``--lme4-timeout`` seconds and skipped when Rscript
is absent. Printed: times, peak memory, the ratio lme4/ours, the method our
command chose (``reml``, ``moments``) and the SDs next to the simulation's truth
and to lme4's. With ``--phi`` the skewed design is also run through
``bayesrepro phi`` (default settings, limited to ``--phi-timeout`` seconds).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from bench_frequentist import CACHE, HERE, bayesrepro_command, last_json_line, run_command

REPO = HERE.parent
sys.path.insert(0, str(REPO))
from bayesrepro.simulate import simulate_crowd  # noqa: E402

FORMULA = "score ~ 1 + (1|item) + (1|rater)"
TRUTH = {"item": 1.0, "rater": 0.5, "Residual": 1.0}


@dataclass(frozen=True)
class Design:
    name: str
    rows: int
    items: int
    raters: int
    skew: float
    binary: bool = False
    seed: int = 24

    def path(self) -> Path:
        path = CACHE / f"crowd_{self.name}_{self.rows}_{self.items}x{self.raters}_{self.seed}.csv"
        if not path.exists():
            CACHE.mkdir(exist_ok=True)
            table, _ = simulate_crowd(self.rows, self.items, self.raters, skew=self.skew, binary=self.binary,
                                      item_sd=TRUTH["item"], rater_sd=TRUTH["rater"],
                                      residual_sd=TRUTH["Residual"], random_state=self.seed)
            table.to_csv(path, index=False)
        return path


DESIGNS = {d.name: d for d in [
    Design("skewed", 40_000, 20_000, 8_000, 1.0),
    Design("uniform", 40_000, 20_000, 8_000, 0.0),
    Design("binary", 40_000, 20_000, 8_000, 1.0, binary=True),
    Design("million", 1_000_000, 200_000, 20_000, 1.0),
]}


def run_ours(design: Design, command: str, timeout: float, *extra: str) -> dict:
    args = [*bayesrepro_command(), command, str(design.path()), "--formula", FORMULA, "--json", "--progress", *extra]
    run = run_command(args, timeout)
    result = {"status": run.status, "seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "peak_mb": run.peak_mb,
              "stderr": [line for line in run.stderr.splitlines() if line.startswith("bayesrepro:")][-3:]}
    payload = last_json_line(run.stdout) if run.status == "ok" else None
    if payload and command == "vca":
        result["method"] = payload["method"]
        result["sd"] = {c["name"]: c["variance"] ** 0.5 for c in payload["components"]}
        if "variance_se" in payload:
            result["variance_se"] = payload["variance_se"]
    elif payload:
        result["summary"] = {key: payload[key] for key in ("phi", "components", "diagnostics", "backend")}
    return result


def run_lme4(design: Design, timeout: float) -> dict:
    if shutil.which("Rscript") is None:
        return {"status": "skipped (no Rscript)"}
    script = HERE / ("glmer_fit.R" if design.binary else "lmer_fit.R")
    run = run_command(["Rscript", str(script), str(design.path()), FORMULA, "item,rater"], timeout)
    result = {"status": run.status, "seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "peak_mb": run.peak_mb,
              "limit": timeout}
    payload = last_json_line(run.stdout) if run.status == "ok" else None
    if payload:
        result["sd"] = {name: value ** 0.5 for name, value in payload["variances"].items()}
        result["loglik"] = payload.get("loglik")
    return result


def accuracy(sd: dict, reference: dict) -> dict:
    return {name: sd[name] / reference[name] - 1.0 for name in reference if name in sd and reference[name]}


def show(name: str, ours: dict, lme4: dict, binary: bool) -> None:
    def cell(result):
        if result.get("status") != "ok":
            limit = result.get("limit")
            return f"{result.get('status')}{f' (> {limit:.0f} s)' if result.get('status') == 'timeout' else ''}"
        return f"{result['seconds']:7.1f} s {result['cpu_seconds']:7.1f} cpu-s {result['peak_mb']:7.0f} MB"

    print(f"\n{name}")
    print(f"  ours  ({ours.get('method', '-')}): {cell(ours)}")
    print(f"  lme4: {cell(lme4)}")
    if ours.get("status") == "ok" and lme4.get("status") == "ok":
        print(f"  lme4/ours wall {lme4['seconds'] / ours['seconds']:.2f}x, cpu {lme4['cpu_seconds'] / ours['cpu_seconds']:.2f}x")
    elif ours.get("status") == "ok" and lme4.get("status") == "timeout":
        print(f"  lme4/ours wall > {lme4['seconds'] / ours['seconds']:.1f}x")
    if "sd" in ours:
        truth = {k: v for k, v in TRUTH.items() if not (binary and k == "Residual")}
        print("  SDs ours: " + ", ".join(f"{k} {v:.4f}" for k, v in ours["sd"].items()))
        print("  relative to truth: " + ", ".join(f"{k} {v:+.2%}" for k, v in accuracy(ours["sd"], truth).items()))
        if "sd" in lme4:
            print("  SDs lme4: " + ", ".join(f"{k} {v:.4f}" for k, v in lme4["sd"].items()))
            print("  ours relative to lme4: "
                  + ", ".join(f"{k} {v:+.2e}" for k, v in accuracy(ours["sd"], lme4["sd"]).items()))
    for line in ours.get("stderr", []):
        print(f"  {line}")


def run_phi(timeout: float, lme4: dict, design: str = "skewed", *extra: str) -> dict:
    """``bayesrepro phi`` with 90 % intervals (``extra``: further options); do they cover lme4's estimates?"""
    phi = run_ours(DESIGNS[design], "phi", timeout, "--prob", "0.9", *extra)
    phi["limit"] = timeout
    peak = phi.get("peak_mb") or float("nan")
    print(f"\nphi on {design} {' '.join(extra)}: {phi['status']} {phi['seconds']:.1f} s, "
          f"{phi.get('cpu_seconds') or float('nan'):.1f} cpu-s, "
          f"peak {peak:.0f} MB")
    summary = phi.get("summary")
    if summary:
        print(f"  backend {summary['backend']}; diagnostics: {summary['diagnostics']}")
        for row in summary["components"]:
            reference = lme4.get("sd", {}).get(row["name"])
            covered = "" if reference is None else \
                f"; lme4 {reference ** 2:.4f} {'inside' if row['low'] <= reference ** 2 <= row['high'] else 'OUTSIDE'}"
            print(f"  {row['name']}: median {row['median']:.4f}, 90 % [{row['low']:.4f}, {row['high']:.4f}]{covered}")
    for line in phi.get("stderr", []):
        print(f"  {line}")
    return phi


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", default=",".join(DESIGNS), help=f"comma-separated, from {', '.join(DESIGNS)}")
    parser.add_argument("--lme4-timeout", type=float, default=600.0)
    parser.add_argument("--ours-timeout", type=float, default=900.0)
    parser.add_argument("--phi", action="store_true", help="also run bayesrepro phi on the skewed design")
    parser.add_argument("--phi-binary", action="store_true",
                        help="also run bayesrepro phi --chains 2 --draws 500 on the binary design (target: 120 s)")
    parser.add_argument("--phi-timeout", type=float, default=600.0)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    results = {}
    for name in [n.strip() for n in args.designs.split(",") if n.strip()]:
        design = DESIGNS[name]
        ours = run_ours(design, "vca", args.ours_timeout)
        lme4 = run_lme4(design, args.lme4_timeout)
        show(name, ours, lme4, design.binary)
        results[name] = {"ours": ours, "lme4": lme4, "rows": design.rows, "items": design.items,
                         "raters": design.raters, "skew": design.skew, "binary": design.binary}
    if args.phi:
        results["phi_skewed"] = run_phi(args.phi_timeout, results.get("skewed", {}).get("lme4", {}))
    if args.phi_binary:
        results["phi_binary"] = run_phi(args.phi_timeout, results.get("binary", {}).get("lme4", {}), "binary",
                                        "--chains", "2", "--draws", "500")
        if results["phi_binary"].get("status") == "ok":
            print(f"  target 120 s: {'MET' if results['phi_binary']['seconds'] <= 120 else 'NOT MET'}")
    if args.json_out:
        args.json_out.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
