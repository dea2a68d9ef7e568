"""Factorising a sparse symmetric positive definite matrix whose sparse factor ends in a dense block.

The raters' Schur complement of a crowd design (items eliminated) is the
adjacency of a random graph: in a minimum-degree order its first columns
fall apart into small independent groups, and the factor of the remaining
ones is nearly full (about 90 % of a 2,500² triangle for 8,000 raters of
5 scores each). SuperLU factorises that tail with its own loops; here it is
one LAPACK Cholesky factor. In the fill-reducing order, with H the leading
k columns (block diagonal: connected groups of at most ``GROUP_LIMIT``
columns), C the coupling and T the tail,

    S = [H  C']      log|S| = log|H| + log|Σ|,   Σ = T − C H⁻¹C'  (dense),
        [C  T ]

H⁻¹ is formed group by group (batched small inverses) and stays sparse, as
does Y = H⁻¹C'; a solve is x_t = Σ⁻¹(r_t − Y'r_h), x_h = H⁻¹r_h − Y x_t.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .deviance import dense_blas
from .index_ranges import expand_ranges

# Largest group of leading columns inverted as one small dense block.
GROUP_LIMIT = 64
# The tail is factorised densely only where the sparse factor fills at least this share of its triangle and the
# tail has this many columns: a smaller one is a few ms for SuperLU (a skewed crowd design's 280-column tail: 7 ms by
# SuperLU, 14 ms here, most of it in the groups' inverses).
DENSE_TAIL = 0.5
DENSE_TAIL_MIN = 1000


@dataclass(frozen=True)
class _Groups:
    """The leading columns' groups padded to one size (a power of two), and where each entry of H⁻¹ comes from."""
    size: int
    count: int
    slot: np.ndarray        # per leading column: its group's index among these groups (−1: another size)
    local: np.ndarray       # per leading column: its position in its group
    rows: np.ndarray        # the entries of H⁻¹ within these groups: row, column (leading-block numbering)
    cols: np.ndarray
    flat: np.ndarray        # and their positions in the flattened (count, size, size) inverse


class SplitPlan:
    """How to factorise matrices of one pattern, in a fill-reducing order: which leading columns form small
    groups and where the dense tail starts."""

    def __init__(self, pattern: sp.csc_matrix, head: int):
        self.head = head
        n_groups, label = connected_components(pattern[:head, :head], directed=False)
        self.label = label
        sizes = np.bincount(label, minlength=n_groups)
        local = np.zeros(head, dtype=np.int64)
        by_group = np.argsort(label, kind="stable")
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        local[by_group] = np.arange(head) - starts[label[by_group]]
        padded = 1 << np.ceil(np.log2(np.maximum(sizes, 1))).astype(int)
        self.groups = []
        for size in np.unique(padded):
            chosen = np.flatnonzero(padded == size)
            index = np.full(n_groups, -1)
            index[chosen] = np.arange(len(chosen))
            slot = index[label]
            rows, cols = _pairs(by_group[slot[by_group] >= 0], sizes[label], local)
            flat = (slot[rows] * size + local[rows]) * size + local[cols]
            self.groups.append(_Groups(int(size), len(chosen), slot, local, rows, cols, flat))

    @classmethod
    def of(cls, pattern: sp.csc_matrix, column_counts: np.ndarray, dense_limit: int) -> "SplitPlan | None":
        """A plan for ``pattern`` (in its fill-reducing order, whose sparse factor has ``column_counts`` non-zeros
        per column), or None where no tail of at most ``dense_limit`` columns is dense enough to gain."""
        n = pattern.shape[0]
        if column_counts.sum() < DENSE_TAIL * DENSE_TAIL_MIN * (DENSE_TAIL_MIN + 1) / 2:
            return None   # too few non-zeros for any dense enough tail: the search below costs more than the factor
        low, high = 0, n   # the largest head whose groups are small: groups only merge as the head grows
        while low < high:
            middle = (low + high + 1) // 2
            _, label = connected_components(pattern[:middle, :middle], directed=False)
            if np.bincount(label).max() <= GROUP_LIMIT:
                low = middle
            else:
                high = middle - 1
        tail = n - low
        if not DENSE_TAIL_MIN <= tail <= dense_limit or column_counts[low:].sum() < DENSE_TAIL * tail * (tail + 1) / 2:
            return None
        return cls(pattern, low)

    def factorise(self, a: sp.csc_matrix) -> tuple[float, Callable[[np.ndarray], np.ndarray]] | None:
        """log|A| and a solve with A (A in the plan's order), or None where A's leading block couples two groups
        (A has entries the plan's pattern had not, so a new plan is needed); np.linalg.LinAlgError where A is not
        positive definite."""
        k = self.head
        head = a[:k, :k].tocoo()
        if not np.array_equal(self.label[head.row], self.label[head.col]):
            return None
        logdet, inverse = self._head_inverse(head.row, head.col, head.data)
        coupling = a[k:, :k].tocsr()
        y = (inverse @ coupling.T).tocsr()
        schur = (a[k:, k:] - coupling @ y).toarray()
        try:
            with dense_blas(len(schur)):
                lower = scipy.linalg.cholesky(schur, lower=True, check_finite=False)
        except scipy.linalg.LinAlgError as exc:
            raise np.linalg.LinAlgError(str(exc)) from None
        logdet += float(2.0 * np.log(np.diag(lower)).sum())

        def solve(rhs: np.ndarray) -> np.ndarray:
            first = inverse @ rhs[:k]
            tail = scipy.linalg.cho_solve((lower, True), rhs[k:] - y.T @ rhs[:k], check_finite=False)
            return np.concatenate([first - y @ tail, tail])

        return logdet, solve

    def _head_inverse(self, rows: np.ndarray, cols: np.ndarray, values: np.ndarray) -> tuple[float, sp.csr_matrix]:
        """log|H| and H⁻¹ (sparse), group by group."""
        logdet = 0.0
        inverse_rows, inverse_cols, inverse_values = [], [], []
        for group in self.groups:
            inside = group.slot[rows] >= 0
            blocks = np.tile(np.eye(group.size), (group.count, 1, 1))
            r, c = rows[inside], cols[inside]
            blocks[group.slot[r], group.local[r], group.local[c]] = values[inside]
            lower = np.linalg.cholesky(blocks)   # np.linalg.LinAlgError where H is not positive definite
            logdet += float(2.0 * np.log(np.diagonal(lower, axis1=1, axis2=2)).sum())
            identity = np.broadcast_to(np.eye(group.size), blocks.shape)
            half = np.linalg.solve(lower, identity)            # L⁻¹, so H⁻¹ = L⁻ᵀL⁻¹
            inverse_values.append(np.matmul(half.transpose(0, 2, 1), half).reshape(-1)[group.flat])
            inverse_rows.append(group.rows)
            inverse_cols.append(group.cols)
        inverse = sp.csr_matrix((np.concatenate(inverse_values), (np.concatenate(inverse_rows),
                                                                  np.concatenate(inverse_cols))),
                                shape=(self.head, self.head))
        return logdet, inverse


def _pairs(members: np.ndarray, group_size: np.ndarray, local: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every (row, column) pair of columns in one group; ``members`` sorted by group."""
    owner, partner = expand_ranges(np.arange(len(members)) - local[members], group_size[members])
    return members[owner], members[partner]
