"""Conditional modes of the spherical random effects and their conditional variances, as lme4's
``ranef(condVar = TRUE)`` gives them.

At a fit's estimates (θ, β, σ²), with A = Λ'Z'WZΛ + I (W = I for Gaussian
scores, the IRLS weights at the mode for binary ones):

- Gaussian: ũ = A⁻¹Λ'Z'(y − Xβ), the BLUP with β held at its estimate
  (the first block row of the penalized system of Bates et al. 2015);
- binary: ũ maximises log p(y | Xβ + ZΛũ) − ‖ũ‖²/2, by penalized IRLS
  (Fisher scoring with step halving, as lme4's PIRLS);

and b = Λũ. Var(b | y) = σ²ΛA⁻¹Λ' (σ² = 1 for binary scores), conditional on
β as lme4 computes it; only each level's diagonal block is formed, from the
entries of A⁻¹ on A's pattern that the sparse factor gives (its selected
inverse; with a diagonal lead block eliminated first, the dominant factor's
diagonal plus the Schur complement of the other levels).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp
import scipy.sparse.linalg

from .selected_inverse import OutsidePattern
from .sparse_factor import Factoriser

# Columns of A⁻¹ solved for at once where the factor gives no selected inverse.
SOLVE_BATCH = 256
# Penalized IRLS stops when a step moves no spherical effect by more than this.
MODE_TOLERANCE = 1e-10
MAX_IRLS_STEPS = 200


@dataclass(frozen=True)
class TermLayout:
    """One random-effect term's columns of Z: ``n_levels`` blocks of ``nc`` columns from ``offset``, level by level."""

    offset: int
    nc: int
    n_levels: int

    def columns(self) -> np.ndarray:
        return self.offset + np.arange(self.n_levels * self.nc)


class PenalisedFactor:
    """The factor of A with the ``lead`` columns (whose block of A is diagonal) eliminated first."""

    def __init__(self, a: sp.spmatrix, lead: np.ndarray, factoriser: Factoriser | None = None):
        q = a.shape[0]
        self.order = np.concatenate([lead, np.setdiff1d(np.arange(q), lead)]).astype(np.int64)
        self.position = np.argsort(self.order)
        permuted = sp.csc_matrix(a)[self.order][:, self.order].tocsc()
        factoriser = factoriser or Factoriser(len(lead), dense_tail=False)
        self.factor = factoriser(permuted)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        return self.factor.solve(rhs[self.order])[self.position]

    def inverse_at(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """(A⁻¹)_ij at the pairs; from the selected inverse where the factor gives it, else by solves."""
        if self.factor.inverse_at is not None:
            try:
                return self.factor.inverse_at(self.position[rows], self.position[cols])
            except OutsidePattern:   # an entry exactly zero in A (a level without rows of a slope's column)
                pass
        values = np.empty(len(rows))
        needed = np.unique(cols)
        q = len(self.order)
        for start in range(0, len(needed), SOLVE_BATCH):
            batch = needed[start:start + SOLVE_BATCH]
            unit = np.zeros((q, len(batch)))
            unit[batch, np.arange(len(batch))] = 1.0
            solved = self.solve(unit)
            chosen = np.isin(cols, batch)
            values[chosen] = solved[rows[chosen], np.searchsorted(batch, cols[chosen])]
        return values


def conditional_sd(factor: PenalisedFactor, lam: sp.spmatrix, terms: list[TermLayout], scale2: float) -> np.ndarray:
    """√diag(σ²ΛA⁻¹Λ') per column of Z, from each level's nc × nc block of A⁻¹ (Λ: block diagonal)."""
    lam = sp.csr_matrix(lam)
    sd = np.empty(lam.shape[0])
    for term in terms:
        nc, levels = term.nc, term.n_levels
        a_idx, b_idx = np.meshgrid(np.arange(nc), np.arange(nc), indexing="ij")
        starts = term.offset + nc * np.arange(levels)
        rows = (starts[:, None] + a_idx.ravel()[None, :]).ravel()
        cols = (starts[:, None] + b_idx.ravel()[None, :]).ravel()
        blocks = factor.inverse_at(rows, cols).reshape(levels, nc, nc)
        t = lam[term.offset:term.offset + nc, term.offset:term.offset + nc].toarray()
        variance = np.einsum("ac,lcd,ad->la", t, blocks, t)
        sd[term.columns()] = np.sqrt(np.maximum(scale2 * variance, 0.0)).ravel()
    return sd


def gaussian_modes(gram: sp.spmatrix, lam: sp.spmatrix, z_residual: np.ndarray, lead: np.ndarray,
                   terms: list[TermLayout], sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    """b = ΛA⁻¹Λ'Z'(y − Xβ) and its conditional SDs, from Z'Z (``gram``) and Z'(y − Xβ) (``z_residual``)."""
    lam = sp.csc_matrix(lam)
    a = (lam.T @ sp.csc_matrix(gram) @ lam + sp.identity(lam.shape[0], format="csc")).tocsc()
    factor = PenalisedFactor(a, lead)
    modes = lam @ factor.solve(lam.T @ z_residual)
    return modes, conditional_sd(factor, lam, terms, sigma2)


def iterative_gaussian_modes(gram: sp.spmatrix, lam: sp.spmatrix, z_residual: np.ndarray) -> np.ndarray:
    """b = Λ A⁻¹ Λ'Z'(y − Xβ) by conjugate gradients (Jacobi preconditioned), for designs whose factor is out of
    reach; no conditional variances."""
    lam = sp.csc_matrix(lam)
    a = (lam.T @ sp.csc_matrix(gram) @ lam + sp.identity(lam.shape[0], format="csc")).tocsr()
    preconditioner = sp.diags(1.0 / a.diagonal())
    rhs = lam.T @ z_residual
    solution, info = scipy.sparse.linalg.cg(a, rhs, rtol=1e-12, atol=0.0, M=preconditioner, maxiter=10_000)
    if info != 0:
        raise np.linalg.LinAlgError(f"conjugate gradients did not converge for the conditional modes (info {info})")
    return lam @ solution


def binary_modes(zl: sp.spmatrix, fixed_eta: np.ndarray, successes: np.ndarray, trials: np.ndarray, link,
                 lead: np.ndarray, terms: list[TermLayout], lam: sp.spmatrix) -> tuple[np.ndarray, np.ndarray]:
    """b = Λũ at the mode of the penalized log-likelihood (``zl`` = ZΛ) and its conditional SDs (σ² = 1), from A
    with the IRLS weights at the mode."""
    zl = sp.csc_matrix(zl)
    q = zl.shape[1]
    u = np.zeros(q)
    factoriser = Factoriser(len(lead), dense_tail=False)

    def penalized_deviance(u):
        eta = fixed_eta + zl @ u
        return -2.0 * float(np.sum(link.loglik_kernel(successes, trials, eta))) + float(u @ u)

    def factor_at(u):
        eta = fixed_eta + zl @ u
        cell = link.terms(successes, trials, eta)
        a = (zl.T @ sp.diags(cell.weight) @ zl + sp.identity(q, format="csc")).tocsc()
        return PenalisedFactor(a, lead, factoriser), zl.T @ cell.score - u

    current = penalized_deviance(u)
    for _ in range(MAX_IRLS_STEPS):
        factor, gradient = factor_at(u)
        step = factor.solve(gradient)
        size = 1.0
        while True:
            candidate = u + size * step
            value = penalized_deviance(candidate)
            if value <= current + 1e-12 * abs(current) or size < 1e-10:
                break
            size /= 2.0
        u, current = candidate, value
        if np.max(np.abs(size * step), initial=0.0) < MODE_TOLERANCE * max(1.0, np.max(np.abs(u), initial=0.0)):
            break
    else:
        raise np.linalg.LinAlgError("penalized IRLS did not reach the conditional modes")
    factor, _ = factor_at(u)
    return sp.csc_matrix(lam) @ u, conditional_sd(factor, lam, terms, 1.0)
