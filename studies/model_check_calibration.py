"""Calibration of the model checks (``Fit.check``): how often they reject correct models, how often they catch
wrong ones.

Leaderboard design: 40 items × 2 systems × 3 seeds (240 rows), item SD 1, system effect 0.5, Gaussian
residual SD 0.7 (or 0/1 scores on the logit scale). Scenarios:

- ``gaussian`` and ``binary``: the correct model ``y ~ system + (1|item)`` of data whose seeds are
  exchangeable runs (no seed effect); the figure is the share of data sets whose quantile residuals reject
  uniformity at 5 % (target 3–7 %), with the share any test flags (Holm, 5 %) beside it.
- ``gaussian_seeds`` and ``binary_seeds``: seeds with an effect (SD 0.3) and the correct model
  ``y ~ system + (1|item) + (1|seed)``, a factor of 3 levels whose variance is estimated badly.

Binary data sets are simulated with their fixed part set so that the expected successes of every
fixed-design column equal the observed ones, as the ML fit sets them for the observed scores
(``model_checks.simulation``); simulated around Xβ̂ alone, the uniformity test rejected 1.0–1.5 % of correct
binary models.
- ``binary_as_gaussian``: 0/1 scores fitted as Gaussian (``family="gaussian"``), seeds with an effect.
- ``missing_slope``: the system effect varies by item (slope SD 1; ``(1 + system | item)`` in truth), seeds with
  an effect, fitted without the slope.
- ``missing_day_slope``: sleepstudy's design (18 subjects × 10 days, ``simulate.repeated_measures``), fitted
  as ``y ~ day + (1|subject)``.

For the misspecified scenarios the figure is the share of data sets any test flags (target ≥ 80 %).

The posterior's check (``Posterior.check``; sampled with 2 chains of 500 draws after 500 tuning steps):

- ``gaussian_posterior``: the correct model ``y ~ system + (1|item)`` as in ``gaussian``; beside the rates above,
  ``loo_pit_rejects``, the share of data sets whose LOO-PIT values reject uniformity at 5 % (Kolmogorov's
  reference; unadjusted), and ``pareto_k_above_0_7``, the mean share of values with unreliable PSIS weights.
- ``binary_as_gaussian_posterior``: 0/1 scores of that design fitted as Gaussian (no seed effect).
- ``binary_posterior``: the correct Bernoulli model of those 0/1 scores; its LOO-PIT values are randomized PITs.

Every check reads 250 simulated data sets. The plain KS p-value of the quantile residuals (Kolmogorov's reference,
as if the residuals were independent) is recorded beside the Monte-Carlo one. Writes
``studies/results/model_check_calibration.json``:

    python studies/model_check_calibration.py [--datasets 200] [--processes 1]
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

ITEMS, SYSTEMS, SEEDS = 40, 2, 3
ITEM_SD, SEED_SD, EFFECT, RESIDUAL_SD, SLOPE_SD = 1.0, 0.3, 0.5, 0.7, 1.0
LEADERBOARD = "y ~ system + (1|item) + (1|seed)"
RUNS = "y ~ system + (1|item)"
SCENARIOS = {"gaussian": "correct", "binary": "correct", "gaussian_seeds": "correct", "binary_seeds": "correct",
             "binary_as_gaussian": "wrong", "missing_slope": "wrong", "missing_day_slope": "wrong",
             "gaussian_posterior": "correct", "binary_as_gaussian_posterior": "wrong", "binary_posterior": "correct"}
SAMPLING = {"draws": 500, "tune": 500, "chains": 2}
SIMULATIONS = 250
# what the figures depend on: the study, the checks, the simulation of responses and the test data's simulator
SOURCES = ["studies/model_check_calibration.py", "bayesrepro/model_checks/*.py",
           "bayesrepro/frequentist/prediction.py", "bayesrepro/simulate.py", "bayesrepro/bayes/*.py"]
SEED = 20261128


def leaderboard(rng: np.random.Generator, binary: bool, slope_sd: float = 0.0, seed_sd: float = SEED_SD) -> pd.DataFrame:
    """One data set of the leaderboard design (see the module)."""
    item = np.repeat(np.arange(ITEMS), SYSTEMS * SEEDS)
    system = np.tile(np.repeat(np.arange(SYSTEMS), SEEDS), ITEMS)
    seed = np.tile(np.arange(SEEDS), SYSTEMS * ITEMS)
    eta = (EFFECT * system + rng.normal(0, ITEM_SD, ITEMS)[item] + rng.normal(0, slope_sd, ITEMS)[item] * system
           + rng.normal(0, seed_sd, SEEDS)[seed])
    y = (rng.random(len(eta)) < 1 / (1 + np.exp(-eta))).astype(float) if binary \
        else eta + rng.normal(0, RESIDUAL_SD, len(eta))
    return pd.DataFrame({"y": y, "item": np.char.add("i", item.astype(str)),
                         "system": np.where(system == 1, "b", "a"), "seed": np.char.add("s", seed.astype(str))})


def data_and_model(scenario: str, k: int):
    import bayesrepro as br
    from bayesrepro.simulate import repeated_measures

    rng = np.random.default_rng([SEED, k, list(SCENARIOS).index(scenario)])
    if scenario == "missing_day_slope":
        return br.Model("y ~ day + (1|subject)", repeated_measures(random_state=rng))
    binary = scenario.startswith("binary")
    if scenario in ("gaussian", "binary", "gaussian_posterior", "binary_posterior"):
        return br.Model(RUNS, leaderboard(rng, binary, seed_sd=0.0))
    if scenario == "binary_as_gaussian_posterior":
        return br.Model(RUNS, leaderboard(rng, True, seed_sd=0.0), family="gaussian")
    data = leaderboard(rng, binary, slope_sd=SLOPE_SD if scenario == "missing_slope" else 0.0)
    return br.Model(LEADERBOARD, data, family="gaussian" if scenario == "binary_as_gaussian" else "auto")


def check_one(job: tuple[str, int]) -> dict:
    import warnings

    from scipy.stats import kstest

    scenario, k = job
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # singular fits of the 3 seeds are expected and do not matter here
        model = data_and_model(scenario, k)
        if scenario.endswith("_posterior"):
            check = model.sample(**SAMPLING, seed=k, allow_unconverged=True).check(seed=k, simulations=SIMULATIONS)
        else:
            check = model.fit().check(seed=k, simulations=SIMULATIONS)
    tests = check.tests
    uniformity = tests[tests["test"] == "uniformity"].iloc[0]
    row = {"scenario": scenario, "dataset": k, "uniformity_rejects": bool(uniformity["p"] < 0.05),
           "kolmogorov_rejects": bool(kstest(check.residuals["quantile"], "uniform").pvalue < 0.05),
           "flagged": check.flagged}
    if scenario.endswith("_posterior"):
        loo = next(t for t in check.to_dict()["tests"] if t["test"] == "LOO-PIT uniformity")
        row["loo_pit_rejects"] = bool(loo["p"] < 0.05)
        row["pareto_k_above_0_7"] = loo["pareto_k_above_0_7"] / len(check.residuals)
    for _, test in tests.iterrows():
        name = f"{test['test']} ({test['group']})" if isinstance(test["group"], str) else test["test"]
        row[f"flags {name}"] = bool(test["flagged"])
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description="rejection rates of the model checks on correct and wrong models")
    parser.add_argument("--datasets", type=int, default=200)
    parser.add_argument("--processes", type=int, default=1)
    args = parser.parse_args()
    jobs = [(scenario, k) for scenario in SCENARIOS for k in range(args.datasets)]
    with ProcessPoolExecutor(max_workers=args.processes) as pool:
        results = pd.DataFrame(list(pool.map(check_one, jobs, chunksize=10)))
    flags = [column for column in results if column.startswith("flags ") or column == "loo_pit_rejects"]
    results[flags] = results[flags].astype(float)     # a test a scenario does not have: NaN, not a rate
    rates = results.groupby("scenario", sort=False).mean(numeric_only=True).drop(columns="dataset")
    print(rates.T.to_string(float_format=lambda v: f"{v:.3f}"))
    figures = {"datasets": args.datasets, "simulations": SIMULATIONS,
               "design": {"items": ITEMS, "systems": SYSTEMS, "seeds": SEEDS, "formulas": [RUNS, LEADERBOARD],
                          "item_sd": ITEM_SD, "seed_sd": SEED_SD, "effect": EFFECT, "residual_sd": RESIDUAL_SD,
                          "slope_sd": SLOPE_SD, "sampling": SAMPLING},
               "scenarios": {name: {"model": SCENARIOS[name],
                                    **{column: float(value) for column, value in rates.loc[name].dropna().items()}}
                             for name in SCENARIOS}}
    write_record("model_check_calibration", SOURCES, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
