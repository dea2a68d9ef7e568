"""Random slopes, `compare`'s bootstrap: our REML refits of data simulated on the rows against lme4's ``bootMer``.

Usage:
    python benchmarks/bench_compare_slopes.py [--replicates 100] [--repeats 2]

Model: ``score ~ cond + (1 + cond | g)`` on tests/data/categorical_slope.csv.gz (300 rows, 25 groups, a 3 x 3
covariance matrix). Ours: ``frequentist.slope_variance_bootstrap`` (what ``compare`` runs for a slope model),
timed inside Python after the REML fit. lme4: ``bootMer(fit, as.data.frame(VarCorr(m))$vcov, nsim)``, timed
inside R by ``system.time`` after the fit. Both simulate from the REML fit and refit by REML per replicate.
Printed last: the ratio ours / lme4 of the best of ``--repeats`` runs each (times are noisy on a shared machine).
"""

from __future__ import annotations

import argparse
import subprocess
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "categorical_slope.csv.gz"
FORMULA = "score ~ cond + (1 + cond | g)"
R_SCRIPT = """
suppressPackageStartupMessages(library(lme4))
d <- read.csv("{data}", stringsAsFactors = TRUE)
fit <- lmer({formula}, d, REML = TRUE)
cat(system.time(bootMer(fit, function(m) as.data.frame(VarCorr(m))$vcov, nsim = {n}, seed = 1))[["elapsed"]])
"""


def ours(replicates: int) -> float:
    import bayesrepro as br
    from bayesrepro.data import read_table
    from bayesrepro.frequentist.lmm import fit_model_frame
    from bayesrepro.frequentist.slope_variance_bootstrap import slope_variance_bootstrap

    frame = br.Model(FORMULA, read_table(DATA)).frame
    fit = fit_model_frame(frame, "reml")
    start = time.perf_counter()
    slope_variance_bootstrap(fit, frame, replicates, np.random.default_rng(1))
    return time.perf_counter() - start


def lme4(replicates: int) -> float:
    script = R_SCRIPT.format(data=DATA, formula=FORMULA, n=replicates)
    return float(subprocess.run(["Rscript", "-e", script], check=True, capture_output=True, text=True).stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    mine = min(ours(args.replicates) for _ in range(args.repeats))
    theirs = min(lme4(args.replicates) for _ in range(args.repeats))
    print(f"bayesrepro: {mine:.2f} s for {args.replicates} REML refits")
    print(f"lme4 bootMer: {theirs:.2f} s for {args.replicates} REML refits")
    print(f"ratio ours / lme4: {mine / theirs:.2f}")


if __name__ == "__main__":
    main()
