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

from .frame import ModelFrame

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

    @property
    def n_fixed(self) -> int:
        return self.xtx.shape[0]

    @property
    def n_groups(self) -> int:
        return len(self.order)


def gaussian_stats(frame: ModelFrame) -> GaussianStats:
    y_shift = float(frame.y.mean()) if frame.spec.intercept else 0.0
    y = frame.y - y_shift
    X = frame.X
    groups = frame.groups
    order = sorted(range(len(groups)), key=lambda k: -groups[k].n_levels)
    if groups:
        dominant = groups[order[0]]
        counts, zy, zx = _level_sums(dominant.codes, dominant.n_levels, y, X)
    else:
        counts, zy, zx = np.zeros(0), np.zeros(0), np.zeros((0, X.shape[1]))
    rest = [groups[k] for k in order[1:]]
    sizes = np.array([g.n_levels for g in rest], dtype=int)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    q_rest = int(offsets[-1])
    gram = np.zeros((q_rest, q_rest))
    rest_zy = np.zeros(q_rest)
    rest_zx = np.zeros((q_rest, X.shape[1]))
    for i, g in enumerate(rest):
        block = slice(offsets[i], offsets[i + 1])
        c, rest_zy[block], rest_zx[block] = _level_sums(g.codes, g.n_levels, y, X)
        gram[block, block] = np.diag(c)
        for j in range(i + 1, len(rest)):
            other = slice(offsets[j], offsets[j + 1])
            table = _contingency(g.codes, g.n_levels, rest[j].codes, rest[j].n_levels)
            gram[block, other] = table
            gram[other, block] = table.T
    if rest:
        cross = _dominant_cross(dominant, rest, offsets)
    else:
        cross = np.zeros((len(counts), 0))
    return GaussianStats(
        n_obs=len(y),
        group_names=[g.name for g in groups],
        order=order,
        dominant_counts=counts,
        dominant_zy=zy,
        dominant_zx=zx,
        rest_sizes=sizes,
        rest_gram=gram,
        cross=cross,
        rest_zy=rest_zy,
        rest_zx=rest_zx,
        xtx=X.T @ X,
        xty=X.T @ y,
        yty=float(y @ y),
        y_shift=y_shift,
    )


def _level_sums(codes, n_levels, y, X):
    counts = np.bincount(codes, minlength=n_levels).astype(float)
    zy = np.bincount(codes, weights=y, minlength=n_levels)
    zx = np.column_stack([np.bincount(codes, weights=X[:, j], minlength=n_levels) for j in range(X.shape[1])]) \
        if X.shape[1] else np.zeros((n_levels, 0))
    return counts, zy, zx


def _contingency(codes_a, n_a, codes_b, n_b) -> np.ndarray:
    return np.bincount(codes_a * n_b + codes_b, minlength=n_a * n_b).reshape(n_a, n_b).astype(float)


def _dominant_cross(dominant, rest, offsets):
    n1 = dominant.n_levels
    q_rest = int(offsets[-1])
    rows = np.concatenate([dominant.codes for _ in rest])
    cols = np.concatenate([g.codes + offsets[i] for i, g in enumerate(rest)])
    table = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(n1, q_rest))
    table.sum_duplicates()
    if n1 * q_rest <= DENSE_CELL_LIMIT or table.nnz > SPARSE_DENSITY * n1 * q_rest:
        return table.toarray()
    return table
