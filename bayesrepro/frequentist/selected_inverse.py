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

import functools

import numpy as np
import scipy.linalg.lapack
import scipy.sparse as sp

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
        if not _compiled_takahashi()(self.indptr, self.indices, lower.data, 1.0 / pivots, self.values, self.diagonal,
                                     done):
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


def takahashi(indptr, indices, lower, inverse_pivots, values, diagonal, done) -> bool:
    """Z below the diagonal into ``values`` (L's pattern) and its diagonal into ``diagonal`` for the columns before
    ``done`` (those from it on are filled in); False where a column's pattern is not contained in an earlier
    column's (the pattern is not a filled factor's)."""
    n = len(indptr) - 1
    mark = np.full(n, -1, dtype=np.int64)   # position in column j of each row in its pattern
    for j in range(done - 1, -1, -1):
        start, end = indptr[j], indptr[j + 1]
        for p in range(start, end):
            mark[indices[p]] = p
            values[p] = 0.0
        for p in range(start, end):
            k = indices[p]
            l_kj = lower[p]
            values[p] -= diagonal[k] * l_kj
            hits = 0
            for q in range(indptr[k], indptr[k + 1]):
                m = mark[indices[q]]
                if m >= 0:
                    hits += 1
                    values[m] -= values[q] * l_kj       # Z_ij −= Z_ik L_kj   (i > k)
                    values[p] -= values[q] * lower[m]   # Z_kj −= Z_ki L_ij
            if hits != end - p - 1:
                return False
        z = inverse_pivots[j]
        for p in range(start, end):
            z -= lower[p] * values[p]
            mark[indices[p]] = -1
        diagonal[j] = z
    return True


@functools.cache
def _compiled_takahashi():
    """``takahashi`` compiled, or loaded from numba's cache, once per process."""
    import numba
    from numba import types

    from ..compiled_cache import compile_cached

    index, vector = types.int64[::1], types.float64[::1]
    signature = types.boolean(index, index, vector, vector, vector, vector, types.int64)
    return compile_cached(lambda cache: numba.njit(signature, cache=cache, nogil=True)(takahashi),
                          "the compiled selected inverse of the Laplace fits")
