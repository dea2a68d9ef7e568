"""The mixed-model equations of crossed random intercepts, solved iteratively in the space of the levels.

For y = Xβ + Σ_k Z_k b_k + ε, b_k ~ N(0, γ_k σ² I), ε ~ N(0, σ² I), with
V = σ²H, H = I + Σ_k γ_k Z_k Z_k', every product with H⁻¹ goes through the
coefficient matrix of Henderson's equations, C = Z'Z + Γ⁻¹ (Woodbury:
H⁻¹ = I − Z C⁻¹ Z'). Its block of the factor with most levels (items, say)
is diagonal, D = diag(n_i) + I/γ_1, and is eliminated exactly; what is left
is the Schur complement of the other factors' levels (the raters'),

    S = Z_r'Z_r + Γ_r⁻¹ − W' D⁻¹ W,      W = Z_1'Z_r (counts of rows per item and rater),

whose product with a block of vectors costs two sparse products with W.
Heavy raters make S nearly dense, so it is never formed: S x = b is solved by
conjugate gradients with S's diagonal as the preconditioner
(``conjugate_gradients.solve_many``). Memory and work are linear in the rows
(the non-zeros of W) and in the levels times the right-hand sides.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .conjugate_gradients import solve_many

class CrossedSystem:
    """C = Z'Z + Γ⁻¹ of crossed random-intercept factors, given each row's level codes.

    Parameters
    ----------
    codes : list of numpy.ndarray
        For each factor, the level (0 … size − 1) of every row.
    sizes : list of int
        The levels of each factor.
    """

    def __init__(self, codes: list[np.ndarray], sizes: list[int]):
        self.sizes = [int(s) for s in sizes]
        self.n_obs = len(codes[0])
        self.lead = int(np.argmax(self.sizes))
        self.rest = [k for k in range(len(sizes)) if k != self.lead]
        self.offsets = dict(zip(self.rest, np.cumsum([0] + [self.sizes[k] for k in self.rest[:-1]])))
        self.n_rest = sum(self.sizes[k] for k in self.rest)
        self._lead_codes = codes[self.lead]
        self._rest_codes = np.concatenate([codes[k] + self.offsets[k] for k in self.rest])
        # W's non-zeros are the distinct (lead level, rest level) pairs of the rows: each row's place among them, and
        # the order of W' (CSR) in terms of W's, so that reweighting is a weighted count and a permutation
        keys = np.tile(self._lead_codes.astype(np.int64), len(self.rest)) * self.n_rest + self._rest_codes
        pairs, self._pair_of_row = np.unique(keys, return_inverse=True)
        lead_of_pair, rest_of_pair = pairs // self.n_rest, pairs % self.n_rest
        self._w_pattern = (_pointers(lead_of_pair, self.sizes[self.lead]), rest_of_pair)
        self._transposed_order = np.lexsort((lead_of_pair, rest_of_pair))
        self._wt_pattern = (_pointers(rest_of_pair, self.n_rest), lead_of_pair[self._transposed_order])
        self._indptr, self._indices = self._w_pattern[0].astype(np.int64), rest_of_pair.astype(np.int64)
        if len(self.rest) > 1:
            rows = np.arange(self.n_obs)
            self._z_rest = sp.csr_matrix((np.ones(len(self._rest_codes)), (np.tile(rows, len(self.rest)),
                                                                             self._rest_codes)),
                                         shape=(self.n_obs, self.n_rest))
        self.reweight(np.ones(self.n_obs))

    def reweight(self, weights: np.ndarray) -> None:
        """Z'WZ in place of Z'Z, W = diag(``weights``) (the working weights of a binary model; ones at first)."""
        tiled = np.tile(weights, len(self.rest))
        counts = np.bincount(self._pair_of_row, weights=tiled, minlength=len(self._indices))
        shape = (self.sizes[self.lead], self.n_rest)
        self.w = sp.csr_matrix((counts, self._w_pattern[1], self._w_pattern[0]), shape=shape)   # items × raters
        self.wt = sp.csr_matrix((counts[self._transposed_order], self._wt_pattern[1], self._wt_pattern[0]),
                                shape=shape[::-1])
        self.lead_counts = np.bincount(self._lead_codes, weights=weights, minlength=self.sizes[self.lead])
        self.rest_counts = np.bincount(self._rest_codes, weights=tiled, minlength=self.n_rest)
        self.rest_cross = None                            # rater × other-factor counts (three factors or more)
        if len(self.rest) > 1:
            gram = (self._z_rest.T @ (sp.diags(weights) @ self._z_rest)).tocsr()
            off = gram - sp.diags(gram.diagonal())
            off.eliminate_zeros()
            self.rest_cross = off if off.nnz else None
        self._squared_w = sp.csr_matrix((counts ** 2, self._w_pattern[1], self._w_pattern[0]), shape=shape)

    @property
    def n_levels(self) -> int:
        """All levels of all factors: the order of C."""
        return sum(self.sizes)

    def set_ratios(self, gamma: np.ndarray) -> None:
        """Set γ (each factor's variance over the residual's, in the factors' order)."""
        gamma = np.asarray(gamma, dtype=float)
        self.lead_diagonal = self.lead_counts + 1.0 / gamma[self.lead]
        self._inverse_lead = 1.0 / self.lead_diagonal
        rest_penalty = np.concatenate([np.full(self.sizes[k], 1.0 / gamma[k]) for k in self.rest])
        self._rest_diagonal = self.rest_counts + rest_penalty
        schur_diagonal = self._rest_diagonal - self._squared_w.T @ self._inverse_lead
        self.inverse_schur_diagonal = 1.0 / schur_diagonal

    def schur_product(self, v: np.ndarray) -> np.ndarray:
        """S v for a block of rest-level vectors."""
        from .schur_kernel import schur_product

        v = np.ascontiguousarray(v)
        out = np.empty_like(v)
        schur_product(self._indptr, self._indices, self.w.data, self._inverse_lead, self._rest_diagonal, v, out)
        if self.rest_cross is not None:
            out += self.rest_cross @ v
        return out

    def eliminated(self, lead_rhs: np.ndarray) -> np.ndarray:
        """W'D⁻¹ b_1: what eliminating the lead factor subtracts from the rest part of a right-hand side."""
        return self.wt @ (lead_rhs / self.lead_diagonal[:, None])

    def solve_schur(self, rhs: np.ndarray, start: np.ndarray | None = None,
                    rtol: float = 1e-8) -> tuple[np.ndarray, int]:
        """S x = rhs by conjugate gradients (Jacobi-preconditioned); the solution and the iterations."""
        return solve_many(self.schur_product, rhs, self.inverse_schur_diagonal, start, rtol)

    def back_substitute(self, lead_rhs: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """The lead part of C⁻¹b from b's lead part and the rest part of the solution."""
        return (lead_rhs - self.w @ rest) / self.lead_diagonal[:, None]

    def solve(self, levels: np.ndarray, start: np.ndarray | None = None,
              rtol: float = 1e-8) -> tuple[np.ndarray, np.ndarray, int]:
        """C⁻¹b for a block b over all levels (factors in their order), by eliminating the lead factor; also the
        solution's rest part (the start of a later solve of a nearby system) and the iterations."""
        lead_rhs, rest_rhs = self.split(levels)
        rest, iterations = self.solve_schur(rest_rhs - self.eliminated(lead_rhs), start, rtol)
        return self.join(self.back_substitute(lead_rhs, rest), rest), rest, iterations

    def split(self, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A block over all levels (factors in their order, stacked) as its lead part and its rest part."""
        blocks = self.factor_blocks(levels)
        return blocks[self.lead], np.concatenate([blocks[k] for k in self.rest], axis=0)

    def join(self, lead: np.ndarray, rest: np.ndarray) -> np.ndarray:
        """The inverse of ``split``."""
        parts = []
        for k in range(len(self.sizes)):
            parts.append(lead if k == self.lead else rest[self.offsets[k]:self.offsets[k] + self.sizes[k]])
        return np.concatenate(parts, axis=0)

    def factor_blocks(self, levels: np.ndarray) -> list[np.ndarray]:
        """A block over all levels cut into each factor's rows."""
        edges = np.cumsum([0] + self.sizes)
        return [levels[a:b] for a, b in zip(edges[:-1], edges[1:])]

    def gram_product(self, levels: np.ndarray) -> np.ndarray:
        """Z'Z a for a block over all levels (factors in their order)."""
        lead, rest = self.split(levels)
        lead_out = self.lead_counts[:, None] * lead + self.w @ rest
        rest_out = self.rest_counts[:, None] * rest + self.wt @ lead
        if self.rest_cross is not None:
            rest_out += self.rest_cross @ rest
        return self.join(lead_out, rest_out)


def _pointers(rows: np.ndarray, n_rows: int) -> np.ndarray:
    """CSR row pointers of non-zeros sorted by row."""
    return np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=n_rows))])
