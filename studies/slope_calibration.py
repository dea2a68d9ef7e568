"""Calibration of random slopes: 90 % intervals against the known SDs and correlation of simulated data.

Design like lme4's sleepstudy: 18 subjects measured on 10 days, ``y ~ day + (day | subject)``, drawn by
``simulate.repeated_measures`` with an intercept SD of 25, a slope SD of 6, a correlation of 0.3 and a residual
SD of 25 (sleepstudy's REML fit, its correlation rounded up). Every dataset is fitted with the default priors
(``--prior scaled``), 4 chains × 1,000 draws after 1,000 tuning steps, on one core. The study writes the
coverage of the central 90 % intervals of the slope SD, the intercept SD, the correlation and σ to
``studies/results/slope_calibration.json``:

    python studies/slope_calibration.py [--datasets 120] [--processes 1]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the checkout's bayesrepro and studies

from studies.record import write_record  # noqa: E402

SUBJECTS, DAYS = 18, 10
FORMULA = "y ~ day + (day|subject)"
# what the figures depend on: the study, the simulation, the Bayesian fit and the model frames it samples
SOURCES = ["studies/slope_calibration.py", "bayesrepro/simulate.py", "bayesrepro/bayes/*.py",
           "bayesrepro/design/*.py", "bayesrepro/frequentist/covariance_structure.py"]
SEED = 20261125


def truth():
    from bayesrepro.simulate import SlopeTruth

    return SlopeTruth()


def fit_one(k: int) -> dict:
    import bayesrepro as br
    from bayesrepro.simulate import repeated_measures

    true = truth()
    data = repeated_measures(SUBJECTS, DAYS, true, random_state=[SEED, k])
    posterior = br.Model(FORMULA, data).sample(draws=1000, tune=1000, chains=4, seed=k, allow_unconverged=True,
                                               prob=0.9)
    expected = {("Intercept", None): ("sd_intercept", true.intercept_sd), ("day", None): ("sd_slope", true.slope_sd),
                ("Intercept", "day"): ("correlation", true.correlation), (None, None): ("sigma", true.residual_sd)}
    row = {"dataset": k, "converged": posterior.converged}
    for effect in posterior.to_dict()["random_effects"]:
        name, value = expected[(effect["var1"], effect["var2"])]
        row[name] = bool(effect["low"] <= value <= effect["high"])
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description="coverage of the 90 % intervals of random-slope SDs and correlation")
    parser.add_argument("--datasets", type=int, default=120)
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args()
    with ProcessPoolExecutor(max_workers=args.processes) as pool:
        results = pd.DataFrame(list(pool.map(fit_one, range(args.datasets))))
    scored = ["sd_slope", "correlation", "sd_intercept", "sigma"]
    coverage = results[scored].mean()
    converged = float(results["converged"].mean())
    print(pd.DataFrame({"coverage_90": coverage, "datasets": len(results)}).to_string(),
          f"\nconverged (R-hat, ESS, divergences): {converged:.2f}")
    true = truth()
    write_record("slope_calibration", SOURCES, {
        "datasets": args.datasets, "design": {"subjects": SUBJECTS, "days": DAYS, "formula": FORMULA},
        "truth": {"intercept_sd": true.intercept_sd, "slope_sd": true.slope_sd, "correlation": true.correlation,
                  "residual_sd": true.residual_sd},
        "coverage_90": {name: float(value) for name, value in coverage.items()}, "converged": converged})
    return 0


if __name__ == "__main__":
    sys.exit(main())
