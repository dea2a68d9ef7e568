"""The exact gradient of the sparse Laplace criterion (binary crowd and slope fits) against central differences of
the criterion, on each way A is factorised: dense, SuperLU after eliminating the items, and a dense tail (where
no selected inverse exists and the gradient is taken by differences); Takahashi's selected inverse against a
dense inverse."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg

import pandas as pd

from bayesrepro.design import build_model_frame, parse_formula
from bayesrepro.design.random_design import random_design
from bayesrepro.frequentist import sparse_factor, sparse_laplace, split_factor
from bayesrepro.frequentist.selected_inverse import SelectedInverse
from bayesrepro.frequentist.sparse_laplace import SparseLaplaceDeviance
from bayesrepro.links import get_link, log_binomial_coefficient
from bayesrepro.simulate import simulate_crowd

CROWD = "score ~ 1 + (1|item) + (1|rater)"
# Central differences of f (about 4e3, rounded near 1e-12, its mode found to a decrement of 1e-14) with steps of
# 1e-5 are accurate to about 1e-6 in these gradients of size 10–300.
ABSOLUTE = 1e-5


def _criterion(formula, table, link="logit"):
    frame = build_model_frame(parse_formula(formula, slopes=True), table)
    trials = np.ones(frame.n_obs)
    return SparseLaplaceDeviance(random_design(frame.spec, frame.data), frame.X, frame.y, trials, get_link(link),
                                 float(log_binomial_coefficient(frame.y, trials).sum()))


def _central_differences(criterion, params, step=1e-5):
    return np.array([(criterion(params + step * e) - criterion(params - step * e)) / (2 * step)
                     for e in np.eye(len(params))])


@pytest.fixture(scope="module")
def crowd():
    table, _ = simulate_crowd(1500, 700, 300, skew=1.0, binary=True, random_state=3)
    return table


@pytest.mark.parametrize("link", ["logit", "probit"])
@pytest.mark.parametrize("dense_order", [800, 50], ids=["dense", "superlu"])
def test_crowd_gradient_matches_central_differences(crowd, link, dense_order, monkeypatch):
    monkeypatch.setattr(sparse_factor, "DENSE_ORDER", dense_order)
    criterion = _criterion(CROWD, crowd, link)
    params = np.array([0.9, 0.6, 0.1])
    value, gradient = criterion.value_and_gradient(params)
    assert criterion.exact_gradient
    assert value == pytest.approx(criterion(params), abs=1e-8)
    np.testing.assert_allclose(gradient, _central_differences(criterion, params), atol=ABSOLUTE)
    assert np.abs(gradient).max() > 1.0   # away from the optimum: the check has something to compare


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_newton_steps_preconditioned_with_the_last_factor_find_the_mode_of_factorised_steps(crowd, link,
                                                                                             monkeypatch):
    params, nearby = np.array([0.9, 0.6, 0.1]), np.array([0.8, 0.7, 0.05])

    def after_nearby():
        criterion = _criterion(CROWD, crowd, link)
        criterion.value_and_gradient(nearby)
        return criterion.value_and_gradient(params)

    preconditioned = after_nearby()

    def factorise_instead(*args, **kwargs):
        raise sparse_laplace.NotConverged
    monkeypatch.setattr(sparse_laplace, "solve_many", factorise_instead)
    factorised = after_nearby()
    assert preconditioned[0] == pytest.approx(factorised[0], rel=1e-14)
    np.testing.assert_allclose(preconditioned[1], factorised[1], rtol=1e-9)
    assert not np.array_equal(preconditioned[1], factorised[1])   # two ways of solving: not the same rounding


def test_slope_gradient_with_correlated_effects_matches_central_differences():
    rng = np.random.default_rng(4)
    groups, per_group = 40, 25
    group = np.repeat(np.arange(groups), per_group)
    x = rng.normal(size=groups * per_group)
    effects = rng.normal(size=(groups, 2)) * [1.0, 0.5]
    eta = 0.3 + 0.8 * x + effects[group, 0] + effects[group, 1] * x
    table = {"y": (rng.random(len(x)) < 1 / (1 + np.exp(-eta))).astype(float), "x": x,
             "g": [f"g{k}" for k in group]}
    criterion = _criterion("y ~ x + (x|g)", pd.DataFrame(table))
    params = np.array([0.9, 0.2, 0.4, 0.2, 0.6])   # θ: the lower triangle of the 2 × 2 factor, then β
    _, gradient = criterion.value_and_gradient(params)
    np.testing.assert_allclose(gradient, _central_differences(criterion, params), atol=ABSOLUTE)


def test_a_dense_tail_falls_back_to_differences(monkeypatch):
    monkeypatch.setattr(split_factor, "DENSE_TAIL_MIN", 100)
    table, _ = simulate_crowd(5_000, 2_000, 1_500, skew=0.0, binary=True, random_state=11)
    criterion = _criterion(CROWD, table)
    params = np.array([0.9, 0.6, 0.1])
    _, gradient = criterion.value_and_gradient(params)
    assert criterion.factorise._split is not None and not criterion.exact_gradient
    np.testing.assert_allclose(gradient, _central_differences(criterion, params), atol=1e-4)


def test_selected_inverse_matches_a_dense_inverse_on_the_factor_pattern():
    rng = np.random.default_rng(2)
    n = 300
    b = sp.random(n, n, density=0.01, random_state=rng)
    a = (b @ b.T + 0.5 * sp.eye(n)).tocsc()
    order = np.argsort(scipy.sparse.linalg.splu(a, permc_spec="MMD_AT_PLUS_A").perm_c)
    ordered = a[order][:, order].tocsc()
    lu = scipy.sparse.linalg.splu(ordered, permc_spec="NATURAL", diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    selected = SelectedInverse(sp.tril(lu.L, k=-1), lu.U.diagonal())
    pattern = (sp.tril(lu.L, k=-1) + sp.eye(n)).tocoo()
    dense = np.linalg.inv(ordered.toarray())
    assert pattern.nnz > 2 * n   # fill beyond the diagonal is checked too
    np.testing.assert_allclose(selected.at(pattern.row, pattern.col), dense[pattern.row, pattern.col], atol=1e-12)
    np.testing.assert_allclose(selected.at(pattern.col, pattern.row), dense[pattern.row, pattern.col], atol=1e-12)


def test_a_component_at_zero_takes_differences_where_the_factor_lost_its_entries(crowd, monkeypatch):
    monkeypatch.setattr(sparse_factor, "DENSE_ORDER", 50)
    criterion = _criterion(CROWD, crowd)
    criterion.value_and_gradient(np.array([0.9, 0.6, 0.1]))   # the factor's pattern and its positions, kept
    params = np.array([0.9, 0.0, 0.1])
    _, gradient = criterion.value_and_gradient(params)
    assert not criterion.exact_gradient
    np.testing.assert_allclose(gradient, _central_differences(criterion, params), atol=ABSOLUTE)
    criterion.value_and_gradient(np.array([0.9, 0.6, 0.1]))
    assert criterion.exact_gradient


def test_another_response_forgets_the_kept_mode_and_gradient(crowd):
    """The criterion of other scores (a bootstrap replicate) equals one built afresh on them, at the very point
    the first criterion last evaluated (where it keeps its mode, value and gradient)."""
    criterion = _criterion(CROWD, crowd)
    params = np.array([0.9, 0.6, 0.1])
    criterion.value_and_gradient(params)
    other = crowd.assign(score=1 - crowd["score"])
    fresh = _criterion(CROWD, other)
    replicate = criterion.with_response(fresh.y)
    value, gradient = replicate.value_and_gradient(params)
    expected_value, expected_gradient = fresh.value_and_gradient(params)
    assert value == pytest.approx(expected_value, rel=1e-12)
    assert gradient == pytest.approx(expected_gradient, rel=1e-8, abs=1e-8)
    assert criterion.value_and_gradient(params)[0] != pytest.approx(value)
