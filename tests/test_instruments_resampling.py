"""Resampling tests against exact enumeration and simulation with known truth."""

import itertools

import numpy as np
import pytest
from scipy import stats

from bayesrepro.errors import BayesreproError
from bayesrepro.instruments.resampling import (multi_bootstrap_test, paired_bootstrap_test,
                                               permutation_test)
from bayesrepro.instruments.systems import pick_systems, system_scores


def ratio_metric(rows):
    """Corpus-level metric from per-item sufficient statistics (errors, length)."""
    return rows[:, 0].sum() / rows[:, 1].sum()


def within_mc_error(estimate, exact, n_resamples):
    # 4.5 binomial standard errors: a false alarm has probability below 1e-5
    se = np.sqrt(exact * (1 - exact) / n_resamples)
    return abs(estimate - exact) <= 4.5 * se + 1.0 / n_resamples


def exact_permutation_p(a, b, metric):
    observed = metric(a) - metric(b)
    extreme = 0
    flips = list(itertools.product([False, True], repeat=len(a)))
    for flip in flips:
        swap = np.array(flip).reshape((len(a),) + (1,) * (a.ndim - 1))
        stat = metric(np.where(swap, b, a)) - metric(np.where(swap, a, b))
        extreme += abs(stat) >= abs(observed) - 1e-12
    return extreme / len(flips)


def exact_bootstrap_p(a, b, metric):
    observed = metric(a) - metric(b)
    n = len(a)
    extreme = total = 0
    for idx in itertools.product(range(n), repeat=n):
        idx = list(idx)
        stat = metric(a[idx]) - metric(b[idx])
        extreme += abs(stat - observed) >= abs(observed) - 1e-12
        total += 1
    return extreme / total


@pytest.mark.parametrize("metric", [None, lambda r: r.mean()])
def test_permutation_matches_full_enumeration(metric):
    rng = np.random.default_rng(11)
    a = rng.normal(0.3, 1, 10)
    b = rng.normal(0.0, 1, 10)
    exact = exact_permutation_p(a, b, np.mean)
    R = 20_000
    result = permutation_test(a, b, metric, n_resamples=R, seed=5)
    assert 0.02 < exact < 0.98  # a case where the p-value is informative
    assert within_mc_error(result.p_value, exact, R)


def test_permutation_with_corpus_metric_matches_enumeration():
    rng = np.random.default_rng(3)
    length = rng.integers(5, 30, 9).astype(float)
    a = np.column_stack([rng.binomial(length.astype(int), 0.35), length])
    b = np.column_stack([rng.binomial(length.astype(int), 0.25), length])
    exact = exact_permutation_p(a, b, ratio_metric)
    R = 20_000
    result = permutation_test(a, b, ratio_metric, n_resamples=R, seed=1)
    assert result.statistic == pytest.approx(ratio_metric(a) - ratio_metric(b))
    assert within_mc_error(result.p_value, exact, R)


@pytest.mark.parametrize("metric", [None, lambda r: r.mean()])
def test_bootstrap_matches_full_enumeration(metric):
    a = np.array([0.9, 0.4, 0.7, 0.2, 0.8])
    b = np.array([0.5, 0.5, 0.3, 0.4, 0.3])
    exact = exact_bootstrap_p(a, b, np.mean)
    R = 20_000
    result = paired_bootstrap_test(a, b, metric, n_resamples=R, seed=2)
    assert within_mc_error(result.p_value, exact, R)


def test_multi_bootstrap_matches_full_enumeration():
    a = np.array([[0.9, 0.4, 0.7, 0.3], [0.8, 0.5, 0.6, 0.2]])
    b = np.array([[0.5, 0.6, 0.3, 0.4], [0.2, 0.7, 0.5, 0.3]])
    observed = a.mean() - b.mean()
    extreme = total = 0
    for idx in itertools.product(range(4), repeat=4):
        for ja in itertools.product(range(2), repeat=2):
            for jb in itertools.product(range(2), repeat=2):
                stat = a[list(ja)][:, list(idx)].mean() - b[list(jb)][:, list(idx)].mean()
                extreme += abs(stat - observed) >= abs(observed) - 1e-12
                total += 1
    exact = extreme / total
    R = 20_000
    for metric in (None, lambda r: r.mean()):
        result = multi_bootstrap_test(a, b, metric, n_resamples=R, seed=4)
        assert result.statistic == pytest.approx(observed)
        assert within_mc_error(result.p_value, exact, R)


def test_add_one_convention_and_its_standard_error():
    a = np.linspace(1, 2, 50)
    b = a - 1.0  # a wins on every item by the same margin: no resample is as extreme
    R = 499
    for test in (paired_bootstrap_test, permutation_test):
        result = test(a, b, n_resamples=R, seed=0)
        assert result.n_extreme == 0
        assert result.p_value == pytest.approx(1 / (R + 1))
        p = 1 / (R + 1)
        assert result.mc_standard_error == pytest.approx(np.sqrt(p * (1 - p) / R))


def test_one_sided_alternatives_point_the_right_way():
    rng = np.random.default_rng(8)
    b = rng.normal(0, 1, 80)
    a = b + 0.4 + rng.normal(0, 0.5, 80)
    for test in (paired_bootstrap_test, permutation_test):
        assert test(a, b, n_resamples=999, seed=1, alternative="greater").p_value < 0.01
        assert test(a, b, n_resamples=999, seed=1, alternative="less").p_value > 0.9


def test_same_seed_same_answer_and_different_seed_differs():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=40), rng.normal(size=40)
    first = permutation_test(a, b, n_resamples=2000, seed=7)
    assert permutation_test(a, b, n_resamples=2000, seed=7) == first
    assert permutation_test(a, b, n_resamples=2000, seed=8).n_extreme != first.n_extreme


def null_p_values(test, n_datasets, n_items, n_resamples, seed):
    rng = np.random.default_rng(seed)
    p = np.empty(n_datasets)
    for k in range(n_datasets):
        item = rng.normal(0, 1, n_items)  # shared item difficulty, as in real evaluations
        a = item + rng.normal(0, 0.5, n_items)
        b = item + rng.normal(0, 0.5, n_items)
        p[k] = test(a, b, n_resamples=n_resamples, seed=int(rng.integers(1 << 31))).p_value
    return p


def assert_uniform_enough(p, level=0.05):
    n = len(p)
    # rejection count within the central 99.9 % of Binomial(n, level)
    low, high = stats.binom.ppf([0.0005, 0.9995], n, level)
    assert low <= np.sum(p <= level) <= high
    assert stats.kstest(p, "uniform").pvalue > 0.001


@pytest.mark.parametrize("test", [permutation_test, paired_bootstrap_test])
def test_null_p_values_are_near_uniform(test):
    assert_uniform_enough(null_p_values(test, n_datasets=300, n_items=60, n_resamples=199, seed=21))


@pytest.mark.slow
@pytest.mark.parametrize("test", [permutation_test, paired_bootstrap_test])
def test_null_p_values_are_near_uniform_large(test):
    p = null_p_values(test, n_datasets=3000, n_items=100, n_resamples=999, seed=22)
    assert_uniform_enough(p, 0.05)
    assert_uniform_enough(p, 0.01)


@pytest.mark.parametrize("test", [permutation_test, paired_bootstrap_test])
def test_strong_effect_gives_small_p(test):
    rng = np.random.default_rng(5)
    item = rng.normal(0, 1, 100)
    a = item + 0.5 + rng.normal(0, 0.5, 100)
    b = item + rng.normal(0, 0.5, 100)
    assert test(a, b, n_resamples=999, seed=3).p_value <= 0.002


def test_multi_bootstrap_null_and_effect():
    rng = np.random.default_rng(9)
    p = []
    for _ in range(150):
        item = rng.normal(0, 1, 50)
        a = item + rng.normal(0, 0.3, (3, 1)) + rng.normal(0, 0.5, (3, 50))
        b = item + rng.normal(0, 0.3, (3, 1)) + rng.normal(0, 0.5, (3, 50))
        p.append(multi_bootstrap_test(a, b, n_resamples=199, seed=int(rng.integers(1 << 31))).p_value)
    # with 3 instances per system the seed bootstrap is rough: only check it is not wildly liberal
    assert np.mean(np.array(p) <= 0.05) <= stats.binom.ppf(0.9995, 150, 0.05) / 150 + 0.05
    a = rng.normal(0, 1, 50) + 1.0 + rng.normal(0, 0.1, (3, 50))
    b = a - 1.0 + rng.normal(0, 0.1, (3, 50))
    assert multi_bootstrap_test(a, b, n_resamples=999, seed=1).p_value <= 0.002


@pytest.mark.parametrize("call, match", [
    (lambda: paired_bootstrap_test([1, 2, 3], [1, 2]), "shape"),
    (lambda: permutation_test([1, 2, 3], [1, 2, 4], n_resamples=0), "resamples"),
    (lambda: permutation_test([1, np.nan, 3], [1, 2, 4]), "missing"),
    (lambda: permutation_test(np.ones((3, 2)), np.ones((3, 2))), "metric"),
    (lambda: permutation_test([1, 2, 3], [1, 2, 4], metric=lambda r: 1 / 0), "ZeroDivisionError"),
    (lambda: permutation_test([1, 2, 3], [1, 2, 4], metric=lambda r: r), "one finite number"),
    (lambda: permutation_test([1, 2, 3], [1, 2, 4], alternative="bigger"), "alternative"),
    (lambda: multi_bootstrap_test(np.ones((2, 3)), np.ones((2, 4))), "same items"),
])
def test_bad_input_is_one_line_error(call, match):
    with pytest.raises(BayesreproError, match=match):
        call()


def test_system_scores_pick_the_best_instance(ter):
    blocks = system_scores(ter, "sentence_id", "system", "ter", "replication")
    assert set(blocks) == {"Baseline", "Marking", "PostEdit"}
    means = ter.groupby(["system", "replication"], observed=True)["ter"].mean()
    for name, block in blocks.items():
        assert block.scores.shape == (means[name].size, 1041)
        best, scores = block.best_instance(lower_is_better=True)
        assert best == str(means[name].idxmin())
        assert scores.mean() == pytest.approx(means[name].min())


def test_system_scores_refuse_unmatched_and_repeated_items(ter):
    with pytest.raises(BayesreproError, match="--instance"):
        system_scores(ter, "sentence_id", "system", "ter")
    partial = ter[~((ter["system"] == "Marking") & (ter["sentence_id"] == "0_0"))]
    with pytest.raises(BayesreproError, match="no score for 1 of the 1041"):
        system_scores(partial, "sentence_id", "system", "ter", "replication")
    blocks = system_scores(ter, "sentence_id", "system", "ter", "replication")
    with pytest.raises(BayesreproError, match="Nope"):
        pick_systems(blocks, "Baseline", "Nope")
