"""The Schur complement S = C − B'D⁻¹B of A = [D B; B' C] (D diagonal), built in the factorisation's order
straight from A's entries.

A's pattern does not change from one θ to the next, so where each entry of A
lands in S, already permuted by the fill-reducing order, is worked out once:
S's entries are then C's entries summed with the products B_ir B_is / D_i of
every pair of entries in a row of B, with no sparse products, transposes or
permutations at each θ.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .index_ranges import expand_ranges


@dataclass(frozen=True)
class SchurPlan:
    """Where A's entries go in S permuted by ``order`` (S[order][:, order]), for one pattern of A."""
    pattern: tuple[bytes, bytes]   # A's indptr and indices
    order: np.ndarray
    indptr: np.ndarray             # S's pattern in that order (CSC, rows sorted)
    indices: np.ndarray
    diagonal: np.ndarray           # where D's entries lie in A's data
    c_source: np.ndarray           # C's entries in A's data, and where they go in S's
    c_target: np.ndarray
    first: np.ndarray              # the two factors of each product in A's data, its row of B, where it goes
    second: np.ndarray
    lead_row: np.ndarray
    product_target: np.ndarray

    @classmethod
    def of(cls, a: sp.csc_matrix, lead: int, order: np.ndarray) -> "SchurPlan":
        """The plan for A (CSC with its full symmetric pattern, the first ``lead`` columns diagonal there)."""
        size = a.shape[0] - lead
        rows = a.indices
        cols = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
        position_in_order = np.empty(size, dtype=np.int64)
        position_in_order[order] = np.arange(size)
        in_lead = cols < lead
        diagonal = np.flatnonzero(in_lead & (rows == cols))   # in column order: D_11, D_22, …
        c_source = np.flatnonzero((rows >= lead) & (cols >= lead))
        c_keys = _keys(position_in_order[rows[c_source] - lead], position_in_order[cols[c_source] - lead], size)
        # B's row i is A's lead column i below the diagonal (A is stored in full): its entries, column by column
        b_entries = np.flatnonzero(in_lead & (rows >= lead))
        counts = np.bincount(cols[b_entries], minlength=lead)[cols[b_entries]]
        first, second = expand_ranges(np.searchsorted(cols[b_entries], cols[b_entries]), counts)
        first, second = b_entries[first], b_entries[second]
        product_keys = _keys(position_in_order[rows[first] - lead], position_in_order[rows[second] - lead], size)
        keys, target = np.unique(np.concatenate([c_keys, product_keys]), return_inverse=True)
        indptr = np.concatenate([[0], np.cumsum(np.bincount(keys // size, minlength=size))])
        index = np.int32 if max(a.nnz, len(keys)) < np.iinfo(np.int32).max else np.int64   # halves a large plan
        return cls((a.indptr.tobytes(), a.indices.tobytes()), order, indptr.astype(index), (keys % size).astype(index),
                   diagonal, c_source.astype(index), target[:len(c_keys)].astype(index), first.astype(index),
                   second.astype(index), cols[first].astype(index), target[len(c_keys):].astype(index))

    def fits(self, a: sp.csc_matrix, order: np.ndarray | None) -> bool:
        """Whether the plan holds for A's pattern and the factorisation's present order."""
        return order is self.order and self.pattern == (a.indptr.tobytes(), a.indices.tobytes())

    def schur(self, a: sp.csc_matrix) -> tuple[np.ndarray, sp.csc_matrix]:
        """D's diagonal and S in the plan's order."""
        d = a.data[self.diagonal]
        size = len(self.indices)
        values = np.bincount(self.c_target, weights=a.data[self.c_source], minlength=size)
        values -= np.bincount(self.product_target, minlength=size,
                              weights=a.data[self.first] * a.data[self.second] / d[self.lead_row])
        n = len(self.indptr) - 1
        return d, sp.csc_matrix((values, self.indices, self.indptr), shape=(n, n))


def _keys(rows: np.ndarray, cols: np.ndarray, size: int) -> np.ndarray:
    """Column-major linear positions: sorting them sorts by column, then row (CSC order)."""
    return cols.astype(np.int64) * size + rows
