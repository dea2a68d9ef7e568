"""Small-sample tests of random-slope models: time against lmerTest/pbkrtest, in the same run.

    python benchmarks/bench_slope_inference.py [REPEATS]

Per design of tests/reference/fixed_effects_slopes.R: the REML fit, Satterthwaite's t table and Kenward-Roger's
(bayesrepro: ``Model.fit().fixed_effects`` and ``ddf.frame_inference(...).contrasts``; R: ``lmer`` then
``summary(ddf = ...)`` twice), best of REPEATS (default 3) wall times, R's timed inside R (start-up excluded).
Prints each side's seconds and their ratio; then the seconds per replicate of the slope bootstrap on sleepstudy
((1|Subject) against (Days|Subject)) and of pbkrtest's ``PBmodcomp`` (benchmarks/pbmodcomp.R, 20 simulations),
with the criterion evaluations per replicate; last, the sleepstudy slope fits alone (REML and ML, correlated and
independent slopes) against ``lmer``: best fit seconds, criterion evaluations and milliseconds per evaluation
(lme4's count is its optimiser's ``feval``).
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
from bayesrepro.frequentist.general_lmm import fit_general_frame
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.frequentist.slope_bootstrap import row_bootstrap_lrt
from bayesrepro.frequentist.sparse_deviance import SparseProfiledDeviance

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
SLEEP_FITS = [(formula, method) for formula in (H1, "Reaction ~ Days + (Days||Subject)") for method in ("reml", "ml")]

LMER_FIT_SCRIPT = r"""
suppressPackageStartupMessages(library(lme4))
args <- commandArgs(trailingOnly = TRUE)
data <- read.csv(args[1], stringsAsFactors = TRUE)
data$Subject <- factor(data$Subject)
best <- Inf
for (r in seq_len(as.integer(args[4]))) {
  t <- system.time(fit <- lmer(as.formula(args[2]), data = data, REML = args[3] == "reml"))[["elapsed"]]
  best <- min(best, t)
}
cat(best, fit@optinfo$feval, "\n")
"""


class EvaluationCount:
    """Counts the criterion evaluations of the sparse core (``SparseProfiledDeviance.solve``) inside the block."""

    def __enter__(self):
        self.count, original = 0, SparseProfiledDeviance.solve

        def counted(objective, theta, with_gradient=False):
            self.count += 1
            return original(objective, theta, with_gradient)

        SparseProfiledDeviance.solve, self._original = counted, original
        return self

    def __exit__(self, *_):
        SparseProfiledDeviance.solve = self._original


def bootstrap_seconds(replicates: int = 20) -> tuple[float, float]:
    """Seconds and criterion evaluations per replicate."""
    rows = read_table(TESTS / "data" / "sleepstudy.csv.gz")
    frame0, frame1 = nested_frames(H0, H1, rows)
    fit0, fit1 = fit_model_frame(frame0, "ml"), fit_model_frame(frame1, "ml")
    began = time.perf_counter()
    with EvaluationCount() as evaluations:
        row_bootstrap_lrt(frame0, frame1, fit0, fit1, replicates, seed=1)
    return (time.perf_counter() - began) / replicates, evaluations.count / replicates


def sleep_fit(formula: str, method: str, repeats: int) -> tuple[float, int]:
    """Best seconds of the sparse core's fit (the model frame built outside the timing) and its evaluations."""
    rows = read_table(TESTS / "data" / "sleepstudy.csv.gz")
    best = np.inf
    for _ in range(repeats):
        frame = br.Model(formula, rows).frame
        with EvaluationCount() as evaluations:
            began = time.perf_counter()
            fit_general_frame(frame, method)
            best = min(best, time.perf_counter() - began)
    return best, evaluations.count


def lmer_fit(formula: str, method: str, repeats: int) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as folder:
        script = Path(folder) / "time_lmer.R"
        script.write_text(LMER_FIT_SCRIPT)
        run = subprocess.run(["Rscript", str(script), str(TESTS / "data" / "sleepstudy.csv.gz"), formula, method,
                              str(repeats)], capture_output=True, text=True, check=True)
    seconds, feval = run.stdout.split()
    return float(seconds), int(feval)


def main(repeats: int = 3) -> None:
    print(f"{'design':<26} {'bayesrepro s':>12} {'lmerTest s':>11} {'ratio':>6}")
    for key, design in DESIGNS.items():
        a, b = ours(design, repeats), theirs(design, repeats)
        print(f"{key:<26} {a:12.3f} {b:11.3f} {a / b:6.2f}")
    pb = json.loads(subprocess.run(["Rscript", str(Path(__file__).parent / "pbmodcomp.R"),
                                    str(TESTS / "data" / "sleepstudy.csv.gz"), H1, H0, "Subject", "20"],
                                   capture_output=True, text=True, check=True).stdout)
    (a, evaluations), b = bootstrap_seconds(), pb["pb_seconds"] / pb["nsim"]
    print(f"slope bootstrap per replicate, sleepstudy: bayesrepro {a:.3f} s ({evaluations:.0f} evaluations), "
          f"PBmodcomp {b:.3f} s, ratio {a / b:.2f}")
    print(f"\n{'sleepstudy fit':<44} {'ours s':>7} {'evals':>5} {'ms/eval':>7} {'lmer s':>7} {'evals':>5} {'ratio':>6}")
    for formula, method in SLEEP_FITS:
        (a, ours_evals), (b, lmer_evals) = sleep_fit(formula, method, 5 * repeats), lmer_fit(formula, method, 5 * repeats)
        print(f"{formula + ' ' + method:<44} {a:7.4f} {ours_evals:5d} {1e3 * a / ours_evals:7.3f} {b:7.4f} "
              f"{lmer_evals:5d} {a / b:6.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 3)
