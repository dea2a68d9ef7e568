"""Sufficient statistics of a Gaussian random-intercept model: every cross-product it needs.

For y = Xβ + Σ_k Z_k b_k + ε the Gaussian likelihood depends on the data only
through y'y, X'y, X'X and the products of the indicator matrices Z_k with
each other, with X and with y. Z_k'Z_k is diagonal (level counts), Z_a'Z_b is
a contingency table. The factor with the most levels (the items, usually) is
kept apart as the *dominant* factor: its block of Z'Z is diagonal and is
eliminated analytically, so what remains is a small dense system.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .sums import GroupedSums, LevelCellSums

# A contingency table between the dominant factor and the others is kept
# sparse when it is large and mostly empty (two crossed factors with thousands
# of levels, each pair observed rarely): its products then cost O(nnz), not O(n1·q).
DENSE_CELL_LIMIT = 200_000
SPARSE_DENSITY = 0.1


@dataclass(frozen=True)
class GaussianStats:
    n_obs: int
    group_names: list[str]          # formula order
    order: list[int]                # formula index of each factor in elimination order: dominant first
    dominant_counts: np.ndarray     # (n1,) level counts of the dominant factor
    dominant_zy: np.ndarray         # (n1,)
    dominant_zx: np.ndarray         # (n1, p)
    rest_sizes: np.ndarray          # levels of each non-dominant factor, elimination order
    rest_gram: np.ndarray           # (q_r, q_r) Z_r'Z_r
    cross: np.ndarray | sp.csr_matrix  # (n1, q_r) Z_1'Z_r
    rest_zy: np.ndarray             # (q_r,)
    rest_zx: np.ndarray             # (q_r, p)
    xtx: np.ndarray
    xty: np.ndarray
    yty: float
    y_shift: float                  # subtracted from y (absorbed by the intercept) for accuracy
    y_sum: float                    # 1'y of the shifted response
    x_sum: np.ndarray               # (p,) 1'X

    @property
    def n_fixed(self) -> int:
        return self.xtx.shape[0]

    @property
    def n_groups(self) -> int:
        return len(self.order)


def gaussian_stats(frame: ModelFrame) -> GaussianStats:
    """The frame's statistics: computed once from its rows, or given by the producer that built it."""
    return frame.stats()


@dataclass(frozen=True)
class FixedProducts:
    """The cross-products of the response and the fixed design alone (y shifted by its mean under an intercept)."""

    xtx: np.ndarray
    xty: np.ndarray
    yty: float
    y_shift: float


def fixed_products(sums: GroupedSums, X_cells: np.ndarray, intercept: bool) -> FixedProducts:
    n = sums.n_obs
    y_shift = float(sums.cell_total.sum() / n) if intercept else 0.0
    cell_mean = sums.cell_total / np.maximum(sums.cell_n, 1.0)
    return FixedProducts(
        xtx=X_cells.T @ (X_cells * sums.cell_n[:, None]),
        xty=X_cells.T @ (sums.cell_total - sums.cell_n * y_shift),
        yty=float(sums.cell_m2.sum() + sums.cell_n @ (cell_mean - y_shift) ** 2),
        y_shift=y_shift,
    )


def stats_from_sums(sums: GroupedSums, X_cells: np.ndarray, group_names: list[str], intercept: bool) -> GaussianStats:
    """Every cross-product of the model from the grouped sums and the fixed design of each cell.

    With the response shifted by its mean (absorbed by the intercept) for
    accuracy: Z_k'y and X'y are sums of cell totals, y'y adds each cell's
    within-cell sum of squares to its share of the between-cell one, and
    Z_k'X, X'X, Z_k'Z_l are counts times design rows.
    """
    n_cells, p = X_cells.shape
    n = sums.n_obs
    fixed = fixed_products(sums, X_cells, intercept)
    y_shift = fixed.y_shift
    shifted_total = sums.cell_total - sums.cell_n * y_shift
    order = sorted(range(len(sums.sizes)), key=lambda k: -sums.sizes[k])
    level_sums = [_level_sums(part, size, X_cells, y_shift) for part, size in zip(sums.factors, sums.sizes)]
    if order:
        counts, zy, zx = level_sums[order[0]]
    else:
        counts, zy, zx = np.zeros(0), np.zeros(0), np.zeros((0, p))
    rest = order[1:]
    sizes = np.array([sums.sizes[k] for k in rest], dtype=int)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    q_rest = int(offsets[-1])
    gram = np.zeros((q_rest, q_rest))
    rest_zy = np.zeros(q_rest)
    rest_zx = np.zeros((q_rest, p))
    for i, k in enumerate(rest):
        block = slice(offsets[i], offsets[i + 1])
        c, rest_zy[block], rest_zx[block] = level_sums[k]
        gram[block, block] = np.diag(c)
        for j in range(i + 1, len(rest)):
            table = _contingency(sums, k, rest[j])
            other = slice(offsets[j], offsets[j + 1])
            gram[block, other] = table
            gram[other, block] = table.T
    cross = _dominant_cross(sums, order[0], rest, offsets) if rest else np.zeros((len(counts), 0))
    weighted = X_cells * sums.cell_n[:, None]
    return GaussianStats(
        n_obs=n,
        group_names=list(group_names),
        order=order,
        dominant_counts=counts,
        dominant_zy=zy,
        dominant_zx=zx,
        rest_sizes=sizes,
        rest_gram=gram,
        cross=cross,
        rest_zy=rest_zy,
        rest_zx=rest_zx,
        xtx=fixed.xtx,
        xty=fixed.xty,
        yty=fixed.yty,
        y_shift=y_shift,
        y_sum=float(shifted_total.sum()),
        x_sum=weighted.sum(axis=0),
    )


def _level_sums(part: LevelCellSums, size: int, X_cells: np.ndarray, y_shift: float):
    """Counts, Z'y (shifted) and Z'X of one factor's levels."""
    counts = np.bincount(part.level, weights=part.n, minlength=size)
    zy = np.bincount(part.level, weights=part.total - part.n * y_shift, minlength=size)
    incidence = sp.csr_matrix((part.n, (part.level, part.cell)), shape=(size, X_cells.shape[0]))
    return counts, zy, np.asarray(incidence @ X_cells)


def _contingency(sums: GroupedSums, a: int, b: int) -> np.ndarray:
    """Z_a'Z_b as a dense table."""
    pair = sums.pairs[(min(a, b), max(a, b))]
    first, second = (pair.first, pair.second) if a < b else (pair.second, pair.first)
    table = np.zeros((sums.sizes[a], sums.sizes[b]))
    table[first, second] = pair.n
    return table


def _dominant_cross(sums: GroupedSums, dominant: int, rest: list[int], offsets: np.ndarray):
    """Z_dominant'Z_rest, sparse when large and mostly empty."""
    rows, cols, counts = [], [], []
    for i, k in enumerate(rest):
        pair = sums.pairs[(min(dominant, k), max(dominant, k))]
        first, second = (pair.first, pair.second) if dominant < k else (pair.second, pair.first)
        rows.append(first)
        cols.append(second + offsets[i])
        counts.append(pair.n)
    n1, q_rest = sums.sizes[dominant], int(offsets[-1])
    table = sp.csr_matrix((np.concatenate(counts), (np.concatenate(rows), np.concatenate(cols))), shape=(n1, q_rest))
    if n1 * q_rest <= DENSE_CELL_LIMIT or table.nnz > SPARSE_DENSITY * n1 * q_rest:
        return table.toarray()
    return table
