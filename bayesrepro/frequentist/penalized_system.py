"""The weighted penalized system of a random-intercept GLMM, factorised by eliminating the dominant factor.

At cell weights W and relative standard deviations Λ (one θ per factor,
repeated over its levels) the system of penalized IRLS is

    A = Λ'Z'WZΛ + I        (random effects alone, β fixed), or
    [A, Λ'Z'WX; X'WZΛ, X'WX]   (random and fixed effects jointly).

As in the Gaussian engine (``deviance.py``), the dominant factor's block of A
is diagonal (D) and is eliminated analytically; what remains is a dense
Schur complement with one row per level of the other factors (and per fixed
effect), factorised by Cholesky with the random part first. Its leading
block is then the Cholesky factor of the random-effects Schur complement
S = A_rr − B'D⁻¹B, so log|A| = Σ log D + log|S| and A⁻¹ are available from
either system.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from .cell_products import CellLayout
from .deviance import _cholesky_lower, _inverse_from_cholesky


class PenalizedSystem:
    def __init__(self, layout: CellLayout, lam: np.ndarray, w: np.ndarray, with_fixed: bool):
        """``lam``: Λ's diagonal in elimination order (q,); ``w``: cell weights."""
        self.layout = layout
        n1, q_r = layout.n1, layout.q_rest
        products = layout.products(w, with_fixed)
        self.t1 = float(lam[0]) if n1 else 0.0
        self.lam_rest = lam[n1:]
        self.D = self.t1 * self.t1 * products.dominant + 1.0
        coupling = products.coupling
        if sp.issparse(coupling):
            self.B = coupling.multiply(self.t1 * self.lam_rest[None, :]).tocsr()
        else:
            self.B = coupling * (self.t1 * self.lam_rest[None, :])
        self.p = layout.X_fixed.shape[1] if with_fixed else 0
        size = q_r + self.p
        schur = np.empty((size, size), order="F")
        schur[:q_r, :q_r] = self.lam_rest[:, None] * products.rest_gram * self.lam_rest[None, :]
        schur[:q_r, :q_r][np.diag_indices(q_r)] += 1.0
        self.Bx = None
        if with_fixed:
            schur[:q_r, q_r:] = self.lam_rest[:, None] * products.rest_x
            schur[q_r:, :q_r] = schur[:q_r, q_r:].T
            schur[q_r:, q_r:] = products.xtx
            self.Bx = self.t1 * products.dominant_x
        schur -= self._gram(self.D)
        self.factor = _cholesky_lower(schur)
        self.q_rest = q_r
        self._inverse = None

    # --- products with V = [B, Bx], the coupling of the dominant block to the rest ----------------------

    def _V_apply(self, z: np.ndarray) -> np.ndarray:
        out = self.B @ z[: self.q_rest]
        if self.p:
            out = out + self.Bx @ z[self.q_rest :]
        return np.asarray(out).ravel()

    def _V_transpose(self, v: np.ndarray, random_only: bool = False) -> np.ndarray:
        head = np.asarray(self.B.T @ v).ravel()
        if self.p and not random_only:
            return np.concatenate([head, self.Bx.T @ v])
        return head

    def _gram(self, D: np.ndarray) -> np.ndarray:
        """V'D⁻¹V."""
        if sp.issparse(self.B):
            scaled = sp.diags(1.0 / D) @ self.B
            top = (self.B.T @ scaled).toarray()
            if not self.p:
                return top
            cross = np.asarray(scaled.T @ self.Bx)
            return np.block([[top, cross], [cross.T, self.Bx.T @ (self.Bx / D[:, None])]])
        V = self.B if not self.p else np.hstack([self.B, self.Bx])
        return V.T @ (V / D[:, None])

    # --- what the factorisation yields ---------------------------------------------------------------------

    @property
    def logdet_random(self) -> float:
        """log|A| = log|Λ'Z'WZΛ + I|."""
        return float(np.log(self.D).sum() + 2.0 * np.log(np.diag(self.factor)[: self.q_rest]).sum())

    @property
    def fixed_precision(self) -> np.ndarray:
        """R_X'R_X: X'WX less what the random effects explain (joint systems only)."""
        lower = np.tril(self.factor[self.q_rest :, self.q_rest :])
        return lower @ lower.T

    def solve(self, rhs_random: np.ndarray, rhs_fixed: np.ndarray | None = None):
        """The joint system's solution (random part in elimination order, fixed part), or A⁻¹r without fixed."""
        random_only = rhs_fixed is None
        size = self.q_rest if random_only else self.q_rest + self.p
        factor = self.factor[:size, :size]
        r1, rr = rhs_random[: self.layout.n1], rhs_random[self.layout.n1 :]
        rhs = rr if random_only else np.concatenate([rr, rhs_fixed])
        z = rhs - self._V_transpose(r1 / self.D, random_only)
        if size:   # nothing left past the eliminated factor: an empty system (scipy before 1.15 refuses to solve it)
            z = scipy.linalg.cho_solve((factor, True), z, check_finite=False)
        x1 = (r1 - (self._V_apply(z) if not random_only else np.asarray(self.B @ z).ravel())) / self.D
        if random_only:
            return np.concatenate([x1, z])
        return np.concatenate([x1, z[: self.q_rest]]), z[self.q_rest :]

    def _rest_inverse(self) -> np.ndarray:
        """S⁻¹, the random-effects block of A⁻¹ for the non-dominant factors (symmetric, dense)."""
        if self._inverse is None:
            lower = _inverse_from_cholesky(np.array(self.factor[: self.q_rest, : self.q_rest], order="F"))
            self._inverse = np.tril(lower) + np.tril(lower, -1).T
        return self._inverse

    def _dominant_times_inverse(self):
        """E = D⁻¹B and P = E S⁻¹, so that (A⁻¹)₁ᵣ = −P and diag (A⁻¹)₁₁ = 1/D + rowsum(P∘E)."""
        S_inv = self._rest_inverse()
        E = sp.diags(1.0 / self.D) @ self.B if sp.issparse(self.B) else self.B / self.D[:, None]
        P = np.asarray(E @ S_inv)
        rowdot = np.asarray(E.multiply(P).sum(axis=1)).ravel() if sp.issparse(E) else np.einsum("ij,ij->i", E, P)
        return P, rowdot

    def leverages_and_traces(self) -> tuple[np.ndarray, np.ndarray]:
        """h_c = [ZΛA⁻¹ΛZ']_cc for every cell, and tr(A⁻¹) over each factor's block (elimination order)."""
        layout = self.layout
        if not layout.n_factors:
            return np.zeros(layout.n_cells), np.zeros(0)
        S_inv = self._rest_inverse()
        P, rowdot = self._dominant_times_inverse()
        h = self.t1 * self.t1 * np.take(1.0 / self.D + rowdot, layout.dominant)
        scales = [np.take(self.lam_rest, r) for r in layout.rest]
        flat_P, flat_S = P.ravel(), S_inv.ravel()
        for index, scale in zip(layout.dominant_rest_index, scales):
            h -= 2.0 * self.t1 * scale * np.take(flat_P, index)
        for (i, j), index in layout.rest_pair_index.items():
            h += (1.0 if i == j else 2.0) * scales[i] * scales[j] * np.take(flat_S, index)
        diagonal = np.diag(S_inv)
        traces = [float(np.sum(1.0 / self.D + rowdot))]
        offsets = layout.offsets - layout.n1
        traces += [float(diagonal[a:b].sum()) for a, b in zip(offsets[1:-1], offsets[2:])]
        return h, np.array(traces)
