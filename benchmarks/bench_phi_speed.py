"""Posteriors at the speed of a notebook: the `phi` command against the `vca` command, and refits in one process.

Usage:
    python benchmarks/bench_phi_speed.py [--cases annotation,ter,full] [--repeats 3] [--json-out FILE]
    python benchmarks/bench_phi_speed.py --first-phi-only [--repeats 3]

Run it on a quiet machine: every figure is a wall time.

0. Start-up: `bayesrepro COMMAND --help` for vca, glrt and phi, `vca` on a
   30-row file and `glrt --reference chi2` on 144 rows (target: under 1 s),
   beside the libraries every model command imports, imported alone (the
   floor); each round runs every one of them once, in a new order. The
   one-off compilation of each fast path: a small fit in a fresh numba cache
   directory, then the same fit once the cache is filled (the difference is
   what compiling costs, once per installation). The first `phi` after an
   installation: `bayesrepro phi kreutzer_ter` in a fresh numba cache, then
   again with the cache filled, ``--repeats`` times, each run's wall seconds
   with the load average before it (target: the cold run ≤ 5 s).
1. Whole commands as a user runs them (start-up, reading the data, fitting,
   printing): `bayesrepro vca` (REML) and `bayesrepro phi` (the defaults: 4
   chains × 1,000 draws after 1,000 tuning steps) on the same data,
   alternated, median of ``--repeats`` runs each; the compiled density is
   loaded from the cache. Target: phi ≤ 5 × vca on the annotation G-study and
   on kreutzer_ter, ≤ 10 × on the full grid, with R-hat ≤ 1.01 and bulk ESS ≥
   400 in every run.
2. In one Python process, after a first fit of each: a REML fit and a Bayesian
   fit of the same model structure on other data (the other annotation mode,
   the other half of the sentences, the partial grid), median of
   ``--repeats``. Target: Bayes ≤ 2 × REML, with the same convergence criteria.

Each case prints its ratios against the targets, MET or NOT MET, and the
R-hat and bulk ESS of every run; ``--json-out`` writes every figure.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ANNOTATION = (
    "score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater) + (1|sentence:occasion) + (1|rater:occasion)"
)
GRID = (
    "ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout) + (1|decoder_dropout)"
    " + (1|decoder_dropout_hidden) + (1|delta_scheme)"
)
# φ's object of measurement per case (named: with several crossed facets the package does not guess it)
OBJECTS = {"annotation": "sentence", "ter": "sentence_id", "full": "sentence_id"}
# name: (command-line data arguments, formula, target ratio phi/vca)
CASES = {
    "annotation": (["kreutzer_annotation", "--where", "mode == 'Post Edit'", "--object", "sentence"], ANNOTATION, 5),
    "ter": (["kreutzer_ter", "--object", "sentence_id"], "ter ~ system + (1|sentence_id)", 5),
    "full": (["kreutzer_marking_full", "--object", "sentence_id"], GRID, 10),
}
REFIT_TARGET = 2
STARTUP_TARGET = 1.0
FIRST_PHI_TARGET = 5.0
R_HAT_MAX, ESS_BULK_MIN = 1.01, 400
TINY = ["vca", str(ROOT / "tests" / "data" / "dyestuff.csv.gz"), "--formula", "Yield ~ 1 + (1|Batch)",
        "--categorical", "Batch", "--json"]
SMALL_GLRT = ["glrt", str(ROOT / "tests" / "data" / "penicillin.csv.gz"), "--h0", "diameter ~ 1 + (1|plate)",
              "--h1", "diameter ~ 1 + (1|plate) + (1|sample)", "--categorical", "plate,sample", "--reference", "chi2",
              "--json"]
# What every model command imports before its own modules (formulae as the package imports it) and the exit as
# the command line ends it: the floor of a model command's start-up
LIBRARIES = f"""
import gc, importlib.util, pandas, scipy.linalg, scipy.sparse, scipy.special
spec = importlib.util.spec_from_file_location("loader", {str(ROOT / "bayesrepro" / "design" / "formulae_loader.py")!r})
loader = importlib.util.module_from_spec(spec)
spec.loader.exec_module(loader)
loader.load_formulae()
gc.freeze()
"""
GAUSSIAN_FIT = """
from bayesrepro.bayes import fit_bayes
from bayesrepro.datasets import load_dataset
fit_bayes("ter ~ system + (1|sentence_id)", load_dataset("kreutzer_ter").iloc[:300], draws=100, tune=100, chains=2,
          seed=1, allow_unconverged=True, progress=False)
"""
BINARY_FIT = """
from bayesrepro.bayes import fit_bayes
from bayesrepro.simulate import binary_grid
data = binary_grid(items=30, systems={"A": 0.0, "B": 0.4}, seeds=2, prompts=2, random_state=1)
fit_bayes("correct ~ system + (1|item) + (1|prompt)", data, draws=100, tune=100, chains=2, seed=1,
          allow_unconverged=True, progress=False)
"""


def environment(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), **extra)


def timed(argv: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}")
    return seconds, result


def verdict(met: bool) -> str:
    return "MET" if met else "NOT MET"


def converged(diagnostics: list[dict]) -> bool:
    return all(d["r_hat_max"] <= R_HAT_MAX and d["ess_bulk_min"] >= ESS_BULK_MIN for d in diagnostics)


def startup(repeats: int) -> dict:
    # as from an installation, whose modules pip has compiled: bytecode may be written (one warm-up run)
    env = {k: v for k, v in environment().items() if k != "PYTHONDONTWRITEBYTECODE"}
    bayesrepro = [sys.executable, "-m", "bayesrepro"]
    timed([*bayesrepro, *SMALL_GLRT], env)
    runs = {"vca --help": [*bayesrepro, "vca", "--help"], "glrt --help": [*bayesrepro, "glrt", "--help"],
            "phi --help": [*bayesrepro, "phi", "--help"], "vca on 30 rows": [*bayesrepro, *TINY],
            "glrt (chi2) on 144 rows": [*bayesrepro, *SMALL_GLRT],
            "libraries alone": [sys.executable, "-c", LIBRARIES]}
    seconds = {label: [] for label in runs}
    order = random.Random(1)
    for _ in range(repeats):   # every round runs each once, in a new order: a busy spell slows all alike
        for label in order.sample(list(runs), len(runs)):
            seconds[label].append(timed(runs[label], env)[0])
    out = {label: statistics.median(values) for label, values in seconds.items()}
    over = {label: sum(v >= STARTUP_TARGET for v in values) for label, values in seconds.items()}
    worst = max(v for label, v in out.items() if label != "libraries alone")
    print(f"start-up (median wall seconds of {repeats}; runs at or over {STARTUP_TARGET:g} s): "
          + ", ".join(f"{k} {v:.2f} ({over[k]})" for k, v in out.items())
          + f"; target < {STARTUP_TARGET:g} s: {verdict(worst < STARTUP_TARGET)}", flush=True)
    return {"seconds": out, "runs": seconds, "target": STARTUP_TARGET, "met": worst < STARTUP_TARGET}


def one_off_compilation() -> dict:
    out = {}
    for label, script in (("gaussian", GAUSSIAN_FIT), ("binary", BINARY_FIT)):
        with tempfile.TemporaryDirectory() as fresh:
            env = environment(NUMBA_CACHE_DIR=fresh)
            cold, _ = timed([sys.executable, "-c", script], env)
            warm, _ = timed([sys.executable, "-c", script], env)
        out[label] = {"fresh_cache_s": round(cold, 2), "filled_cache_s": round(warm, 2),
                      "compilation_s": round(cold - warm, 2)}
        print(f"one-off compilation, {label} fast path: a small fit takes {cold:.1f} s in a fresh cache, "
              f"{warm:.1f} s once it is filled: {cold - warm:.1f} s of compiling, once per installation", flush=True)
    return out


def first_phi(repeats: int) -> dict:
    """``phi`` on kreutzer_ter in a fresh numba cache (what the first run after an installation compiles), then
    with the cache filled; wall seconds of each run and the load average (1 min) before it."""
    cold, warm, loads = [], [], []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as fresh:
            env = environment(NUMBA_CACHE_DIR=fresh)
            loads.append(round(os.getloadavg()[0], 2))
            cold.append(round(command("ter", "phi", env)[0], 2))
            warm.append(round(command("ter", "phi", env)[0], 2))
    median = statistics.median(cold)
    print(f"first phi after installation (kreutzer_ter, fresh numba cache): {median:.2f} s wall (median of "
          f"{repeats}: {cold}), then {statistics.median(warm):.2f} s with the cache filled ({warm}); load average "
          f"before each run {loads}; target <= {FIRST_PHI_TARGET:g} s: {verdict(median <= FIRST_PHI_TARGET)}",
          flush=True)
    return {"cold_s": cold, "warm_s": warm, "load_average": loads, "target": FIRST_PHI_TARGET,
            "met": median <= FIRST_PHI_TARGET}


def command(name: str, subcommand: str, env: dict) -> tuple[float, dict]:
    data, formula, _ = CASES[name]
    argv = [sys.executable, "-m", "bayesrepro", subcommand, *data, "--formula", formula, "--json"]
    if subcommand == "phi":
        argv += ["--seed", "1"]
    seconds, result = timed(argv, env)
    return seconds, json.loads(result.stdout)


def whole_commands(names: list[str], repeats: int) -> list[dict]:
    env = environment()
    command(names[0], "phi", env)  # fill the package's own cache
    rows = []
    for name in names:
        times = {"vca": [], "phi": []}
        fit_seconds, diagnostics = [], []
        for _ in range(repeats):
            for sub in ("vca", "phi"):
                seconds, out = command(name, sub, env)
                times[sub].append(seconds)
                if sub == "phi":
                    fit_seconds.append(out["seconds"])
                    diagnostics.append({k: out["diagnostics"][k] for k in ("r_hat_max", "ess_bulk_min", "divergences")})
        vca, phi = statistics.median(times["vca"]), statistics.median(times["phi"])
        target = CASES[name][2]
        ratio = phi / vca
        rows.append({
            "case": name, "rows": out["n_obs"], "vca_s": round(vca, 2), "phi_s": round(phi, 2),
            "phi_fit_s": round(statistics.median(fit_seconds), 2), "ratio": round(ratio, 1), "target": target,
            "met": ratio <= target and converged(diagnostics), "runs": diagnostics,
        })
        print(f"{name}: phi {phi:.2f} s (of which fitting {statistics.median(fit_seconds):.2f} s) / vca {vca:.2f} s "
              f"= {ratio:.1f} x, target <= {target} x with R-hat <= {R_HAT_MAX} and bulk ESS >= {ESS_BULK_MIN}: "
              f"{verdict(rows[-1]['met'])}; runs: {_runs(diagnostics)}", flush=True)
    return rows


def refits(names: list[str], repeats: int) -> list[dict]:
    from bayesrepro.bayes import fit_bayes
    from bayesrepro.datasets import load_dataset
    from bayesrepro.frequentist.lmm import fit_lmm

    annotation = load_dataset("kreutzer_annotation")
    ter = load_dataset("kreutzer_ter")
    halves = ter["sentence_id"].cat.codes % 2 == 0
    pairs = {  # (first data, other data, formula)
        "annotation": (annotation[annotation["mode"] == "Post Edit"], annotation[annotation["mode"] == "Marking"], ANNOTATION),
        "ter": (ter[halves], ter[~halves], CASES["ter"][1]),
        "full": (load_dataset("kreutzer_marking_full"), load_dataset("kreutzer_marking_partial"), GRID),
    }
    rows = []
    for name in names:
        first, other, formula = pairs[name]
        fit_bayes(formula, first, object=OBJECTS[name], seed=1, progress=False)
        fit_lmm(formula, first)
        reml, bayes, diagnostics = [], [], []
        for repeat in range(repeats):
            start = time.perf_counter()
            fit_lmm(formula, other)
            reml.append(time.perf_counter() - start)
            start = time.perf_counter()
            fit = fit_bayes(formula, other, object=OBJECTS[name], seed=2 + repeat, progress=False)
            bayes.append(time.perf_counter() - start)
            d = fit.diagnostics
            diagnostics.append({"r_hat_max": d.r_hat_max, "ess_bulk_min": d.ess_bulk_min, "divergences": d.divergences})
        ratio = statistics.median(bayes) / statistics.median(reml)
        rows.append({"case": name, "rows": fit.frame.n_obs, "reml_s": round(statistics.median(reml), 3),
                     "bayes_s": round(statistics.median(bayes), 3), "ratio": round(ratio, 1), "target": REFIT_TARGET,
                     "met": ratio <= REFIT_TARGET and converged(diagnostics), "runs": diagnostics})
        print(f"{name} refit in one process: Bayes {statistics.median(bayes):.3f} s / REML "
              f"{statistics.median(reml):.3f} s = {ratio:.1f} x, target <= {REFIT_TARGET} x: "
              f"{verdict(rows[-1]['met'])}; runs: {_runs(diagnostics)}", flush=True)
    return rows


def _runs(diagnostics: list[dict]) -> str:
    return "; ".join(f"R-hat {d['r_hat_max']:.4f}, bulk ESS {d['ess_bulk_min']:.0f}, {d['divergences']} divergent"
                     for d in diagnostics)


def table(rows: list[dict]) -> str:
    header = [h for h in rows[0] if h != "runs"]
    return "\n".join([" | ".join(header)] + [" | ".join(str(row[h]) for h in header) for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="annotation,ter,full")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json-out")
    parser.add_argument("--startup-only", action="store_true", help="only the start-up of the model commands")
    parser.add_argument("--first-phi-only", action="store_true",
                        help="only the first phi after installation (fresh numba cache) and the run after it")
    args = parser.parse_args()
    names = [n for n in args.cases.split(",") if n]
    unknown = sorted(set(names) - set(CASES))
    if unknown:
        parser.error(f"unknown case {unknown[0]!r}; the cases are {', '.join(CASES)}")
    print(f"load average {os.getloadavg()[0]:.2f} at start (figures are wall times: run on a quiet machine)", flush=True)
    if args.first_phi_only:
        first = first_phi(args.repeats)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps({"first_phi": first, "load_average": os.getloadavg()}, indent=1))
        return
    started = startup(args.repeats)
    if args.startup_only:
        if args.json_out:
            Path(args.json_out).write_text(json.dumps({"startup": started, "load_average": os.getloadavg()}, indent=1))
        return
    compilation = one_off_compilation()
    first = first_phi(args.repeats)
    commands = whole_commands(names, args.repeats)
    in_process = refits(names, args.repeats)
    print(f"\nwhole commands (seconds, median of {args.repeats} runs):")
    print(table(commands))
    print(f"\nsecond fit of the same structure on other data, in one process (seconds, median of {args.repeats}):")
    print(table(in_process))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"startup": started, "compilation": compilation,
                                                   "first_phi": first, "commands": commands, "refits": in_process,
                                                   "load_average": os.getloadavg()}, indent=1))


if __name__ == "__main__":
    main()
