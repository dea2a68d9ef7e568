"""Newton steps on central differences (``stencil_newton.py``) and their place in ``bounded_minimum``."""

from pathlib import Path

import numpy as np
import pytest

from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame
from bayesrepro.design.formula import parse_formula
from bayesrepro.frequentist import block_factor, bounded_search, sparse_deviance, stencil_newton
from bayesrepro.frequentist.bounded_search import bounded_minimum
from bayesrepro.frequentist.general_lmm import fit_general_frame
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.frequentist.sparse_factor import Factoriser
from bayesrepro.simulate import simulate_crowd


class Counted:
    """A smooth criterion in θ with a known minimiser, counting its evaluations (no exact gradient)."""

    def __init__(self, minimiser, free=()):
        self.minimiser = np.asarray(minimiser, dtype=float)
        self.free = np.asarray(free, dtype=bool) if len(free) else np.zeros(len(minimiser), dtype=bool)
        self.calls = 0

    def __call__(self, theta):
        self.calls += 1
        theta = np.asarray(theta, dtype=float)
        if np.any(theta[~self.free] <= 0):
            return np.inf
        # in u = log θ (θ where free): a quadratic with correlated terms plus cubic and quartic terms, minimum at 0
        d = np.where(self.free, theta - self.minimiser, np.log(np.where(self.free, 1.0, theta / self.minimiser)))
        coupling = np.array([[40.0, 12.0, 0.0], [12.0, 25.0, -5.0], [0.0, -5.0, 30.0]])[:len(d), :len(d)]
        return 1e4 + d @ coupling @ d + 8.0 * np.sum(d ** 3) + 3.0 * np.sum(d ** 4)


@pytest.mark.parametrize("minimiser, start, free", [
    ([0.9, 0.45], [1.0, 0.6], ()),
    ([2.0, 0.05, 0.7], [1.5, 0.08, 1.0], ()),
    ([0.8, 0.3, -0.4], [1.0, 0.35, 0.0], (False, False, True)),   # an off-diagonal element of Λθ, no bound
])
def test_the_search_reaches_a_known_interior_minimum(minimiser, start, free):
    objective = Counted(minimiser, free)
    bounded = ~objective.free
    theta, value, gradient = stencil_newton.stencil_newton(objective, np.array(start), bounded, 1e-6)
    assert theta == pytest.approx(minimiser, rel=1e-7, abs=1e-9)
    assert value == pytest.approx(1e4, abs=1e-9)
    assert np.abs(gradient).max() < 1e-6
    assert objective.calls < 40


def test_a_component_heading_for_zero_is_left_to_l_bfgs_b(monkeypatch):
    """A minimum on the boundary: the stencil search gives up, L-BFGS-B finds θ₂ = 0 and the test passes."""
    def objective(theta):
        theta = np.asarray(theta, dtype=float)
        return 1e3 + 5.0 * (theta[0] - 0.7) ** 2 + 3.0 * (theta[1] + 0.2) ** 2 + theta[0] * theta[1]

    diagonal = np.array([True, True])
    assert stencil_newton.stencil_newton(objective, np.array([1.0, 0.5]), diagonal, 1e-4) is None
    tried = []
    search = bounded_search._search
    monkeypatch.setattr(bounded_search, "_search", lambda *a, **k: tried.append(1) or search(*a, **k))
    theta, converged, message = bounded_minimum(objective, np.array([1.0, 0.5]), diagonal, stencil=True)
    assert tried and converged, message
    assert theta == pytest.approx([0.7, 0.0], abs=1e-6)


@pytest.mark.parametrize("method", ["reml", "ml"])
def test_a_skewed_crowd_on_the_sparse_core_without_an_exact_gradient_matches_the_dense_path(method, monkeypatch):
    """The crowd designs' route: items eliminated, SuperLU on the raters, no exact gradient, so the stencil search;
    it ends without L-BFGS-B and agrees with the dense-Schur path (``deviance.py``, exact gradient). 1,500 raters
    are beyond the dense factor of the Schur complement: SuperLU factorises it, a column at a time (thin factor)."""
    monkeypatch.setattr(block_factor, "COUPLING_LIMIT", 0)   # the raters' coupling is not held densely
    crowd, _ = simulate_crowd(6_000, 3_000, 1_500, skew=1.0, random_state=8)
    frame = build_model_frame("score ~ 1 + (1|item) + (1|rater)", crowd)
    searched = []
    found = bounded_search.stencil_newton
    monkeypatch.setattr(bounded_search, "stencil_newton", lambda *a: searched.append(found(*a)) or searched[-1])
    monkeypatch.setattr(bounded_search, "_search", lambda *a, **k: pytest.fail("L-BFGS-B was needed"))
    factorisers = []
    factorise = Factoriser._factorise
    monkeypatch.setattr(Factoriser, "_factorise", lambda self, a: factorisers.append(self) or factorise(self, a))
    dense, sparse = fit_model_frame(frame, method), fit_general_frame(frame, method)
    assert searched and searched[-1] is not None
    assert factorisers and all(f._order is not None and f._panel == 1 for f in factorisers)
    assert sparse.converged and dense.converged
    assert sparse.criterion == pytest.approx(dense.criterion, abs=1e-6)
    for component, variance in dense.variances.items():
        assert sparse.variances[component] == pytest.approx(variance, rel=1e-5), component
    assert sparse.beta == pytest.approx(dense.beta, rel=1e-6, abs=1e-8)


@pytest.mark.parametrize("method", ["reml", "ml"])
def test_correlated_slopes_without_an_exact_gradient_reach_the_exact_gradients_optimum(method, monkeypatch):
    """sleepstudy's (Days|Subject) with the dense system and the blockwise path turned off: no exact gradient, an
    off-diagonal element of Λθ without a bound, and a first step from lme4's start long enough that the secant
    update leaves the Hessian indefinite (the mixed differences are taken again). Against the same fit with its
    exact gradient."""
    frame = build_model_frame(parse_formula("Reaction ~ Days + (Days|Subject)", slopes=True),
                              read_table(Path(__file__).parent / "data" / "sleepstudy.csv.gz"))
    exact = fit_general_frame(frame, method)
    monkeypatch.setattr(sparse_deviance, "DENSE_COLUMNS", 0)
    monkeypatch.setattr(sparse_deviance, "block_eliminable", lambda *sizes: False)
    searched = []
    found = bounded_search.stencil_newton
    monkeypatch.setattr(bounded_search, "stencil_newton", lambda *a: searched.append(found(*a)) or searched[-1])
    monkeypatch.setattr(bounded_search, "_search", lambda *a, **k: pytest.fail("L-BFGS-B was needed"))
    differenced = fit_general_frame(frame, method)
    assert searched and searched[-1] is not None and differenced.converged
    assert differenced.criterion == pytest.approx(exact.criterion, abs=1e-8)
    assert differenced.theta == pytest.approx(exact.theta, rel=1e-5, abs=1e-7)
