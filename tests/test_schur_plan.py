"""The raters' Schur complement built by a map from A's entries (``schur_plan.py``) against sparse products."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg

from bayesrepro.frequentist.sparse_factor import Factoriser


def crowd_system(rng, items=3000, raters=1000, rows=7000):
    """A = Λ'Z'WZΛ + I of a crowd design (items first), every item scored once to several times."""
    item = np.concatenate([np.arange(items), rng.integers(0, items, rows - items)])
    rater = rng.integers(0, raters, rows)
    z = sp.csr_matrix((np.ones(2 * rows), (np.repeat(np.arange(rows), 2),
                                          np.column_stack([item, items + rater]).ravel())), shape=(rows, items + raters))
    scale = sp.diags(np.concatenate([np.full(items, 1.3), np.full(raters, 0.6)]))
    zl = z @ scale
    return lambda weights: (zl.T @ sp.diags(weights) @ zl + sp.identity(items + raters)).tocsc(), items


def test_the_mapped_schur_complement_factorises_a_at_other_weights():
    rng = np.random.default_rng(3)
    system, items = crowd_system(rng)
    factorise = Factoriser(items)
    factorise(system(rng.uniform(0.1, 0.25, 7000)))
    a = system(rng.uniform(0.1, 0.25, 7000))
    assert factorise._schur is not None and factorise._schur.fits(a, factorise._order)
    factor = factorise(a)
    b = a[:items, items:]
    schur = (a[items:, items:] - b.T @ sp.diags(1.0 / a.diagonal()[:items]) @ b).tocsc()
    mapped = factorise._schur.schur(a)[1]
    order = factorise._order
    np.testing.assert_allclose(mapped.toarray(), schur[order][:, order].toarray(), rtol=1e-13, atol=1e-15)
    lu = scipy.sparse.linalg.splu(a)   # L with a unit diagonal: log|A| from U's (A is positive definite)
    assert factor.logdet == pytest.approx(np.log(np.abs(lu.U.diagonal())).sum(), rel=1e-12)
    rhs = rng.normal(size=(a.shape[0], 2))
    np.testing.assert_allclose(a @ factor.solve(rhs), rhs, atol=1e-10)


def test_a_changed_pattern_of_a_is_not_mapped_by_the_old_plan():
    rng = np.random.default_rng(4)
    system, items = crowd_system(rng)
    factorise = Factoriser(items)
    factorise(system(rng.uniform(0.1, 0.25, 7000)))
    weights = rng.uniform(0.1, 0.25, 7000)
    weights[:50] = 0.0   # entries of A exactly zero leave its pattern
    a = system(weights)
    a.eliminate_zeros()
    assert not factorise._schur.fits(a, factorise._order)
    factor = factorise(a)
    rhs = rng.normal(size=a.shape[0])
    np.testing.assert_allclose(a @ factor.solve(rhs), rhs, atol=1e-10)
