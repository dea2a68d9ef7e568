"""Calibration: 90 % intervals against the known components of simulated data.

Design like the papers' meta-parameter grids: 150 items fully crossed with
three meta-parameter facets of 2, 3 and 4 levels (24 configurations), one of
them of zero variance. Every dataset is fitted with the default priors.

A zero variance cannot lie inside a central interval of a positive
parameter and always lies in the one-sided interval [0, q90], so that facet
is not scored; the median of its 90 % upper bound is reported instead. The
study fits one dataset per task on each of ``--processes`` cores (about a
minute on two) and writes its coverage table to
``studies/results/bayes_calibration.json``, which ``tests/test_studies.py``
checks for freshness and against the nominal rate (``--prior`` names another
prior family, "bambi" or "r2d2", to compare; only the default is recorded):

    python studies/bayes_calibration.py [--datasets 100] [--processes 2] [--prior PRIOR]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the checkout's bayesrepro and studies

from studies.record import write_record  # noqa: E402

TRUTH = {"item": 0.04, "seed": 0.0, "lr": 0.01, "dropout": 0.002, "Residual": 0.01}  # variances
LEVELS = {"item": 150, "seed": 3, "lr": 4, "dropout": 2}
FORMULA = "score ~ 1 + (1|item) + (1|seed) + (1|lr) + (1|dropout)"
# what the figures depend on: the study, the Bayesian fit and the model frames it samples
SOURCES = ["studies/bayes_calibration.py", "bayesrepro/bayes/*.py", "bayesrepro/design/*.py"]


def simulate(rng) -> pd.DataFrame:
    grids = np.meshgrid(*[np.arange(n) for n in LEVELS.values()], indexing="ij")
    data = pd.DataFrame({name: g.ravel() for name, g in zip(LEVELS, grids)})
    score = 0.5 + rng.normal(0, np.sqrt(TRUTH["Residual"]), len(data))
    for name, n in LEVELS.items():
        score += rng.normal(0, np.sqrt(TRUTH[name]), n)[data[name]]
    for name in LEVELS:
        data[name] = data[name].astype(str).astype("category")
    data["score"] = score
    return data


def covered(draws, truth: float) -> bool:
    if truth == 0:
        return bool(np.quantile(draws, 0.90) >= 0)  # always true: reported, not scored
    low, high = np.quantile(draws, [0.05, 0.95])
    return bool(low <= truth <= high)


def study(datasets, seed: int = 20231, prior: str | None = None) -> pd.DataFrame:
    from bayesrepro.bayes import fit_bayes

    total = sum(TRUTH.values())
    rows = []
    for k in datasets:
        data = simulate(np.random.default_rng([seed, k]))
        fit = fit_bayes(FORMULA, data, object="item", prior=prior, draws=500, tune=500, chains=2, cores=1, seed=k,
                        effects=False, allow_unconverged=True)
        post = fit.idata.posterior
        row = {"dataset": k, "converged": fit.diagnostics.converged}
        for name, variance in TRUTH.items():
            sd = post["sigma" if name == "Residual" else f"1|{name}_sigma"].values
            row[f"sd_{name}"] = covered(sd, np.sqrt(variance))
            if variance == 0:
                row[f"sd_{name}_q90"] = float(np.quantile(sd, 0.90))
        row["phi"] = covered(post["phi"].values, TRUTH["item"] / total)
        rows.append(row)
    return pd.DataFrame(rows)


def coverage_table(results: pd.DataFrame) -> pd.DataFrame:
    columns = [c for c in results if c.startswith("sd_") and not c.endswith("_q90")] + ["phi"]
    scored = [c for c in columns if TRUTH.get(c[3:], 1) != 0]
    return pd.DataFrame({"coverage_90": results[scored].mean(), "datasets": len(results)})


def main() -> int:
    parser = argparse.ArgumentParser(description="coverage of the 90 % intervals of phi and every SD")
    parser.add_argument("--datasets", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--prior", help="a prior family to compare; not recorded")
    args = parser.parse_args()
    with ProcessPoolExecutor(max_workers=args.processes) as pool:  # one dataset per task, each sampled on one core
        results = pd.concat(pool.map(partial(study, prior=args.prior), [[k] for k in range(args.datasets)]))
    table = coverage_table(results)
    converged = float(results["converged"].mean())
    seed_q90 = float(results["sd_seed_q90"].median())
    print(table.to_string(), f"\nconverged (R-hat, ESS, divergences): {converged:.2f}")
    print("zero-variance facet (seed): median of the 90% upper bound of its SD:", seed_q90)
    if args.prior is None:
        write_record("bayes_calibration", SOURCES, {
            "datasets": args.datasets, "truth_variances": TRUTH, "coverage_90": table["coverage_90"].to_dict(),
            "converged": converged, "seed_sd_q90_median": seed_q90})
    return 0


if __name__ == "__main__":
    sys.exit(main())
