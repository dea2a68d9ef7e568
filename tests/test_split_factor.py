"""The sparse factor with a dense tail (``split_factor.py``) against a dense Cholesky factor of the same matrix."""

import numpy as np
import pytest
import scipy.sparse as sp

from bayesrepro.design import build_model_frame
from bayesrepro.frequentist import sparse_deviance, split_factor
from bayesrepro.frequentist.general_lmm import fit_general_frame
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.frequentist.sparse_factor import Factoriser
from bayesrepro.simulate import simulate_crowd


def crowd_schur(rng, raters=1000, items=2600):
    """A raters' Schur complement shaped like a crowd design's: every item scored by two random raters."""
    pairs = rng.integers(0, raters, size=(items, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    z = sp.csr_matrix((np.ones(2 * len(pairs)), (np.repeat(np.arange(len(pairs)), 2), pairs.ravel())),
                      shape=(len(pairs), raters))
    theta_item, theta_rater = 1.3, 0.6
    d = theta_item ** 2 * 2.0 + 1.0           # an item's diagonal entry of A: two scores
    shared = (z.T @ z).tocsc()                # raters' scores and the items they share
    return (theta_rater ** 2 * sp.diags(shared.diagonal()) + sp.identity(raters)
            - (theta_rater * theta_item) ** 2 / d * shared).tocsc()


def test_a_small_tail_stays_with_superlu():
    factorise = Factoriser()
    factorise(crowd_schur(np.random.default_rng(24)))
    assert factorise._split is None   # its tail has ~300 columns, fewer than split_factor.DENSE_TAIL_MIN


def test_dense_tail_factor_matches_a_dense_cholesky(monkeypatch):
    monkeypatch.setattr(split_factor, "DENSE_TAIL_MIN", 100)
    rng = np.random.default_rng(24)
    s = crowd_schur(rng)
    factorise = Factoriser()
    factor = factorise(s)
    plan = factorise._split
    assert plan is not None and 0 < plan.head < s.shape[0]   # both parts are exercised
    dense = s.toarray()
    sign, logdet = np.linalg.slogdet(dense)
    assert sign == 1.0 and factor.logdet == pytest.approx(logdet, rel=1e-12, abs=1e-9)
    rhs = rng.normal(size=(s.shape[0], 3))
    np.testing.assert_allclose(factor.solve(rhs), np.linalg.solve(dense, rhs), rtol=0, atol=1e-10)
    np.testing.assert_allclose(factor.solve(rhs[:, 0]), np.linalg.solve(dense, rhs[:, 0]), rtol=0, atol=1e-10)
    # later matrices of the same pattern reuse the plan
    scaled = (0.5 * s + 0.5 * sp.identity(s.shape[0])).tocsc()
    assert factorise(scaled).logdet == pytest.approx(np.linalg.slogdet(scaled.toarray())[1], rel=1e-12)
    assert factorise._split is plan


def test_dense_tail_factor_refuses_a_matrix_that_is_not_positive_definite(monkeypatch):
    monkeypatch.setattr(split_factor, "DENSE_TAIL_MIN", 100)
    rng = np.random.default_rng(5)
    s = crowd_schur(rng)
    factorise = Factoriser()
    factorise(s)
    assert factorise._split is not None
    with pytest.raises(np.linalg.LinAlgError):
        factorise((s - 1e3 * sp.identity(s.shape[0])).tocsc())


def test_a_pattern_grown_past_the_plan_gets_a_new_plan(monkeypatch):
    monkeypatch.setattr(split_factor, "DENSE_TAIL_MIN", 100)
    rng = np.random.default_rng(7)
    s = crowd_schur(rng)
    # the first matrix lacks a third of the couplings (still diagonally dominant, so positive definite)
    coo = sp.triu(s, k=1).tocoo()
    keep = rng.random(coo.nnz) > 0.33
    upper = sp.csr_matrix((coo.data[keep], (coo.row[keep], coo.col[keep])), shape=s.shape)
    sparser = (upper + upper.T + sp.diags(s.diagonal())).tocsc()
    factorise = Factoriser()
    factorise(sparser)
    first_plan = factorise._split
    assert first_plan is not None
    factor = factorise(s)
    assert factorise._split is not first_plan
    assert factor.logdet == pytest.approx(np.linalg.slogdet(s.toarray())[1], rel=1e-12)


@pytest.mark.parametrize("method", ["reml", "ml"])
def test_a_uniform_crowd_fit_on_the_dense_tail_matches_the_dense_path(method, monkeypatch):
    """End to end: the sparse core with the dense-tail factor against the dense-Schur path (``deviance.py``)."""
    monkeypatch.setattr(split_factor, "DENSE_TAIL_MIN", 100)
    monkeypatch.setattr(sparse_deviance, "block_eliminable", lambda *sizes: False)   # 8,000 raters are not
    crowd, _ = simulate_crowd(5_000, 2_000, 1_500, skew=0.0, random_state=11)
    frame = build_model_frame("score ~ 1 + (1|item) + (1|rater)", crowd)
    planned = []
    monkeypatch.setattr(Factoriser, "_factorise", _recording(Factoriser._factorise, planned))
    dense, sparse = fit_model_frame(frame, method), fit_general_frame(frame, method)
    assert any(planned)   # the dense tail was used
    assert sparse.converged and dense.converged
    assert sparse.criterion == pytest.approx(dense.criterion, abs=1e-6)
    for component, variance in dense.variances.items():
        assert sparse.variances[component] == pytest.approx(variance, rel=1e-4), component
    assert sparse.beta == pytest.approx(dense.beta, rel=1e-6, abs=1e-8)


def _recording(factorise, planned):
    def recorded(self, a):
        factor = factorise(self, a)
        planned.append(self._split is not None)
        return factor
    return recorded
