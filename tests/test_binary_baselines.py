"""The field's usual error bars for 0/1 scores: formulas against statsmodels, and their calibration by simulation.

The simulated benchmarks have the sizes users have: 300 items, 5 runs (seeds or samples) per item and
system. Rates from R replicates carry the binomial Monte-Carlo error sqrt(r(1 - r)/R), 0.0049 for a
5 % rate and 2,000 replicates; the bands below are about three of those.
"""

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from bayesrepro.errors import BayesreproError
from bayesrepro.instruments.binary_baselines import (
    binary_baselines,
    clustered_standard_error,
    mcnemar_test,
    paired_difference,
    wilson_interval,
)
from bayesrepro.simulate import binary_grid


def test_wilson_interval_is_statsmodels():
    for successes, trials in [(0, 20), (7, 20), (180, 200), (20, 20)]:
        np.testing.assert_allclose(wilson_interval(successes, trials), proportion_confint(successes, trials, method="wilson"))


def test_clustered_standard_error_is_the_cluster_robust_sandwich():
    rng = np.random.default_rng(1)
    clusters = np.repeat(np.arange(40), 5)
    scores = (rng.random(200) < 0.3 + 0.4 * rng.random(40)[clusters]).astype(float)
    robust = sm.OLS(scores, np.ones(200)).fit(cov_type="cluster", cov_kwds={
        "groups": clusters, "use_correction": False, "df_correction": False})
    assert clustered_standard_error(scores, clusters) == pytest.approx(float(robust.bse[0]))


def test_mcnemar_is_the_exact_binomial_test_of_discordant_items():
    rng = np.random.default_rng(2)
    a, b = rng.random(150) < 0.6, rng.random(150) < 0.5
    table = pd.crosstab(a, b).to_numpy()
    result = mcnemar_test(a, b)
    assert (result["a_only"], result["b_only"]) == (table[1, 0], table[0, 1])
    assert result["p"] == pytest.approx(mcnemar(table, exact=True).pvalue)


def test_paired_difference_is_the_one_sample_z_test_of_item_differences():
    a, b = np.array([1.0, 0.8, 0.6, 1.0, 0.4]), np.array([0.8, 0.8, 0.2, 0.6, 0.4])
    result = paired_difference(a, b)
    d = a - b
    assert result["estimate"] == pytest.approx(d.mean())
    assert result["std_error"] == pytest.approx(d.std(ddof=1) / np.sqrt(5))


def test_table_of_a_grid_and_mcnemar_only_with_one_run():
    data = binary_grid(items=50, seeds=2, prompts=2, random_state=4)
    report = binary_baselines(data, "correct", "item", "system")
    assert list(report.systems["system"]) == ["A", "B", "C"] and set(report.systems["rows"]) == {200}
    assert report.pairs["mcnemar_p"].isna().all() and any("one run of each system" in n for n in report.notes)
    single = binary_baselines(data[(data.seed == 1) & (data.prompt == "p1")], "correct", "item", "system")
    assert single.pairs["mcnemar_p"].notna().all() and not single.notes


def test_non_binary_scores_are_refused():
    data = pd.DataFrame({"item": list("aabb"), "system": list("xyxy"), "score": [0.5, 1, 0, 1]})
    with pytest.raises(BayesreproError, match="must hold 0/1 scores"):
        binary_baselines(data, "score", "item", "system")


def _simulated_scores(rng, items, runs, item_sd, run_sd, shift, intercept=0.8):
    """0/1 scores of two systems on the same items; each system's runs (seeds) have their own effects."""
    item_effect = rng.normal(0, item_sd, items)[:, None]
    scores = []
    for system_shift in (0.0, shift):
        eta = intercept + system_shift + item_effect + rng.normal(0, run_sd, runs)[None, :]
        scores.append(rng.random((items, runs)) < 1 / (1 + np.exp(-eta)))
    return scores


def _population_accuracy(intercept, item_sd, run_sd, nodes=60):
    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    sd = np.hypot(item_sd, run_sd)
    return float(w @ (1 / (1 + np.exp(-(intercept + sd * z)))) / w.sum())


@pytest.mark.slow
def test_calibration_without_run_effects():
    """Items are the only clustering: clustered intervals cover, the paired test holds its level, Wilson does not."""
    rng = np.random.default_rng(2024)
    replicates, items, runs = 2000, 300, 5
    truth = _population_accuracy(0.8, 1.5, 0.0)
    wilson = clustered = paired = exact = 0
    for _ in range(replicates):
        a, b = _simulated_scores(rng, items, runs, 1.5, 0.0, 0.0)
        low, high = wilson_interval(a.sum(), a.size)
        wilson += low <= truth <= high
        se = clustered_standard_error(a.ravel(), np.repeat(np.arange(items), runs))
        clustered += abs(a.mean() - truth) <= 1.959964 * se
        paired += paired_difference(a.mean(axis=1), b.mean(axis=1))["p"] < 0.05
        exact += mcnemar_test(a[:, 0], b[:, 0])["p"] < 0.05
    # measured: clustered coverage 0.946, paired type-I error 0.046, McNemar 0.038
    assert 0.935 <= clustered / replicates <= 0.965
    assert 0.035 <= paired / replicates <= 0.065
    assert exact / replicates <= 0.065          # exact McNemar is conservative, never liberal
    assert wilson / replicates < 0.90           # measured 0.83: 5 correlated rows of an item are not 5 trials


@pytest.mark.slow
def test_the_paired_test_ignores_seed_variation():
    """With a run effect per system (seed SD 0.2 on the logit scale), the per-item tests reject far too often."""
    rng = np.random.default_rng(7)
    replicates, items, runs = 1000, 300, 5
    rejected = sum(paired_difference(*(s.mean(axis=1) for s in _simulated_scores(rng, items, runs, 1.5, 0.2, 0.0)))["p"]
                   < 0.05 for _ in range(replicates))
    # measured 0.26, five times the nominal 5 %: the seeds' variation is invisible to a test of item differences
    assert rejected / replicates > 0.15
