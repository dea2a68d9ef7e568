"""The sparse core's exact gradient in θ against central finite differences of its criterion."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame, parse_formula
from bayesrepro.design.random_design import random_design
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


@pytest.mark.parametrize("design", [crossed_maximal, crossed_independent, sleepstudy])
@pytest.mark.parametrize("reml", [True, False])
def test_exact_gradient_matches_central_differences(design, reml):
    rng = np.random.default_rng(3)
    data, formula = design(rng)
    frame = build_model_frame(parse_formula(formula, slopes=True), data)
    objective = SparseProfiledDeviance(random_design(frame.spec, frame.data), frame.X, frame.y, reml=reml)
    assert objective.has_exact_gradient
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
