"""What a pandas DataFrame given as data may hold: text column names, and columns of numbers, text, true/false,
categories or dates; anything else (MultiIndex columns, complex numbers, intervals, lists in cells) is refused in
one line naming the column, before an analysis reads it wrongly or fails deep inside a library."""

from __future__ import annotations

import pandas as pd

from .errors import BayesreproError, shown

# pandas' names (pandas.api.types.infer_dtype) for object columns of plain values; other columns are searched
_PLAIN_OBJECTS = {"string", "empty", "integer", "floating", "mixed-integer-float", "decimal", "boolean",
                  "datetime", "datetime64", "date", "categorical"}
_CELL_TYPES = (list, tuple, dict, set, frozenset, complex, bytes, bytearray)


def check_frame(frame: pd.DataFrame) -> None:
    if isinstance(frame.columns, pd.MultiIndex):
        raise BayesreproError(
            f"the DataFrame has MultiIndex columns (the first: {shown(frame.columns[0])}); give one level of "
            "column names, e.g. frame.columns = ['_'.join(map(str, c)) for c in frame.columns]"
        )
    for position, name in enumerate(frame.columns):
        if not isinstance(name, str):
            raise BayesreproError(
                f"column {position} of the DataFrame is named {shown(name)}, not by a text; formulas name columns by "
                "text: rename it, e.g. frame.columns = frame.columns.map(str)"
            )
        _check_column(name, frame.iloc[:, position])


def _check_column(name: str, values: pd.Series) -> None:
    dtype = values.dtype
    if pd.api.types.is_complex_dtype(dtype):
        raise BayesreproError(f"column '{name}' holds complex numbers; a score or a factor is a real number or a "
                              "text: keep its real part (frame[name].real) or its absolute value")
    if isinstance(dtype, (pd.IntervalDtype, pd.PeriodDtype, pd.SparseDtype)) or pd.api.types.is_timedelta64_dtype(dtype):
        raise BayesreproError(f"column '{name}' is of type {dtype}, which the analyses do not read; convert it to "
                              "numbers or text (frame[name].astype(str))")
    if dtype == object:
        if pd.api.types.infer_dtype(values, skipna=True) not in _PLAIN_OBJECTS:
            cells = values[values.map(lambda cell: isinstance(cell, _CELL_TYPES))]
            if len(cells):
                kind = type(cells.iloc[0])
                raise BayesreproError(
                    f"column '{name}' holds a value of type {kind.__name__} in the row with index label "
                    f"{shown(cells.index[0])}; a cell holds one number or text: {_conversion(name, kind)}"
                )


def _conversion(name: str, kind: type) -> str:
    """How to turn cells of ``kind`` into values the analyses read."""
    column = f"frame[{name!r}]"
    if issubclass(kind, (bytes, bytearray)):
        return f"decode them as text, {column} = {column}.str.decode('utf-8')"
    if issubclass(kind, complex):
        return f"keep their real part, {column} = {column}.map(lambda v: v.real)"
    if issubclass(kind, (list, tuple)):
        return (f"split them into one column per part ({column}.apply(pd.Series)), or label each whole value as "
                f"text, {column} = {column}.map(str)")
    return f"label each value as text, {column} = {column}.map(str), or expand it into columns"
