"""Level labels: the text under which a grouping or factor column's values are levels, shared by the readers
of data (``data``) and the condition language (``where``)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import BayesreproError


def level_labels(values: pd.Series) -> pd.Series:
    """The text of each value as a level (missing stays missing); distinct values keep distinct labels.

    Text is kept as written. Numbers (from a numeric column of a DataFrame or
    a Parquet file) are written the shortest way that tells them apart:
    integral values without a decimal point (``3``), others as Python writes
    them (``0.001``, ``1e-05``).
    """
    if values.dtype.kind in "biuf" or isinstance(values.dtype, pd.StringDtype):
        # numbers of one type, or text: each distinct value labelled once
        codes, distinct = pd.factorize(values)
        labels = np.array([_label(v) for v in distinct] + [None], dtype=object)   # code −1: missing
        return pd.Series(labels[codes], index=values.index, name=values.name)
    objects = values.astype(object)
    if any(isinstance(v, (list, tuple, dict, np.ndarray)) for v in objects.dropna()):
        raise BayesreproError(f"column '{values.name}' holds lists or objects; a level is one number, text or "
                              "true/false value per row")
    distinct = pd.unique(objects.dropna())
    if len({isinstance(v, str) for v in distinct}) > 1:
        text = next(v for v in distinct if isinstance(v, str))
        number = next(v for v in distinct if not isinstance(v, str))
        raise BayesreproError(
            f"column '{values.name}' holds both text ({text!r}) and other values ({number!r}); "
            "give it one type, e.g. every value as text"
        )
    return objects.map(_label, na_action="ignore").where(values.notna(), None)


def level_factor(values: pd.Series) -> pd.Categorical:
    """``pd.Categorical(level_labels(values))``, built from the distinct values' labels where they are numbers of
    one type or text: their sorted labels are the categories, without a second factorisation of a label per row."""
    if not (values.dtype.kind in "biuf" or isinstance(values.dtype, pd.StringDtype)):
        return pd.Categorical(level_labels(values))
    codes, distinct = pd.factorize(values)
    labels = [_label(v) for v in np.asarray(distinct, dtype=object)]   # not one by one from an Arrow array
    order = sorted(range(len(labels)), key=labels.__getitem__)
    rank = np.empty(len(labels) + 1, dtype=np.int64)
    rank[order] = np.arange(len(labels))
    rank[-1] = -1   # code −1: missing
    categories = pd.Index([labels[i] for i in order])
    if not categories.is_unique:   # two values written alike: let the labels decide, as level_labels does
        return pd.Categorical(level_labels(values))
    return pd.Categorical.from_codes(rank[codes], categories=categories)


def _label(value) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)) and np.isfinite(value) and float(value).is_integer():
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        return repr(float(value))
    return str(value)
