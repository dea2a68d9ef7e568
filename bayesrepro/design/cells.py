"""Fixed cells: the distinct combinations of the fixed variables, the grain of the fixed design.

The fixed design is a function of the fixed variables alone, so rows that
share them share a design row. Reference grids take levels and means from the
cells, and grouped sums are taken per cell, with rows in memory or not.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

COUNT = "__rows__"  # the cells' row counts, under a name no data column has


def fixed_cells(data: pd.DataFrame, variables) -> tuple[np.ndarray, pd.DataFrame]:
    """Cell code of every row, and the cells (variables' values and row counts) in code order."""
    variables = list(variables)
    if not variables:
        cells = pd.DataFrame(index=pd.RangeIndex(1))
        cells[COUNT] = len(data)
        return np.zeros(len(data), dtype=np.int64), cells
    codes = data.groupby(variables, sort=True, observed=True, dropna=False).ngroup().to_numpy(np.int64)
    first = np.unique(codes, return_index=True)[1]
    cells = data[variables].iloc[first].reset_index(drop=True)
    cells[COUNT] = np.bincount(codes)
    return codes, cells


def levels_of(cells: pd.DataFrame, column: str) -> list:
    """Levels of a categorical fixed variable, in its category order (text sorted otherwise)."""
    values = cells[column]
    if isinstance(values.dtype, pd.CategoricalDtype):
        return list(values.cat.remove_unused_categories().cat.categories)
    return sorted(values.astype(str).unique())


def mean_of(cells: pd.DataFrame, column: str) -> float:
    """Mean of a numeric fixed variable over the rows."""
    counts = cells[COUNT].to_numpy(float)
    return float(cells[column].to_numpy(float) @ counts / counts.sum())
