"""The sparse core's exact gradient in θ against central finite differences of its criterion."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame, parse_formula
from bayesrepro.design.random_design import random_design
from bayesrepro.frequentist import sparse_deviance
from bayesrepro.frequentist.sparse_deviance import SparseProfiledDeviance

HERE = Path(__file__).parent


def crossed_maximal(rng):
    subject, item = (a.ravel() for a in np.meshgrid(np.arange(30), np.arange(12), indexing="ij"))
    keep = rng.random(len(subject)) < 0.8   # unbalanced: a fifth of the pairs missing
    subject, item = subject[keep], item[keep]
    c = np.where((subject + item) % 2 == 0, -0.5, 0.5)
    x = rng.normal(size=len(c))
    y = (c + rng.normal(size=30)[subject] * (1 + 0.5 * c) + rng.normal(size=12)[item] * (1 - 0.3 * c)
         + 0.2 * x + rng.normal(size=len(c)))
    data = pd.DataFrame({"subject": subject.astype(str), "item": item.astype(str), "c": c, "x": x, "y": y})
    return data, "y ~ c + x + (1 + c | subject) + (1 + c + x | item)"


def crossed_independent(rng):
    data, _ = crossed_maximal(rng)
    return data, "y ~ c + (c || subject) + (1 | item)"   # one-column terms, two of them on one factor


def sleepstudy(_rng):
    return read_table(HERE / "data" / "sleepstudy.csv.gz"), "Reaction ~ Days + (Days|Subject)"


def criterion_of(data, formula, reml):
    frame = build_model_frame(parse_formula(formula, slopes=True), data)
    return SparseProfiledDeviance(random_design(frame.spec, frame.data), frame.X, frame.y, reml=reml)


@pytest.mark.parametrize("dense", [True, False], ids=["dense", "blockwise"])
@pytest.mark.parametrize("design", [crossed_maximal, crossed_independent, sleepstudy])
@pytest.mark.parametrize("reml", [True, False])
def test_exact_gradient_matches_central_differences(design, reml, dense, monkeypatch):
    if not dense:   # these designs are small enough for the dense system: force the blockwise one
        monkeypatch.setattr(sparse_deviance, "DENSE_COLUMNS", 0)
    rng = np.random.default_rng(3)
    data, formula = design(rng)
    objective = criterion_of(data, formula, reml)
    assert objective.has_exact_gradient
    assert (objective._dense is not None) == dense
    start = objective.design.start()
    # an interior point with correlations, and one with a diagonal entry of Λθ on its bound 0
    boundary = start + 0.3 * rng.normal(size=len(start)) * ~objective.design.diagonal
    boundary[np.flatnonzero(objective.design.diagonal)[-1]] = 0.0
    for theta in (start * 0.7 + 0.2 * rng.normal(size=len(start)) * ~objective.design.diagonal, boundary):
        value, gradient = objective.value_and_gradient(theta)
        assert value == pytest.approx(objective(theta), rel=1e-12)
        h = 1e-5
        numeric = np.array([(objective(theta + h * e) - objective(theta - h * e)) / (2 * h)
                            for e in np.eye(len(theta))])
        # central differences err by O(h²·f''') plus rounding ~1e-16·|f|/h; the criteria are ~1e3 here
        np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("design", [crossed_maximal, crossed_independent, sleepstudy])
@pytest.mark.parametrize("reml", [True, False])
def test_dense_and_blockwise_systems_agree(design, reml, monkeypatch):
    rng = np.random.default_rng(5)
    data, formula = design(rng)
    dense = criterion_of(data, formula, reml)
    monkeypatch.setattr(sparse_deviance, "DENSE_COLUMNS", 0)
    blockwise = criterion_of(data, formula, reml)
    theta = dense.design.start() * 0.8 + 0.2 * rng.normal(size=dense.n_theta) * ~dense.design.diagonal
    a, b = dense.solve(theta, with_gradient=True), blockwise.solve(theta, with_gradient=True)
    assert dense.criterion(a) == pytest.approx(blockwise.criterion(b), rel=1e-11)
    np.testing.assert_allclose(a.beta, b.beta, rtol=1e-9)
    np.testing.assert_allclose(a.gradient, b.gradient, rtol=1e-7, atol=1e-7)


def test_a_new_response_gives_the_criterion_of_a_fresh_construction():
    data, formula = crossed_maximal(np.random.default_rng(7))
    observed = criterion_of(data, formula, reml=False)
    other = data.assign(y=data["y"] * 2.0 + 3.0 + np.random.default_rng(8).normal(size=len(data)))
    fresh, reused = criterion_of(other, formula, reml=False), observed.with_response(other["y"].to_numpy())
    theta = observed.design.start() * 0.9
    assert reused(theta) == pytest.approx(fresh(theta), rel=1e-12)
    np.testing.assert_allclose(reused.value_and_gradient(theta)[1], fresh.value_and_gradient(theta)[1], rtol=1e-9)
    assert observed(theta) != pytest.approx(fresh(theta), rel=1e-6)   # the original keeps its own response
