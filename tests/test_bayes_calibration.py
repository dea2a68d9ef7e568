"""Calibration: 90 % intervals against the known components of simulated data.

Design like the papers' meta-parameter grids: 150 items fully crossed with
three meta-parameter facets of 2, 3 and 4 levels (24 configurations), one of
them of zero variance. Every dataset is fitted with the default priors.

A zero variance cannot lie inside a central interval of a positive
parameter, so for that facet the one-sided 90 % interval [0, q90] is
scored instead. Run as a script to print the coverage table:
    python tests/test_bayes_calibration.py [n_datasets]
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest

TRUTH = {"item": 0.04, "seed": 0.0, "lr": 0.01, "dropout": 0.002, "Residual": 0.01}  # variances
LEVELS = {"item": 150, "seed": 3, "lr": 4, "dropout": 2}
FORMULA = "score ~ 1 + (1|item) + (1|seed) + (1|lr) + (1|dropout)"


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


def study(n_datasets: int, seed: int = 20231) -> pd.DataFrame:
    from bayesrepro.bayes import fit_bayes

    rng = np.random.default_rng(seed)
    total = sum(TRUTH.values())
    rows = []
    for k in range(n_datasets):
        data = simulate(rng)
        fit = fit_bayes(FORMULA, data, object="item", draws=500, tune=500, chains=2, cores=2, seed=k,
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


@pytest.mark.slow
def test_intervals_of_phi_and_every_sd_cover_the_truth_at_the_nominal_rate():
    results = study(100)
    table = coverage_table(results)
    # 90 % nominal; with 100 datasets the binomial SD is 3 points: 85–95 % is ±1.7 SD
    assert table["coverage_90"].between(0.85, 0.95).all(), table


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    results = study(n)
    results.to_csv("/tmp/bayes_calibration.csv", index=False)
    print(coverage_table(results).to_string())
    print("converged:", results["converged"].mean())
    print("zero facet: median q90 of its SD:", results["sd_seed_q90"].median())
