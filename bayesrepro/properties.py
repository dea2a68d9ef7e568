"""Data properties of test items, to condition comparisons on."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .errors import BayesreproError

# Hagmann & Riezler's sentence-length classes (in words): short ≤ 15, typical 16–55, very long > 55.
LENGTH_EDGES = (15, 55)
LENGTH_LABELS = ("short", "typical", "very long")


def length_class(lengths, edges=LENGTH_EDGES, labels=LENGTH_LABELS) -> pd.Categorical:
    """Bin lengths into ordered classes: (0, e1], (e1, e2], …, (e_last, ∞)."""
    values = pd.to_numeric(pd.Series(lengths), errors="coerce")
    if values.isna().any():
        raise BayesreproError("lengths must be numbers; found a missing or non-numeric value")
    if len(labels) != len(edges) + 1:
        raise BayesreproError(f"{len(edges)} edges make {len(edges) + 1} classes, but {len(labels)} labels were given")
    bins = [-np.inf, *edges, np.inf]
    return pd.cut(values, bins, labels=list(labels)).array
