"""Entries of A⁻¹ on the pattern of A's sparse factor (Takahashi's recurrences), for A = LDL' symmetric positive
definite with L unit lower triangular.

With Z = A⁻¹ = D⁻¹L⁻¹ + (I − L')Z, column by column from the last:

    Z_ij = −Σ_{k>j} Z_ik L_kj  (i > j),     Z_jj = 1/D_j − Σ_{k>j} L_kj Z_kj,

and every Z_ik needed (i, k in the pattern of L's column j) lies in the pattern
of L (its columns' patterns are closed under this elimination), so the cost is
that of the factorisation, not of a dense inverse (Takahashi, Fagan & Chin
1973; Erisman & Tinney 1975). The gradient of the Laplace criterion needs A⁻¹
only on A's pattern (``sparse_laplace.py``).
"""

from __future__ import annotations

import numpy as np
import scipy.linalg.lapack
import scipy.sparse as sp

from .takahashi_kernel import takahashi

# Sets of pairs whose positions are kept (the factor's pattern changes only where a variance is exactly zero).
KEPT_PATTERNS = 8
# Trailing full columns of at least this many are inverted densely.
DENSE_TAIL = 16


class OutsidePattern(LookupError):
    """An entry asked for lies outside the factor's pattern: A's entries that are exactly zero at this point (a
    variance component at zero) left the factor, and Takahashi's recurrences do not give it."""


class SelectedInverse:
    """A⁻¹ on the pattern of the strictly lower factor ``lower`` (CSC) with pivots ``pivots`` (= D)."""

    def __init__(self, lower: sp.csc_matrix, pivots: np.ndarray):
        lower = lower.tocsc()
        lower.sort_indices()
        self.n = lower.shape[0]
        self.indptr, self.indices = lower.indptr.astype(np.int64), lower.indices.astype(np.int64)
        self.values = np.empty(lower.nnz)
        self.diagonal = np.empty(self.n)
        done = self._dense_tail(lower.data, pivots)
        if not takahashi(self.indptr, self.indices, np.ascontiguousarray(lower.data, dtype=float),
                         np.ascontiguousarray(1.0 / pivots, dtype=float),
                         self.values, self.diagonal, done):
            raise RuntimeError("the factor's pattern is not closed under elimination: no selected inverse")
        columns = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.indptr))
        self._keys = columns * self.n + self.indices   # sorted: columns in order, rows sorted within each

    def _dense_tail(self, lower: np.ndarray, pivots: np.ndarray) -> int:
        """Z on the trailing columns whose factor is full (a fill-reducing order ends in the densely coupled
        levels: 240 of a skewed crowd's 5,489 raters), by LAPACK's inverse from a Cholesky factor: the recurrences
        would take a cubic number of indirect steps there. Returns where that tail starts."""
        full = np.diff(self.indptr) == self.n - 1 - np.arange(self.n)
        start = self.n - int(np.argmin(full[::-1])) if not full.all() else 0
        size = self.n - start
        if size < DENSE_TAIL:
            return self.n
        above, below = np.triu_indices(size, 1)   # column by column, the rows of L's strict lower triangle
        root = np.sqrt(pivots[start:])
        cholesky = np.zeros((size, size), order="F")   # L D^½
        cholesky[np.arange(size), np.arange(size)] = root
        cholesky[below, above] = lower[self.indptr[start]:] * root[above]
        inverse, info = scipy.linalg.lapack.dpotri(cholesky, lower=1, overwrite_c=1)
        if info != 0:
            raise np.linalg.LinAlgError("the factor's dense tail is singular")
        self.values[self.indptr[start]:] = inverse[below, above]
        self.diagonal[start:] = np.diag(inverse)
        return start

    def at(self, rows: np.ndarray, cols: np.ndarray, positions: dict | None = None) -> np.ndarray:
        """(A⁻¹)_ij for the pairs (rows, cols), each in the pattern of L + L' + I (else OutsidePattern);
        ``positions`` keeps where each set of pairs lies for later factors of the same pattern."""
        key = (self.indptr.tobytes(), self.indices.tobytes(), rows.tobytes(), cols.tobytes())
        found = None if positions is None else positions.get(key)
        if found is None:
            found = self._positions(rows, cols)
            if positions is not None:
                if len(positions) >= KEPT_PATTERNS:
                    positions.clear()
                positions[key] = found
        return np.concatenate([self.values, self.diagonal])[found]

    def _positions(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Where each pair is in the concatenation of ``values`` and ``diagonal``."""
        low, high = np.minimum(rows, cols).astype(np.int64), np.maximum(rows, cols).astype(np.int64)
        found = len(self.values) + low
        off = low != high
        keys = low[off] * self.n + high[off]
        position = np.minimum(np.searchsorted(self._keys, keys), max(len(self._keys) - 1, 0))
        if len(keys) and not (len(self._keys) and np.array_equal(self._keys[position], keys)):
            raise OutsidePattern("an entry of A⁻¹ outside the pattern of A's factor was asked for")
        found[off] = position
        return found
