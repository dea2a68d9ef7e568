"""Grouped sums of the response: what every producer of data computes, with rows in memory or not.

For a Gaussian random-intercept model the likelihood depends on the data only
through counts and sums of the response grouped by

- the fixed cell (a distinct combination of the fixed variables): n, Σy and Σ(y − ȳ_cell)²;
- each grouping factor's level within each fixed cell: n and Σy;
- each pair of grouping factors' levels: n.

These are ``GROUP BY``s: a database computes them over files without loading
rows (``producers``), and the rows in memory give them by ``bincount`` over
integer codes (``sums_from_rows``). Levels and cells are integer codes here;
their labels live with the model frame.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Above this many (level, cell) combinations a dense bincount would allocate
# more than it counts; the observed keys are found by sorting instead.
DENSE_KEY_LIMIT = 20_000_000


@dataclass(frozen=True)
class LevelCellSums:
    """One grouping factor: n and Σy of the rows in each observed (level, fixed cell)."""

    level: np.ndarray
    cell: np.ndarray
    n: np.ndarray
    total: np.ndarray


@dataclass(frozen=True)
class PairCounts:
    """Two grouping factors: rows in each observed (level of the first, level of the second)."""

    first: np.ndarray
    second: np.ndarray
    n: np.ndarray


@dataclass(frozen=True)
class GroupedSums:
    n_obs: int
    cell_n: np.ndarray                       # (C,)
    cell_total: np.ndarray                   # (C,) Σy
    cell_m2: np.ndarray                      # (C,) Σ(y − ȳ_cell)²
    sizes: tuple[int, ...]                   # levels of each grouping factor, formula order
    factors: tuple[LevelCellSums, ...]       # formula order
    pairs: dict[tuple[int, int], PairCounts]  # (i, j), i < j in formula order

    @property
    def n_cells(self) -> int:
        return len(self.cell_n)


def sums_from_rows(y: np.ndarray, cell_codes: np.ndarray, n_cells: int, factor_codes, sizes) -> GroupedSums:
    """The grouped sums of rows held in memory (codes are 0-based integer arrays)."""
    cell_n = np.bincount(cell_codes, minlength=n_cells).astype(float)
    cell_total = np.bincount(cell_codes, weights=y, minlength=n_cells)
    deviation = y - (cell_total / np.maximum(cell_n, 1.0))[cell_codes]
    cell_m2 = np.bincount(cell_codes, weights=deviation * deviation, minlength=n_cells)
    factors = []
    for codes, size in zip(factor_codes, sizes):
        keys, n, totals = _key_sums(codes.astype(np.int64) * n_cells + cell_codes, size * n_cells, y)
        level, cell = np.divmod(keys, n_cells)
        factors.append(LevelCellSums(level, cell, n, totals))
    pairs = {}
    for i in range(len(sizes)):
        for j in range(i + 1, len(sizes)):
            keys, n, _ = _key_sums(factor_codes[i].astype(np.int64) * sizes[j] + factor_codes[j], sizes[i] * sizes[j])
            first, second = np.divmod(keys, sizes[j])
            pairs[(i, j)] = PairCounts(first, second, n)
    return GroupedSums(len(y), cell_n, cell_total, cell_m2, tuple(int(s) for s in sizes), tuple(factors), pairs)


def _key_sums(keys: np.ndarray, n_keys: int, y: np.ndarray | None = None):
    """The observed keys, their counts and (with y) their sums of y."""
    if n_keys <= DENSE_KEY_LIMIT:
        counts = np.bincount(keys, minlength=n_keys)
        observed = np.flatnonzero(counts)
        totals = np.bincount(keys, weights=y, minlength=n_keys)[observed] if y is not None else None
        return observed, counts[observed].astype(float), totals
    observed, inverse = np.unique(keys, return_inverse=True)
    counts = np.bincount(inverse).astype(float)
    totals = np.bincount(inverse, weights=y) if y is not None else None
    return observed, counts, totals
