"""lme4's profiled deviance for random-intercept models, from cross-products.

With relative standard deviations θ_k = σ_k/σ and Λ = diag(θ), the penalized
least-squares system of Bates et al. (2015, J. Stat. Softw. 67(1)) is

    [Λ'Z'ZΛ + I   Λ'Z'X] [u]   [Λ'Z'y]
    [X'ZΛ         X'X  ] [β] = [X'y  ]

and the ML / REML criteria need only its log-determinants and the penalized
residual sum of squares r² = y'y − c'A⁻¹c. The dominant factor's block is
diagonal, so it is eliminated first; the Schur complement S that remains has
one row per level of the other factors plus one per fixed effect, whatever N.
A Cholesky factor of S (random part first) gives log|L|² and log|R_X|².
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .crossprod import CrossProducts

LOG_2PI = np.log(2.0 * np.pi)


@dataclass(frozen=True)
class Solution:
    """Everything the criterion at one θ yields."""

    theta: np.ndarray        # formula order
    r2: float                # penalized residual sum of squares
    logdet_random: float     # log|L|²  = log|Λ'Z'ZΛ + I|
    logdet_fixed: float      # log|R_X|²
    beta: np.ndarray
    fixed_precision: np.ndarray  # R_X'R_X, so Var(β̂) = σ² (R_X'R_X)⁻¹


class ProfiledDeviance:
    """−2 log-likelihood (ML) or the REML criterion as a function of θ (formula order)."""

    def __init__(self, cross: CrossProducts, reml: bool):
        self.cross = cross
        self.reml = reml
        self.n_theta = cross.n_groups

    def __call__(self, theta: np.ndarray) -> float:
        try:
            return self.criterion(self.solve(theta))
        except np.linalg.LinAlgError:
            return np.inf

    def criterion(self, s: Solution) -> float:
        n, p = self.cross.n_obs, self.cross.n_fixed
        if self.reml:
            dof = n - p
            return s.logdet_random + s.logdet_fixed + dof * (1.0 + LOG_2PI + np.log(s.r2 / dof))
        return s.logdet_random + n * (1.0 + LOG_2PI + np.log(s.r2 / n))

    def sigma2(self, s: Solution) -> float:
        n, p = self.cross.n_obs, self.cross.n_fixed
        return s.r2 / (n - p if self.reml else n)

    def solve(self, theta: np.ndarray) -> Solution:
        c = self.cross
        theta = np.asarray(theta, dtype=float)
        ordered = theta[c.order] if c.order else theta[:0]
        p = c.n_fixed
        q_rest = len(c.rest_zy)
        if c.n_groups:
            t1 = ordered[0]
            diag1 = t1 * t1 * c.dominant_counts + 1.0
            lam = np.repeat(ordered[1:], c.rest_sizes)
            rhs1 = t1 * c.dominant_zy
            correction, rhs_correction = self._dominant_correction(t1, lam, diag1, rhs1)
            logdet_dominant = float(np.log(diag1).sum())
            r2_dominant = float(rhs1 @ (rhs1 / diag1))
        else:
            lam = np.zeros(0)
            correction = np.zeros((p, p))
            rhs_correction = np.zeros(p)
            logdet_dominant = r2_dominant = 0.0
        schur = np.empty((q_rest + p, q_rest + p))
        schur[:q_rest, :q_rest] = lam[:, None] * c.rest_gram * lam[None, :]
        schur[:q_rest, :q_rest][np.diag_indices(q_rest)] += 1.0
        schur[:q_rest, q_rest:] = lam[:, None] * c.rest_zx
        schur[q_rest:, :q_rest] = schur[:q_rest, q_rest:].T
        schur[q_rest:, q_rest:] = c.xtx
        schur -= correction
        rhs = np.concatenate([lam * c.rest_zy, c.xty]) - rhs_correction
        factor = scipy.linalg.cholesky(schur, lower=True, check_finite=False)
        w = scipy.linalg.solve_triangular(factor, rhs, lower=True, check_finite=False)
        r2 = c.yty - r2_dominant - float(w @ w)
        if r2 <= 0:
            raise np.linalg.LinAlgError("non-positive residual sum of squares")
        log_diag = 2.0 * np.log(np.diag(factor))
        solution = scipy.linalg.solve_triangular(factor, w, lower=True, trans="T", check_finite=False)
        fixed_factor = factor[q_rest:, q_rest:]
        beta = solution[q_rest:].copy()
        if c.y_shift:
            beta[0] += c.y_shift
        return Solution(
            theta=theta,
            r2=r2,
            logdet_random=logdet_dominant + float(log_diag[:q_rest].sum()),
            logdet_fixed=float(log_diag[q_rest:].sum()),
            beta=beta,
            fixed_precision=fixed_factor @ fixed_factor.T,
        )

    def _dominant_correction(self, t1, lam, diag1, rhs1):
        """W'D⁻¹W and W'D⁻¹c₁ for W = t1·[Z₁'Z_r Λ_r, Z₁'X], D the dominant diagonal."""
        c = self.cross
        zx_scaled = t1 * c.dominant_zx
        if sp.issparse(c.cross):
            cross_scaled = c.cross.multiply(t1 * lam[None, :]).tocsr() if len(lam) else c.cross
            inv = sp.diags(1.0 / diag1)
            zz = (cross_scaled.T @ inv @ cross_scaled).toarray()
            zxp = np.asarray(cross_scaled.T @ (zx_scaled / diag1[:, None]))
            xx = zx_scaled.T @ (zx_scaled / diag1[:, None])
            correction = np.block([[zz, zxp], [zxp.T, xx]])
            rhs_correction = np.concatenate([cross_scaled.T @ (rhs1 / diag1), zx_scaled.T @ (rhs1 / diag1)])
            return correction, rhs_correction
        w = np.hstack([c.cross * (t1 * lam[None, :]), zx_scaled])
        weighted = w / diag1[:, None]
        return w.T @ weighted, weighted.T @ rhs1
