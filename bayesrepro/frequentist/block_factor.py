"""A = Λ'GΛ + I (G = Z'Z) with one term's levels eliminated blockwise, and the parts of A⁻¹ its gradient needs.

With the lead term's columns first (n levels of nc columns each, level by
level), A = [[D, B], [B', C]]: D is block diagonal (each row of the data is
in one level of the term), one nc × nc block D_l = T'G_l T + I per level, T
the term's block of Λθ. D is factorised block by block, and only the dense
Schur complement S = C − B'H of the m other columns, H = D⁻¹B, is
factorised: log|A| = Σ log|D_l| + log|S|, and per evaluation the work is
about n·nc·m² + m³ instead of (n·nc + m)³. Crossed slope designs (subjects ×
items) have a few hundred columns left after the larger factor.

The criterion's gradient (``sparse_deviance.py``) needs (A⁻¹P)_ba at the
entries (a, b) of Λθ, with P = Λ'G. From
A⁻¹ = [[D⁻¹ + H S⁻¹H', −H S⁻¹], [−S⁻¹H', S⁻¹]], in the lead term's columns
that is (D⁻¹P₁₁)_ba + (H S⁻¹(H'P₁₁ − P₂₁))_ba, in the others
(S⁻¹(P₂₂ − H'P₁₂))_ba: products with the m × m S⁻¹, never the whole A⁻¹.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

# The lead term is eliminated this way while its coupling to the other columns (lead columns × others), held
# dense in several copies, has at most this many entries (160 MB a copy),
COUPLING_LIMIT = 20_000_000
# and while an evaluation's work, ~(lead + m)·m² for m other columns (solves with S of the coupling, S's factor),
# stays below this (a second or two on one core); beyond, SuperLU's sparse factor is cheaper per evaluation.
WORK_LIMIT = 1e10
# Dense arrays of the coupling's size and of the Schur complement's size alive at once in an evaluation with its
# gradient (G₁₂, Λ₁'G₁₂, B, H, P₂₁, H'P₁₁ − P₂₁, its solve, a temporary; G₂₂, P₂₂, C, S, its factor, K₂, its solve,
# a temporary), and arrays of the lead term's levels × nc² (its blocks, their factors and products, the gathered
# entries of the gradient): peaks traced in one evaluation of four crossed designs were 0.7–0.93 of the sum.
COUPLING_COPIES = 8
SCHUR_COPIES = 8
LEAD_COPIES = 32


def block_eliminable(lead_columns: int, other_columns: int) -> bool:
    """Is a design with these column counts factorised by lead-term elimination and a dense Schur complement?"""
    return (lead_columns * other_columns <= COUPLING_LIMIT
            and (lead_columns + other_columns) * float(other_columns) ** 2 <= WORK_LIMIT)


def block_bytes(levels: int, nc: int, other_columns: int) -> int:
    """Peak bytes of the dense arrays of one evaluation with its gradient."""
    lead = levels * nc
    return 8 * (COUPLING_COPIES * lead * other_columns + SCHUR_COPIES * other_columns ** 2 + LEAD_COPIES * lead * nc)


class BlockSystem:
    """G = Z'Z in the lead term's blocks (levels × nc first), held dense where it couples to the other columns."""

    def __init__(self, gram: sp.csc_matrix, levels: int, nc: int):
        self.levels, self.nc = levels, nc
        lead = self.lead = levels * nc
        blocks = gram[:lead, :lead].tocoo()       # block diagonal: each row of the data is in one level
        self.g11 = np.zeros((levels, nc, nc))
        self.g11[blocks.row // nc, blocks.row % nc, blocks.col % nc] = blocks.data
        self.g12 = gram[:lead, lead:].toarray().reshape(levels, nc, -1)    # (levels, nc, m)
        self.g22 = gram[lead:, lead:].toarray()

    def factorise(self, t: np.ndarray, lam22: sp.csc_matrix) -> "BlockFactor":
        """A at θ, given the lead term's block T of Λθ and Λθ's block of the other columns."""
        return BlockFactor(self, t, lam22)


class BlockFactor:
    """log|A|, solves with A, and the products of A⁻¹ with P = Λ'G at chosen entries."""

    def __init__(self, system: BlockSystem, t: np.ndarray, lam22: sp.csc_matrix):
        self.system, self.t, self.lam22 = system, t, lam22
        nc, m = system.nc, system.g22.shape[0]
        self.p11 = np.einsum("ji,njk->nik", t, system.g11)               # T'G_l
        d = self.p11 @ t + np.eye(nc)
        try:
            self.d_factor = np.linalg.cholesky(d)
        except np.linalg.LinAlgError:
            raise np.linalg.LinAlgError("the penalized system is not positive definite") from None
        self.d = d
        self.p12 = np.einsum("ji,njm->nim", t, system.g12).reshape(system.lead, m)   # Λ₁'G₁₂
        b = np.asarray(lam22.T @ self.p12.T).T                              # B = Λ₁'G₁₂Λ₂
        self.h = np.linalg.solve(d, b.reshape(system.levels, nc, m)).reshape(system.lead, m)
        self.p22 = np.asarray(lam22.T @ system.g22)                          # Λ₂'G₂₂
        schur = np.asarray(lam22.T @ self.p22.T).T - b.T @ self.h
        schur[np.diag_indices(m)] += 1.0
        try:
            self.s_factor = scipy.linalg.cholesky(schur, lower=True, check_finite=False)
        except scipy.linalg.LinAlgError as exc:
            raise np.linalg.LinAlgError(str(exc)) from None
        self.logdet = float(2.0 * np.log(np.diagonal(self.d_factor, axis1=1, axis2=2)).sum()
                            + 2.0 * np.log(np.diag(self.s_factor)).sum())

    def _s_solve(self, rhs: np.ndarray) -> np.ndarray:
        if not len(rhs):   # every level in the lead block: an empty system (scipy before 1.15 refuses to solve it)
            return rhs.copy()
        return scipy.linalg.cho_solve((self.s_factor, True), rhs, check_finite=False)

    def _d_solve(self, rhs: np.ndarray) -> np.ndarray:
        """D⁻¹ rhs for rhs of the lead columns' rows, (lead, k)."""
        levels, nc = self.system.levels, self.system.nc
        return np.linalg.solve(self.d, rhs.reshape(levels, nc, -1)).reshape(levels * nc, -1)

    def solve(self, rhs: np.ndarray) -> np.ndarray:
        """A⁻¹ rhs for a (q, k) array."""
        lead = self.system.lead
        first, second = rhs[:lead], rhs[lead:]
        x2 = self._s_solve(second - self.h.T @ first)
        return np.concatenate([self._d_solve(first) - self.h @ x2, x2])

    def inverse_products(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """(A⁻¹P)[cols[i], rows[i]] for entries (rows[i], cols[i]) of Λθ, each within one level's block."""
        system = self.system
        lead, nc, m = system.lead, system.nc, system.g22.shape[0]
        out = np.empty(len(rows))
        in_lead = rows < lead
        a, b = rows[in_lead], cols[in_lead]
        # H'P₁₁ − P₂₁ with P₂₁ = Λ₂'G₂₁
        h_p11 = np.einsum("nim,nij->mnj", self.h.reshape(system.levels, nc, m), self.p11).reshape(m, lead)
        w1 = self._s_solve(h_p11 - self._p21())
        d_inv_p11 = np.linalg.solve(self.d, self.p11)
        out[in_lead] = d_inv_p11[a // nc, b % nc, a % nc] + np.einsum("ij,ji->i", self.h[b], w1[:, a])
        w2 = self._s_solve(self.p22 - self.h.T @ self.p12)
        out[~in_lead] = w2[cols[~in_lead] - lead, rows[~in_lead] - lead]
        return out

    def transposed_products(self, f: np.ndarray) -> np.ndarray:
        """F'P for a (q, k) array F: (k, q)."""
        system = self.system
        lead, nc = system.lead, system.nc
        f1, f2 = f[:lead], f[lead:]
        on_lead = np.einsum("nip,nij->pnj", f1.reshape(system.levels, nc, -1), self.p11).reshape(-1, lead)
        return np.hstack([on_lead + f2.T @ self._p21(), f1.T @ self.p12 + f2.T @ self.p22])

    def _p21(self) -> np.ndarray:
        """P₂₁ = Λ₂'G₂₁ (m, lead)."""
        system = self.system
        return np.asarray(self.lam22.T @ system.g12.reshape(system.lead, -1).T)
