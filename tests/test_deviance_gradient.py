"""The exact gradient of the profiled criterion against central finite differences.

Two designs exercise the two ways the dominant factor's coupling is handled:
a dense one (a few small facets beside the items) and a sparse one (two
large crossed factors, each pair rarely observed, unequal counts).
"""

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

from bayesrepro.design import build_model_frame
from bayesrepro.design import gaussian_stats
from bayesrepro.frequentist.deviance import ProfiledDeviance


def dense_design(rng):
    items, seeds, rates = np.meshgrid(np.arange(60), np.arange(3), np.arange(4), indexing="ij")
    data = pd.DataFrame({"item": items.ravel(), "seed": seeds.ravel(), "lr": rates.ravel()})
    data["x"] = rng.normal(size=len(data))
    data["y"] = (rng.normal(size=60)[data.item] + 0.3 * rng.normal(size=3)[data.seed]
                 + 0.5 * rng.normal(size=4)[data.lr] + 0.2 * data.x + rng.normal(scale=0.5, size=len(data)))
    return data.astype({"item": str, "seed": str, "lr": str}), "y ~ 1 + x + (1|item) + (1|seed) + (1|lr)"


def sparse_design(rng):
    n = 6000
    students = rng.integers(0, 1500, n)
    lecturers = rng.zipf(1.6, n) % 400  # very unequal counts, as in course evaluations
    data = pd.DataFrame({"student": students, "lecturer": lecturers, "dept": lecturers % 7})
    data["y"] = (rng.normal(size=1500)[students] + 0.7 * rng.normal(size=400)[lecturers]
                 + 0.3 * rng.normal(size=7)[data.dept] + rng.normal(size=n))
    data = data.astype({"student": str, "lecturer": str, "dept": str})
    return data, "y ~ 1 + (1|student) + (1|lecturer) + (1|dept)"


@pytest.mark.parametrize("design", [dense_design, sparse_design])
@pytest.mark.parametrize("reml", [True, False])
def test_exact_gradient_matches_central_differences(design, reml):
    data, formula = design(np.random.default_rng(7))
    cross = gaussian_stats(build_model_frame(formula, data))
    if design is sparse_design:
        assert sp.issparse(cross.cross), "the sparse design must take the sparse coupling path"
    objective = ProfiledDeviance(cross, reml=reml)
    for theta in (np.full(objective.n_theta, 0.8), np.linspace(0.2, 1.5, objective.n_theta)):
        _, gradient = objective.value_and_gradient(theta)
        h = 1e-5
        numeric = np.array([
            (objective(theta + h * e) - objective(theta - h * e)) / (2 * h) for e in np.eye(len(theta))
        ])
        # central differences err by O(h²·f''') plus rounding ~1e-16·|f|/h; the criterion is ~1e4 here
        np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-4)
