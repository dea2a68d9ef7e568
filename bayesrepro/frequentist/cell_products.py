"""Weighted cross-products of binomial cells, recomputed at every step of penalized IRLS.

A GLMM's working weights change with every iterate, so Z'WZ, Z'WX and X'WX
cannot be precomputed as in the Gaussian engine. Each is one ``bincount``
over the cells with precomputed integer keys: a cell's level of each
factor, its pair of levels of two factors, and its (level, fixed cell)
pair, whose sums times the few distinct fixed-design rows give Z'WX. The
random effects are laid out in elimination order: the levels of the
dominant factor (the one with most levels, the items) first, then those of
the other factors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..design import BinomialCells
from ..errors import BayesreproError

# The coupling Z₁'WZ_r of the dominant factor to the others is dense up to this many entries,
# sparse (on its fixed pattern of observed pairs) above.
DENSE_COUPLING = 2_000_000
# Leverages need a dense (dominant levels × other levels) block: refuse designs where it would not fit.
COUPLING_LIMIT = 50_000_000


@dataclass(frozen=True)
class WeightedProducts:
    dominant: np.ndarray                    # (n1,) diagonal of Z₁'WZ₁
    coupling: np.ndarray | sp.csr_matrix    # (n1, q_r) Z₁'WZ_r
    rest_gram: np.ndarray                   # (q_r, q_r) Z_r'WZ_r
    dominant_x: np.ndarray | None = None    # (n1, p) Z₁'WX
    rest_x: np.ndarray | None = None        # (q_r, p) Z_r'WX
    xtx: np.ndarray | None = None           # (p, p) X'WX


def coupling_beyond_cells(level_counts) -> bool:
    """Whether crossed factors couple more levels than the cell engine holds: the largest factor's levels times
    the other factors' levels above ``COUPLING_LIMIT``."""
    sizes = sorted(level_counts, reverse=True)
    return bool(sizes) and sizes[0] * sum(sizes[1:]) > COUPLING_LIMIT


class CellLayout:
    """The integer keys of the cells, built once per model."""

    def __init__(self, cells: BinomialCells):
        sizes = cells.sizes
        self.order = sorted(range(len(sizes)), key=lambda k: -sizes[k])
        self.n_cells = cells.n_cells
        self.X_fixed = cells.X_fixed
        self.fixed_cell = cells.fixed_cell
        self.n_fixed_cells = len(cells.X_fixed)
        self.sizes = np.array([sizes[k] for k in self.order], dtype=int)   # elimination order
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)]).astype(int)
        self.q = int(self.offsets[-1])
        self.n1 = int(self.sizes[0]) if len(sizes) else 0
        self.q_rest = self.q - self.n1
        # each factor's level of every cell, as a position in u (elimination order)
        self.position = [np.asarray(cells.codes[k], dtype=np.int64) + self.offsets[i] for i, k in enumerate(self.order)]
        self.dominant = self.position[0] if len(sizes) else np.zeros(self.n_cells, dtype=np.int64)
        self.rest = [p - self.n1 for p in self.position[1:]]
        F = self.n_fixed_cells
        # Z_k'WX as (level, fixed cell) sums times the distinct design rows where those pairs are few,
        # else column by column over the cells' design rows
        self.level_fixed = [(p - start) * F + self.fixed_cell if size * F <= 4 * self.n_cells else None
                            for p, start, size in zip(self.position, self.offsets, self.sizes)]
        self.X = cells.X if any(keys is None for keys in self.level_fixed) else None
        if coupling_beyond_cells(sizes):
            raise BayesreproError(
                f"two large crossed grouping factors ({self.n1} × {self.q_rest} levels) are beyond the binomial "
                "cell engine; the sparse Laplace fit takes them from the rows in memory (--engine memory)"
            )
        self.sparse = self.n1 * self.q_rest > DENSE_COUPLING
        if self.rest and self.sparse:
            keys = np.concatenate([self.dominant * self.q_rest + r for r in self.rest])
            pattern, self._pair_index = np.unique(keys, return_inverse=True)
            self._pair_rows, self._pair_cols = np.divmod(pattern, self.q_rest)
        # the coupling block by block: dominant level × level of one other factor
        self._coupling_keys = [] if self.sparse else [
            self.dominant * size + (r - start) for r, start, size in
            zip(self.rest, self.offsets[1:-1] - self.n1, self.sizes[1:])]
        # each cell's entries of the (dominant × other) and (other × other) blocks of a q_r-wide matrix,
        # as flat indices: the keys of the weighted pair counts and of the leverages' gathers
        self.dominant_rest_index = [self.dominant * self.q_rest + r for r in self.rest]
        self.rest_pair_index = {(i, j): self.rest[i] * self.q_rest + self.rest[j]
                                for i in range(len(self.rest)) for j in range(i, len(self.rest))}

    @property
    def n_factors(self) -> int:
        return len(self.order)

    def level_sums(self, values: np.ndarray) -> np.ndarray:
        """Z'v in elimination order: the sum of a cell vector over each level of each factor."""
        out = np.zeros(self.q)
        for position in self.position:
            out += np.bincount(position, weights=values, minlength=self.q)
        return out

    def fixed_sums(self, values: np.ndarray) -> np.ndarray:
        """X'v."""
        return self.X_fixed.T @ np.bincount(self.fixed_cell, weights=values, minlength=self.n_fixed_cells)

    def expand(self, effects: np.ndarray) -> np.ndarray:
        """Zb: the sum over factors of each cell's level effect (effects in elimination order)."""
        out = np.zeros(self.n_cells)
        for position in self.position:
            out += np.take(effects, position)
        return out

    def products(self, w: np.ndarray, with_fixed: bool) -> WeightedProducts:
        """Z'WZ (blocks) and, with ``with_fixed``, Z'WX and X'WX for cell weights ``w``."""
        n1, q_r, F = self.n1, self.q_rest, self.n_fixed_cells
        dominant = np.bincount(self.dominant, weights=w, minlength=n1) if self.n_factors else np.zeros(0)
        gram = np.zeros((q_r, q_r))
        for r in self.rest:
            gram[np.diag_indices(q_r)] += np.bincount(r, weights=w, minlength=q_r)
        for (i, j), keys in self.rest_pair_index.items():
            if i < j:
                table = np.bincount(keys, weights=w, minlength=q_r * q_r).reshape(q_r, q_r)
                gram += table + table.T
        coupling = self._coupling(w)
        if not with_fixed:
            return WeightedProducts(dominant, coupling, gram)
        level_x = np.zeros((self.q, self.X_fixed.shape[1]))
        for i, keys in enumerate(self.level_fixed):
            block = slice(self.offsets[i], self.offsets[i + 1])
            if keys is not None:
                level_x[block] = np.bincount(keys, weights=w, minlength=self.sizes[i] * F).reshape(-1, F) @ self.X_fixed
            else:
                codes = self.position[i] - self.offsets[i]
                for j in range(self.X.shape[1]):
                    level_x[block, j] = np.bincount(codes, weights=w * self.X[:, j], minlength=self.sizes[i])
        fixed_weights = np.bincount(self.fixed_cell, weights=w, minlength=F)
        xtx = self.X_fixed.T @ (self.X_fixed * fixed_weights[:, None])
        return WeightedProducts(dominant, coupling, gram, level_x[:n1], level_x[n1:], xtx)

    def _coupling(self, w: np.ndarray):
        n1, q_r = self.n1, self.q_rest
        if not self.rest:
            return np.zeros((n1, 0))
        if self.sparse:
            values = np.bincount(self._pair_index, weights=np.tile(w, len(self.rest)))
            return sp.csr_matrix((values, (self._pair_rows, self._pair_cols)), shape=(n1, q_r))
        return np.hstack([np.bincount(keys, weights=w, minlength=n1 * size).reshape(n1, size)
                          for keys, size in zip(self._coupling_keys, self.sizes[1:])])
