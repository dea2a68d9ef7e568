"""Posteriors at the speed of a notebook: the `phi` command against the `vca` command, and refits in one process.

Usage:
    python benchmarks/bench_phi_speed.py [--cases annotation,ter,full] [--repeats 3] [--json-out FILE]

1. Whole commands as a user runs them (start-up, reading the data, fitting,
   printing): `bayesrepro vca` (REML) and `bayesrepro phi` (4 chains × 1,000
   draws after 1,000 tuning steps, the defaults) on the same data, alternated,
   median of ``--repeats`` runs each. The compiled density is loaded from
   numba's cache; the one-off compilation is timed first, in a fresh cache
   directory. Targets: phi ≤ 5 × vca on the annotation G-study and on
   kreutzer_ter, ≤ 10 × on the full grid, with R-hat ≤ 1.01 and bulk ESS ≥ 400.
2. In one Python process, after a first fit: a REML fit and a Bayesian fit of
   the same model structure on other data (the other annotation mode, the
   other half of the sentences, the partial grid). Target: Bayes ≤ 2 × REML.
"""

from __future__ import annotations

import argparse
import json
import os
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
# name: (command-line data arguments, formula, target ratio phi/vca)
CASES = {
    "annotation": (["kreutzer_annotation", "--where", "mode == 'Post Edit'"], ANNOTATION, 5),
    "ter": (["kreutzer_ter"], "ter ~ system + (1|sentence_id)", 5),
    "full": (["kreutzer_marking_full"], GRID, 10),
}


def command(name: str, subcommand: str, env: dict) -> tuple[float, dict]:
    data, formula, _ = CASES[name]
    argv = [sys.executable, "-m", "bayesrepro", subcommand, *data, "--formula", formula, "--json"]
    if subcommand == "phi":
        argv += ["--seed", "1"]
    start = time.perf_counter()
    result = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT)
    seconds = time.perf_counter() - start
    if result.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({result.returncode}):\n{result.stderr}")
    return seconds, json.loads(result.stdout)


def whole_commands(names: list[str], repeats: int) -> list[dict]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with tempfile.TemporaryDirectory() as fresh:
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "from bayesrepro.bayes.compiled import entry_points; entry_points()"],
                       env=env | {"NUMBA_CACHE_DIR": fresh}, cwd=ROOT, check=True)
        print(f"one-off compilation of the density (fresh cache, start-up included): "
              f"{time.perf_counter() - start:.1f} s", flush=True)
    command(names[0], "phi", env)  # fill the package's own cache
    rows = []
    for name in names:
        times = {"vca": [], "phi": []}
        for _ in range(repeats):
            for sub in ("vca", "phi"):
                seconds, out = command(name, sub, env)
                times[sub].append(seconds)
                if sub == "phi":
                    diagnostics = out["diagnostics"]
        vca, phi = statistics.median(times["vca"]), statistics.median(times["phi"])
        rows.append({
            "case": name, "rows": out["n_obs"], "vca_s": round(vca, 2), "phi_s": round(phi, 2),
            "ratio": round(phi / vca, 1), "target": CASES[name][2],
            "r_hat_max": round(diagnostics["r_hat_max"], 4), "ess_bulk_min": round(diagnostics["ess_bulk_min"]),
            "divergences": diagnostics["divergences"],
        })
        print(json.dumps(rows[-1]), flush=True)
    return rows


def refits(names: list[str]) -> list[dict]:
    from bayesrepro.bayes import fit_bayes
    from bayesrepro.datasets import load_dataset
    from bayesrepro.frequentist import fit_lmm

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
        fit_bayes(formula, first, seed=1)
        fit_lmm(formula, first)
        start = time.perf_counter()
        fit_lmm(formula, other)
        reml = time.perf_counter() - start
        start = time.perf_counter()
        fit = fit_bayes(formula, other, seed=2)
        bayes = time.perf_counter() - start
        rows.append({"case": name, "rows": fit.frame.n_obs, "reml_s": round(reml, 3), "bayes_s": round(bayes, 3),
                     "ratio": round(bayes / reml, 1), "target": 2, "r_hat_max": round(fit.diagnostics.r_hat_max, 4),
                     "ess_bulk_min": round(fit.diagnostics.ess_bulk_min)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def table(rows: list[dict]) -> str:
    header = list(rows[0])
    return "\n".join([" | ".join(header)] + [" | ".join(str(row[h]) for h in header) for row in rows])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="annotation,ter,full")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    names = [n for n in args.cases.split(",") if n]
    commands = whole_commands(names, args.repeats)
    in_process = refits(names)
    print("\nwhole commands (seconds, median of", args.repeats, "runs):")
    print(table(commands))
    print("\nsecond fit of the same structure on other data, in one process (seconds):")
    print(table(in_process))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"commands": commands, "refits": in_process}, indent=1))


if __name__ == "__main__":
    main()
