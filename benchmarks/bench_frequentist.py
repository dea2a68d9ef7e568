"""Whole-command benchmark of the frequentist engine against lme4 and statsmodels.

Usage:
    python benchmarks/bench_frequentist.py [--quick] [--skip-slow-peers]
        [--designs partial,insteval,full,simulated] [--repeats 3]
        [--lme4-timeout 1800] [--statsmodels-timeout 300] [--statsmodels-memory-gb 10]
        [--json-out FILE]

Every figure is the wall time of a command as a user types it, start-up and
data reading included:
  ours         bayesrepro vca DATA --formula F --json
  lme4         Rscript benchmarks/lmer_fit.R DATA F FACTORS  (read.csv, factors, lmer REML)
  statsmodels  a Python process running MixedLM.from_formula with the crossed
               factors as variance components of one all-encompassing group
               (vc_formula, use_sparse=True), fit(reml=True)
Peak memory is the "Maximum resident set size" reported by /usr/bin/time -v.
Ours is run --repeats times (the median is reported), each peer once.
A peer that exceeds its time (or, for statsmodels, memory) limit is killed and
reported as such; its ratio is then a lower bound ("> r").

Designs:
  partial    kreutzer_marking_partial, seven variance components
  insteval   lme4's InstEval: y ~ 1 + service + (1|s) + (1|d) + (1|dept),
             two large crossed factors (2,972 students × 1,128 lectures)
  full       kreutzer_marking_full (337,284 rows), seven variance components
  simulated  1,041 items × 1,536 configurations of six facets (1.6 M rows)
             with known variance components, written once to benchmarks/.cache/

--skip-slow-peers (implied by --quick) does not run lme4 on the full grid but
reuses the elapsed time recorded in tests/reference/lme4_full_grid.json (that
time is lmer alone, without R start-up and reading, so the ratio is
conservative), and skips lme4 on the simulated grid. --quick also runs ours
once and gives statsmodels 60 s.

Before the designs, the start-up of `bayesrepro vca` is checked: its wall time
on a 30-row dataset and, with `python -X importtime`, that it imports no
Bayesian stack (PyMC, PyTensor, Bambi, ArviZ, nutpie) and no matplotlib.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DATASETS = REPO / "bayesrepro" / "datasets"
CACHE = HERE / ".cache"
LMER_SCRIPT = HERE / "lmer_fit.R"
RECORDED_FULL_GRID = REPO / "tests" / "reference" / "lme4_full_grid.json"

GRID_FACTORS = ["sentence_id", "learning_rate", "seed", "encoder_dropout", "decoder_dropout",
                "decoder_dropout_hidden", "delta_scheme"]
GRID = "ter ~ 1 + " + " + ".join(f"(1|{f})" for f in GRID_FACTORS)

# The simulated grid: items crossed with six facets, every cell observed once.
SIM_ITEMS = 1041
SIM_FACETS = {  # name: (levels, true variance)
    "learning_rate": (4, 0.004),
    "seed": (4, 0.0005),
    "encoder_dropout": (4, 0.001),
    "decoder_dropout": (3, 0.0002),
    "delta_scheme": (2, 0.0),
    "batch_size": (4, 0.002),
}
SIM_ITEM_VARIANCE = 0.1
SIM_RESIDUAL_VARIANCE = 0.02
SIM_SEED = 20240611
SIM_FILE = CACHE / f"simulated_grid_{SIM_ITEMS}x{'x'.join(str(v[0]) for v in SIM_FACETS.values())}_{SIM_SEED}.csv.gz"
SIM_FACTORS = ["item", *SIM_FACETS]
SIM_FORMULA = "score ~ 1 + " + " + ".join(f"(1|{f})" for f in SIM_FACTORS)

BAYESIAN_STACK = ("pymc", "pytensor", "bambi", "arviz", "xarray", "nutpie", "numba", "matplotlib", "duckdb", "pyspark")
STARTUP_TARGET = 1.0  # seconds: a model command starts (its --help answers, a tiny file is fitted) within it
# Our fit alone, as lme4's fit_seconds is lmer alone: the model frame, its statistics and the REML fit,
# after the data are read; the median of three fresh frames in one process.
FIT_ALONE = """
import json, statistics, sys, time
from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame
from bayesrepro.frequentist.lmm import fit_model_frame
data = read_table(sys.argv[1], categorical=[c for c in sys.argv[3].split(",") if c])
times = []
for _ in range(3):
    start = time.perf_counter()
    fit_model_frame(build_model_frame(sys.argv[2], data), "reml")
    times.append(time.perf_counter() - start)
print(json.dumps({"fit_seconds": statistics.median(times)}))
"""


@dataclass
class Design:
    key: str
    title: str
    ours_data: str                 # what the user passes to bayesrepro
    csv: Path                      # the same data as a file, for the peers
    formula: str
    factors: list[str]             # columns read as factors
    ours_extra: list[str] = field(default_factory=list)
    statsmodels_fixed: str = ""    # fixed part in patsy syntax
    slow_lme4: bool = False        # skipped (or replaced by a recorded time) with --skip-slow-peers
    truth: dict | None = None      # known variance components (simulated data)
    confounded: tuple[tuple[str, str], ...] = ()  # pairs whose variances are identified only as a sum


def designs() -> dict[str, Design]:
    insteval_factors = ["s", "d", "dept", "service"]
    return {
        "partial": Design("partial", "partial grid, 7 components", "kreutzer_marking_partial",
                          DATASETS / "kreutzer_marking_partial.csv.gz", GRID, GRID_FACTORS,
                          statsmodels_fixed="ter ~ 1",
                          confounded=(("encoder_dropout", "decoder_dropout_hidden"),)),
        "insteval": Design("insteval", "InstEval, 2 large crossed", str(REPO / "tests" / "data" / "insteval.csv.gz"),
                           REPO / "tests" / "data" / "insteval.csv.gz",
                           "y ~ 1 + service + (1|s) + (1|d) + (1|dept)", insteval_factors,
                           ours_extra=["--categorical", ",".join(insteval_factors)],
                           statsmodels_fixed="y ~ 1 + C(service)"),
        "full": Design("full", "full grid, 7 components", "kreutzer_marking_full",
                       DATASETS / "kreutzer_marking_full.csv.gz", GRID, GRID_FACTORS,
                       statsmodels_fixed="ter ~ 1", slow_lme4=True),
        "simulated": Design("simulated", "simulated 1041x1536 grid", str(SIM_FILE), SIM_FILE, SIM_FORMULA,
                            SIM_FACTORS, statsmodels_fixed="score ~ 1", slow_lme4=True,
                            truth={"item": SIM_ITEM_VARIANCE, **{k: v[1] for k, v in SIM_FACETS.items()},
                                   "Residual": SIM_RESIDUAL_VARIANCE}),
    }


# ---------------------------------------------------------------- running commands

@dataclass
class Run:
    status: str                    # "ok", "timeout", "failed"
    seconds: float
    cpu_seconds: float | None = None
    peak_mb: float | None = None
    stdout: str = ""
    stderr: str = ""


def run_command(command: list[str], timeout: float | None = None) -> Run:
    """Run one command under /usr/bin/time -v; kill its whole process group on timeout."""
    with tempfile.NamedTemporaryFile("r", suffix=".time", dir=CACHE, delete=False) as handle:
        time_file = Path(handle.name)
    try:
        start = time.perf_counter()
        process = subprocess.Popen(["/usr/bin/time", "-v", "-o", str(time_file), *command],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=True, cwd=REPO)
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            out, err = process.communicate()
            return Run("timeout", time.perf_counter() - start, stdout=out, stderr=err)
        seconds = time.perf_counter() - start
        usage = time_file.read_text()
    finally:
        time_file.unlink(missing_ok=True)
    cpu = _time_field(usage, "User time (seconds)") + _time_field(usage, "System time (seconds)")
    peak = _time_field(usage, "Maximum resident set size (kbytes)") / 1024.0
    status = "ok" if process.returncode == 0 else "failed"
    return Run(status, seconds, cpu, peak, out, err)


def _time_field(text: str, name: str) -> float:
    match = re.search(re.escape(name) + r":\s*([0-9.]+)", text)
    return float(match.group(1)) if match else float("nan")


def repeated_json(command: list[str], repeats: int) -> tuple[dict, dict | None]:
    """``command`` run ``repeats`` times: the median wall and CPU seconds and the peak memory, and the JSON its
    first run printed (None, and the status "failed" with the error, where a run printed none)."""
    runs = [run_command(command) for _ in range(repeats)]
    parsed = [last_json_line(r.stdout) for r in runs]
    if any(p is None for p in parsed):
        return {"status": "failed", "error": next(r.stderr for r, p in zip(runs, parsed) if p is None)[-400:]}, None
    return {"status": "ok", "seconds": statistics.median(r.seconds for r in runs),
            "cpu_seconds": statistics.median(r.cpu_seconds for r in runs),
            "peak_mb": max(r.peak_mb for r in runs)}, parsed[0]


def bayesrepro_command() -> list[str]:
    script = Path(sys.executable).parent / "bayesrepro"
    return [str(script)] if script.exists() else [sys.executable, "-m", "bayesrepro"]


def last_json_line(text: str) -> dict | None:
    for line in reversed(text.strip().splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                return None
    return None


# ---------------------------------------------------------------- the three contenders

def run_ours(design: Design, repeats: int) -> dict:
    command = [*bayesrepro_command(), "vca", design.ours_data, "--formula", design.formula, *design.ours_extra,
               "--json"]
    runs = [run_command(command) for _ in range(repeats)]
    # vca exits 1 when the fit did not converge but still prints its JSON.
    parsed = [last_json_line(r.stdout) for r in runs]
    if any(p is None for p in parsed):
        failed = next(r for r, p in zip(runs, parsed) if p is None)
        return {"status": "failed", "error": failed.stderr.strip()[-400:]}
    seconds = statistics.median(r.seconds for r in runs)
    fit = parsed[0]
    return {
        "status": "ok",
        "n_obs": fit["n_obs"],
        "seconds": seconds,
        "all_seconds": [round(r.seconds, 2) for r in runs],
        "cpu_seconds": statistics.median(r.cpu_seconds for r in runs),
        "peak_mb": max(r.peak_mb for r in runs),
        "variances": {c["name"]: c["variance"] for c in fit["components"]},
        "reml_criterion": fit["reml_criterion"],
        "converged": fit["converged"],
        "fit_seconds": fit_alone(design),
    }


def fit_alone(design: Design) -> float | None:
    categorical = design.ours_extra[design.ours_extra.index("--categorical") + 1] \
        if "--categorical" in design.ours_extra else ""
    run = subprocess.run([sys.executable, "-c", FIT_ALONE, design.ours_data, design.formula, categorical],
                         capture_output=True, text=True, cwd=REPO)
    parsed = last_json_line(run.stdout)
    return parsed["fit_seconds"] if parsed else None


def run_lme4(design: Design, timeout: float) -> dict:
    command = ["Rscript", str(LMER_SCRIPT), str(design.csv), design.formula, ",".join(design.factors)]
    run = run_command(command, timeout)
    if run.status == "timeout":
        return {"status": "timeout", "seconds": run.seconds, "limit": timeout}
    fit = last_json_line(run.stdout)
    if run.status != "ok" or fit is None:
        return {"status": "failed", "seconds": run.seconds, "error": run.stderr.strip()[-400:]}
    return {
        "status": "ok",
        "seconds": run.seconds,
        "cpu_seconds": run.cpu_seconds,
        "peak_mb": run.peak_mb,
        "variances": fit["variances"],
        "reml_criterion": fit["reml_criterion"],
        "fit_seconds": fit["fit_seconds"],
        "read_seconds": fit["read_seconds"],
        "warnings": fit["warnings"],
        "lme4": fit["lme4"],
    }


def recorded_lme4_full_grid() -> dict:
    record = json.loads(RECORDED_FULL_GRID.read_text())
    fit = record["REML"]
    return {
        "status": "recorded",
        "seconds": float(fit["elapsed_seconds"]),
        "cpu_seconds": float(fit["cpu_seconds"]),
        "peak_mb": None,
        "variances": fit["variances"],
        "reml_criterion": fit["reml_criterion"],
        "lme4": record["versions"]["lme4"],
    }


def run_statsmodels(design: Design, timeout: float, memory_gb: float) -> dict:
    command = [sys.executable, str(Path(__file__).resolve()), "--statsmodels-worker", str(design.csv),
               design.statsmodels_fixed, ",".join(f for f in design.factors if f in random_factors(design.formula)),
               ",".join(design.factors), str(memory_gb)]
    run = run_command(command, timeout)
    if run.status == "timeout":
        return {"status": "timeout", "seconds": run.seconds, "limit": timeout}
    fit = last_json_line(run.stdout)
    if fit is None or "error" in fit:
        error = fit["error"] if fit else run.stderr.strip()[-400:]
        return {"status": "failed", "seconds": run.seconds, "peak_mb": run.peak_mb, "error": error}
    return {
        "status": "ok",
        "seconds": run.seconds,
        "cpu_seconds": run.cpu_seconds,
        "peak_mb": run.peak_mb,
        "variances": fit["variances"],
        "converged": fit["converged"],
    }


def random_factors(formula: str) -> list[str]:
    return re.findall(r"\(1\s*\|\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", formula)


def statsmodels_worker(csv: str, fixed: str, random: str, factors: str, memory_gb: str) -> int:
    """Fit the design with statsmodels MixedLM; print one JSON line."""
    import resource

    limit = int(float(memory_gb) * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        import numpy as np
        import pandas as pd
        from statsmodels.regression.mixed_linear_model import MixedLM

        data = pd.read_csv(csv, dtype={f: str for f in factors.split(",")})
        data["one_group"] = 1
        names = random.split(",")
        model = MixedLM.from_formula(fixed, data, groups="one_group",
                                     vc_formula={name: f"0 + C({name})" for name in names}, use_sparse=True)
        result = model.fit(reml=True)
        # statsmodels sorts the variance components by name.
        variances = dict(zip(model.exog_vc.names, np.asarray(result.vcomp, dtype=float).tolist()))
        variances["Residual"] = float(result.scale)
        print(json.dumps({"variances": variances, "converged": bool(result.converged)}))
        return 0
    except MemoryError:
        print(json.dumps({"error": f"out of memory (address space limited to {memory_gb} GB)"}))
        return 3


# ---------------------------------------------------------------- the simulated grid

def simulated_grid() -> Path:
    """Write the simulated grid once; later runs reuse it."""
    if SIM_FILE.exists():
        return SIM_FILE
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(SIM_SEED)
    sizes = [SIM_ITEMS, *(levels for levels, _ in SIM_FACETS.values())]
    variances = [SIM_ITEM_VARIANCE, *(variance for _, variance in SIM_FACETS.values())]
    grid = np.indices(sizes).reshape(len(sizes), -1)          # every cell once
    score = 0.3 + rng.normal(0.0, np.sqrt(SIM_RESIDUAL_VARIANCE), grid.shape[1])
    columns = {}
    for name, codes, n, variance in zip(SIM_FACTORS, grid, sizes, variances):
        score += rng.normal(0.0, np.sqrt(variance), n)[codes]
        prefix = "".join(word[0] for word in name.split("_"))   # item → i, learning_rate → lr
        labels = np.array([f"{prefix}{k:04d}" for k in range(n)])
        columns[name] = labels[codes]
    frame = pd.DataFrame({"score": np.round(score, 6), **columns})
    partial = SIM_FILE.with_suffix(".part")
    frame.to_csv(partial, index=False, compression="gzip")
    partial.rename(SIM_FILE)
    return SIM_FILE


# ---------------------------------------------------------------- start-up

def startup_check(repeats: int) -> dict:
    tiny = REPO / "tests" / "data" / "dyestuff.csv.gz"
    args = ["vca", str(tiny), "--formula", "Yield ~ 1 + (1|Batch)", "--categorical", "Batch", "--json"]
    runs = [run_command([*bayesrepro_command(), *args]) for _ in range(max(repeats, 3))]
    help_runs = [run_command([*bayesrepro_command(), "vca", "--help"]) for _ in range(max(repeats, 3))]
    traced = subprocess.run([sys.executable, "-X", "importtime", "-m", "bayesrepro", *args],
                            capture_output=True, text=True, cwd=REPO)
    modules = {}
    for line in traced.stderr.splitlines():
        match = re.match(r"import time:\s*(\d+)\s*\|\s*(\d+)\s*\|(\s*)(\S+)", line)
        if match:
            modules[match.group(4)] = (int(match.group(2)), len(match.group(3)))
    bayesian = sorted({m.split(".")[0] for m in modules if m.split(".")[0] in BAYESIAN_STACK})
    top = sorted(((us, m) for m, (us, indent) in modules.items() if indent == 1), reverse=True)
    return {
        "vca_tiny_seconds": statistics.median(r.seconds for r in runs),
        "vca_help_seconds": statistics.median(r.seconds for r in help_runs),
        "import_seconds": sum(us for us, _ in top) / 1e6,
        "largest_imports": [(m, round(us / 1e6, 2)) for us, m in top[:5]],
        "modules_imported": len(modules),
        "bayesian_stack_imported": bayesian,
        "exit_status": traced.returncode,
    }


# ---------------------------------------------------------------- report

def agreement(ours: dict, reference: dict, confounded=()) -> str:
    """Largest relative difference of the components that are ≥ 0.1 % of the total, and ΔREML.

    Confounded pairs are compared by their sum, the only thing the data identify.
    """
    if ours.get("status") != "ok" or reference.get("status") not in ("ok", "recorded"):
        return ""
    mine_all, theirs_all = _merged(ours["variances"], confounded), _merged(reference["variances"], confounded)
    total = sum(mine_all.values())
    diffs = []
    for name, mine in mine_all.items():
        theirs = theirs_all.get(name)
        if theirs is not None and max(mine, theirs) >= 1e-3 * total:
            diffs.append(abs(mine - theirs) / max(abs(theirs), 1e-300))
    text = f"max rel. diff {max(diffs):.1e}" if diffs else ""
    if reference.get("reml_criterion") is not None and ours.get("reml_criterion") is not None:
        text += f", REML crit ours-lme4 {ours['reml_criterion'] - reference['reml_criterion']:+.2e}"
    return text


def _merged(variances: dict, confounded) -> dict:
    merged = dict(variances)
    for a, b in confounded:
        if a in merged and b in merged:
            merged[f"{a}+{b}"] = merged.pop(a) + merged.pop(b)
    return merged


def seconds_text(result: dict) -> str:
    status = result.get("status")
    if status == "ok":
        return f"{result['seconds']:.2f}"
    if status == "recorded":
        return f"{result['seconds']:.1f}*"
    if status == "timeout":
        return f"> {result['limit']:.0f}"
    if status == "skipped":
        return "skipped"
    if "out of memory" in result.get("error", ""):
        return f"OOM at {result['seconds']:.0f}"
    return "failed"


def ratio_text(peer: dict, ours: dict) -> str:
    if ours.get("status") != "ok" or peer.get("status") not in ("ok", "recorded", "timeout"):
        return "-"
    ratio = peer["seconds"] / ours["seconds"]
    return f"> {ratio:.0f}x" if peer["status"] == "timeout" else f"{ratio:.1f}x"


def cpu_ratio_text(peer: dict, ours: dict) -> str:
    if ours.get("status") != "ok" or peer.get("status") not in ("ok", "recorded"):
        return "-"
    return f"{peer['cpu_seconds'] / ours['cpu_seconds']:.1f}x"


def memory_text(result: dict) -> str:
    return f"{result['peak_mb']:.0f}" if result.get("peak_mb") else "-"


def print_table(rows: list[dict]) -> None:
    header = ["design", "rows", "ours s", "ours MB", "lme4 s", "lme4 MB", "lme4/ours", "cpu lme4/ours",
              "statsm. s", "statsm. MB", "statsm./ours"]
    lines = [header]
    for row in rows:
        ours, lme4, sm = row["ours"], row["lme4"], row["statsmodels"]
        lines.append([row["title"], f"{row['n_obs']:,}" if row.get("n_obs") else "-",
                      seconds_text(ours), memory_text(ours), seconds_text(lme4), memory_text(lme4),
                      ratio_text(lme4, ours), cpu_ratio_text(lme4, ours), seconds_text(sm), memory_text(sm),
                      ratio_text(sm, ours)])
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(header))]
    for k, line in enumerate(lines):
        cells = [str(cell).ljust(w) if i == 0 else str(cell).rjust(w) for i, (cell, w) in enumerate(zip(line, widths))]
        print("  ".join(cells))
        if k == 0:
            print("  ".join("-" * w for w in widths))


def describe_design_result(row: dict) -> list[str]:
    ours, lme4, sm = row["ours"], row["lme4"], row["statsmodels"]
    out = [f"[{row['key']}] {row['title']}: {row['formula']}"]
    if ours.get("status") == "ok":
        out.append(f"  ours: runs {ours['all_seconds']} s, cpu {ours['cpu_seconds']:.1f} s, "
                   f"converged {ours['converged']}")
    else:
        out.append(f"  ours: FAILED {ours.get('error', '')}")
    ratios = row["ratios"]
    if "fit_alone" in ratios:
        out.append(f"  fit alone: lmer {lme4['fit_seconds']:.2f} s, ours {ours['fit_seconds']:.2f} s "
                   f"(frame + statistics + REML, data already read): lmer/ours {ratios['fit_alone']:.1f}x")
    if "whole_command" in ratios:
        out.append(f"  whole command: lme4's script {lme4['seconds']:.2f} s (R start-up, read.csv, lmer), ours "
                   f"{ours['seconds']:.2f} s (start-up, reading, REML): lme4/ours {ratios['whole_command']:.1f}x wall, "
                   f"{ratios['whole_command_cpu']:.1f}x CPU")
    if "command_vs_lmer" in ratios:
        out.append(f"  our whole command against lmer's fit alone: lmer {lme4['fit_seconds']:.2f} s / ours "
                   f"{ours['seconds']:.2f} s = {ratios['command_vs_lmer']:.1f}x")
    if lme4.get("status") == "ok":
        out.append(f"  lme4 {lme4['lme4']}: read.csv {lme4['read_seconds']:.1f} s + lmer {lme4['fit_seconds']:.1f} s, "
                   f"cpu {lme4['cpu_seconds']:.1f} s; {agreement(ours, lme4, row['confounded'])}"
                   + (f"; lme4 warned: {'; '.join(lme4['warnings'])}" if lme4["warnings"] else ""))
    elif lme4.get("status") == "recorded":
        out.append(f"  lme4 {lme4['lme4']}: * not run; recorded lmer time from {RECORDED_FULL_GRID.relative_to(REPO)} "
                   f"(lmer call alone, cpu {lme4['cpu_seconds']:.0f} s; no R start-up or read.csv); "
                   f"{agreement(ours, lme4, row['confounded'])}")
    elif lme4.get("status") == "timeout":
        out.append(f"  lme4: did not finish in {lme4['limit']:.0f} s (killed)")
    elif lme4.get("status") == "skipped":
        out.append(f"  lme4: skipped ({lme4['why']})")
    else:
        out.append(f"  lme4: failed: {lme4.get('error', '')}")
    if sm.get("status") == "ok":
        out.append(f"  statsmodels: cpu {sm['cpu_seconds']:.1f} s, converged {sm['converged']}; "
                   f"variances {_rounded(sm['variances'])}")
    elif sm.get("status") == "timeout":
        out.append(f"  statsmodels: did not finish in {sm['limit']:.0f} s (killed)")
    elif sm.get("status") == "skipped":
        out.append(f"  statsmodels: skipped ({sm['why']})")
    else:
        out.append(f"  statsmodels: did not run to the end after {sm.get('seconds', 0):.0f} s: {sm.get('error', '')}")
    for a, b in row["confounded"]:
        out.append(f"  note: {a} and {b} are confounded here; they are compared by their sum")
    if row.get("truth") and ours.get("status") == "ok":
        pairs = ", ".join(f"{k} {ours['variances'][k]:.4g} ({v:.4g})" for k, v in row["truth"].items())
        out.append(f"  ours vs (true) variances: {pairs}")
    return out


def lme4_ratios(ours: dict, lme4: dict) -> dict:
    """lme4's time over ours: the fit alone (lmer against frame, statistics and REML) and the whole command."""
    ratios = {}
    if ours.get("status") != "ok" or lme4.get("status") != "ok":
        return ratios
    if lme4.get("fit_seconds") and ours.get("fit_seconds"):
        ratios["fit_alone"] = lme4["fit_seconds"] / ours["fit_seconds"]
        ratios["command_vs_lmer"] = lme4["fit_seconds"] / ours["seconds"]
    ratios["whole_command"] = lme4["seconds"] / ours["seconds"]
    ratios["whole_command_cpu"] = lme4["cpu_seconds"] / ours["cpu_seconds"]
    return ratios


def _rounded(variances: dict) -> dict:
    return {k: float(f"{v:.4g}") for k, v in variances.items()}


# ---------------------------------------------------------------- main

def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--statsmodels-worker":
        return statsmodels_worker(*sys.argv[2:7])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="--skip-slow-peers, ours once, statsmodels 60 s")
    parser.add_argument("--skip-slow-peers", action="store_true",
                        help="reuse the recorded lme4 time on the full grid; no lme4 on the simulated grid")
    parser.add_argument("--designs", default="partial,insteval,full,simulated")
    parser.add_argument("--repeats", type=int, default=3, help="runs of our command per design (median)")
    parser.add_argument("--lme4-timeout", type=float, default=1800.0)
    parser.add_argument("--statsmodels-timeout", type=float, default=300.0)
    parser.add_argument("--statsmodels-memory-gb", type=float, default=10.0)
    parser.add_argument("--json-out", type=Path, help="also write all results to this JSON file")
    args = parser.parse_args()
    if args.quick:
        args.skip_slow_peers = True
        args.repeats = 1
        args.statsmodels_timeout = min(args.statsmodels_timeout, 60.0)
    if not Path("/usr/bin/time").exists():
        sys.exit("/usr/bin/time is needed for peak memory (Debian: apt-get install time)")
    CACHE.mkdir(exist_ok=True)
    (CACHE / ".gitignore").write_text("*\n")
    have_r = shutil.which("Rscript") is not None and subprocess.run(
        ["Rscript", "-e", "library(lme4); library(jsonlite)"], capture_output=True).returncode == 0
    all_designs = designs()
    chosen = [all_designs[k] for k in args.designs.split(",") if k]

    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} "
          f"{os.getloadavg()[2]:.2f} at start", flush=True)
    startup = startup_check(args.repeats)
    print(f"start-up: `bayesrepro vca` on a 30-row file {startup['vca_tiny_seconds']:.2f} s, "
          f"`bayesrepro vca --help` {startup['vca_help_seconds']:.2f} s; python -X importtime: "
          f"{startup['modules_imported']} modules, {startup['import_seconds']:.2f} s of imports, largest "
          f"{startup['largest_imports']}; Bayesian stack / matplotlib imported: "
          f"{', '.join(startup['bayesian_stack_imported']) or 'none'}; target < {STARTUP_TARGET:g} s: "
          f"{'MET' if max(startup['vca_tiny_seconds'], startup['vca_help_seconds']) < STARTUP_TARGET else 'NOT MET'}",
          flush=True)

    rows = []
    for design in chosen:
        if design.key == "simulated":
            print(f"simulated grid: {simulated_grid().relative_to(REPO)}", flush=True)
        ours = run_ours(design, args.repeats)
        print(f"[{design.key}] ours done: {ours.get('seconds', float('nan')):.2f} s", flush=True)
        if not have_r:
            lme4 = {"status": "skipped", "why": "Rscript with lme4 and jsonlite not found"}
        elif design.slow_lme4 and args.skip_slow_peers:
            lme4 = (recorded_lme4_full_grid() if design.key == "full"
                    else {"status": "skipped", "why": "--skip-slow-peers; no recorded time"})
        else:
            lme4 = run_lme4(design, args.lme4_timeout)
        print(f"[{design.key}] lme4 done: {seconds_text(lme4)}", flush=True)
        sm = run_statsmodels(design, args.statsmodels_timeout, args.statsmodels_memory_gb)
        print(f"[{design.key}] statsmodels done: {seconds_text(sm)}", flush=True)
        row = {"key": design.key, "title": design.title, "formula": design.formula,
               "n_obs": ours.get("n_obs"), "ours": ours, "lme4": lme4, "statsmodels": sm, "truth": design.truth,
               "confounded": design.confounded, "ratios": lme4_ratios(ours, lme4)}
        rows.append(row)
        for line in describe_design_result(row):
            print(line, flush=True)
        if args.json_out:
            args.json_out.write_text(json.dumps({"startup": startup, "rows": rows}, indent=1))

    print()
    load = os.getloadavg()
    print(f"Whole commands, wall seconds (ours: median of {args.repeats}); peak RSS in MB; cpu = user+system "
          f"seconds (less sensitive to other load); "
          f"load average at end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} cores")
    print_table(rows)
    if any(r["lme4"].get("status") == "recorded" for r in rows):
        print("* lme4 not run (--skip-slow-peers): recorded lmer time alone, without R start-up and read.csv")
    print("Targets: lme4/ours >= 100x on the full grid, >= 20x on the partial grid (our whole command against lmer's "
          "fit alone); on InstEval the fit alone "
          ">= 20x lmer and the whole command >= 10x lme4's script; simulated grid < 30 s and < 4096 MB for ours.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
