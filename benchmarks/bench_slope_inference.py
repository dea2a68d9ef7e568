"""Small-sample tests of random-slope models: time against lmerTest/pbkrtest, in the same run.

    python benchmarks/bench_slope_inference.py [REPEATS]

Per design of tests/reference/fixed_effects_slopes.R: the REML fit, Satterthwaite's t table and Kenward-Roger's
(bayesrepro: ``Model.fit().fixed_effects`` and ``ddf.frame_inference(...).contrasts``; R: ``lmer`` then
``summary(ddf = ...)`` twice), best of REPEATS (default 3) wall times, R's timed inside R (start-up excluded).
Prints each side's seconds and their ratio; then the seconds per replicate of the slope bootstrap on sleepstudy
((1|Subject) against (Days|Subject)) and of pbkrtest's ``PBmodcomp`` (benchmarks/pbmodcomp.R, 20 simulations).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import bayesrepro as br
from bayesrepro.data import read_table
from bayesrepro.frequentist.ddf import KENWARD_ROGER, frame_inference
from bayesrepro.frequentist.glrt import nested_frames
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.frequentist.slope_bootstrap import row_bootstrap_lrt

TESTS = Path(__file__).resolve().parent.parent / "tests"
DESIGNS = json.loads((TESTS / "reference" / "fixed_effects_slopes.json").read_text())["designs"]

R_SCRIPT = r"""
suppressPackageStartupMessages(library(lmerTest))
args <- commandArgs(trailingOnly = TRUE)
data <- read.csv(args[1], stringsAsFactors = TRUE)
if (nchar(args[3])) data[[args[3]]] <- factor(data[[args[3]]])
best <- Inf
for (r in seq_len(as.integer(args[4]))) {
  t <- system.time({
    fit <- lmer(as.formula(args[2]), data = data, REML = TRUE)
    a <- summary(fit, ddf = "Satterthwaite")$coefficients
    b <- summary(fit, ddf = "Kenward-Roger")$coefficients
  })[["elapsed"]]
  best <- min(best, t)
}
cat(best, "\n")
"""


def ours(design: dict, repeats: int) -> float:
    rows = read_table(TESTS / "data" / design["data"])
    best = np.inf
    for _ in range(repeats):
        began = time.perf_counter()
        model = br.Model(design["formula"], rows, categorical=design["categorical"] or None)
        model.fit().fixed_effects
        fit = model.engine_fit("reml")
        frame_inference(model.frame, fit).contrasts(np.eye(len(fit.beta)), KENWARD_ROGER)
        best = min(best, time.perf_counter() - began)
    return best


def theirs(design: dict, repeats: int) -> float:
    categorical = design["categorical"][0] if design["categorical"] else ""
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "time_lmertest.R"
        script.write_text(R_SCRIPT)
        run = subprocess.run(["Rscript", str(script), str(TESTS / "data" / design["data"]), design["formula"],
                              categorical, str(repeats)], capture_output=True, text=True, check=True)
    return float(run.stdout.split()[0])


H0, H1 = "Reaction ~ Days + (1|Subject)", "Reaction ~ Days + (Days|Subject)"


def bootstrap_seconds(replicates: int = 20) -> float:
    rows = read_table(TESTS / "data" / "sleepstudy.csv.gz")
    frame0, frame1 = nested_frames(H0, H1, rows)
    fit0, fit1 = fit_model_frame(frame0, "ml"), fit_model_frame(frame1, "ml")
    began = time.perf_counter()
    row_bootstrap_lrt(frame0, frame1, fit0, fit1, replicates, seed=1)
    return (time.perf_counter() - began) / replicates


def main(repeats: int = 3) -> None:
    print(f"{'design':<26} {'bayesrepro s':>12} {'lmerTest s':>11} {'ratio':>6}")
    for key, design in DESIGNS.items():
        a, b = ours(design, repeats), theirs(design, repeats)
        print(f"{key:<26} {a:12.3f} {b:11.3f} {a / b:6.2f}")
    pb = json.loads(subprocess.run(["Rscript", str(Path(__file__).parent / "pbmodcomp.R"),
                                    str(TESTS / "data" / "sleepstudy.csv.gz"), H1, H0, "Subject", "20"],
                                   capture_output=True, text=True, check=True).stdout)
    a, b = bootstrap_seconds(), pb["pb_seconds"] / pb["nsim"]
    print(f"slope bootstrap per replicate, sleepstudy: bayesrepro {a:.3f} s, PBmodcomp {b:.3f} s, ratio {a / b:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
