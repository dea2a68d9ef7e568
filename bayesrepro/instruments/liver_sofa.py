"""Generated data with a known circular feature, and a small model to train on it.

The liver component of the SOFA score is *defined* by cut-offs on serum
bilirubin (mg/dL): < 1.2 → 0, 1.2–1.9 → 1, 2.0–5.9 → 2, 6.0–11.9 → 3,
≥ 12 → 4. A model given bilirubin can reproduce the score by learning the
rule; the data also hold two informative features (INR and albumin, which
track bilirubin with noise) and two pure-noise features.

The model is a least-squares regression tree (greedy binary splits),
written here so that the demonstration needs nothing beyond numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import BayesreproError

BILIRUBIN_CUTOFFS = (1.2, 2.0, 6.0, 12.0)
FEATURES = ("bilirubin", "inr", "albumin", "age", "heart_rate")


def liver_sofa_score(bilirubin) -> np.ndarray:
    """Liver SOFA score 0..4 from bilirubin in mg/dL."""
    return np.searchsorted(BILIRUBIN_CUTOFFS, np.asarray(bilirubin, dtype=float), side="right")


def make_liver_data(n: int = 800, seed: int | None = 0) -> pd.DataFrame:
    """Patients with the five features of ``FEATURES`` and the target ``sofa_liver``."""
    if n < 50:
        raise BayesreproError(f"n must be at least 50 for the liver SOFA demonstration, not {n}")
    rng = np.random.default_rng(seed)
    log_bili = rng.normal(np.log(2.0), 1.0, n)
    frame = pd.DataFrame({
        "bilirubin": np.exp(log_bili),
        "inr": 1.1 + 0.25 * log_bili + rng.normal(0, 0.2, n),
        "albumin": 3.8 - 0.35 * log_bili + rng.normal(0, 0.35, n),
        "age": rng.uniform(20, 90, n),
        "heart_rate": rng.normal(85, 15, n),
    })
    frame["sofa_liver"] = liver_sofa_score(frame["bilirubin"])
    return frame


@dataclass(frozen=True)
class RegressionTree:
    """A fitted tree: node arrays, leaves have feature −1."""

    feature: np.ndarray
    threshold: np.ndarray
    left: np.ndarray
    right: np.ndarray
    value: np.ndarray

    def predict(self, X) -> np.ndarray:
        X = np.asarray(X, dtype=float)
        node = np.zeros(len(X), dtype=int)
        while True:
            inner = self.feature[node] >= 0
            if not inner.any():
                return self.value[node]
            rows = np.flatnonzero(inner)
            goes_left = X[rows, self.feature[node[rows]]] <= self.threshold[node[rows]]
            node[rows] = np.where(goes_left, self.left[node[rows]], self.right[node[rows]])


def fit_regression_tree(X, y, max_depth: int = 4, min_leaf: int = 10) -> RegressionTree:
    """Greedy least-squares tree: each split minimises the children's summed squared error."""
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    nodes = {"feature": [], "threshold": [], "left": [], "right": [], "value": []}

    def add_leaf(rows) -> int:
        for key, val in (("feature", -1), ("threshold", np.nan), ("left", -1), ("right", -1),
                         ("value", y[rows].mean())):
            nodes[key].append(val)
        return len(nodes["value"]) - 1

    def grow(rows, depth) -> int:
        node = add_leaf(rows)
        if depth >= max_depth or len(rows) < 2 * min_leaf:
            return node
        split = _best_split(X[rows], y[rows], min_leaf)
        if split is None:
            return node
        j, threshold = split
        mask = X[rows, j] <= threshold
        nodes["feature"][node], nodes["threshold"][node] = j, threshold
        nodes["left"][node] = grow(rows[mask], depth + 1)
        nodes["right"][node] = grow(rows[~mask], depth + 1)
        return node

    grow(np.arange(len(y)), 0)
    return RegressionTree(*(np.asarray(nodes[key]) for key in ("feature", "threshold", "left", "right", "value")))


def _best_split(X, y, min_leaf):
    best, best_sse = None, np.sum((y - y.mean()) ** 2) - 1e-12
    n = len(y)
    for j in range(X.shape[1]):
        order = np.argsort(X[:, j], kind="stable")
        xs, ys = X[order, j], y[order]
        csum, csq = np.cumsum(ys), np.cumsum(ys**2)
        k = np.arange(min_leaf, n - min_leaf + 1)  # size of the left child
        valid = xs[k - 1] < xs[np.minimum(k, n - 1)]
        if not valid.any():
            continue
        left = csq[k - 1] - csum[k - 1] ** 2 / k
        right = (csq[-1] - csq[k - 1]) - (csum[-1] - csum[k - 1]) ** 2 / (n - k)
        sse = np.where(valid, left + right, np.inf)
        i = int(np.argmin(sse))
        if sse[i] < best_sse:
            best_sse = sse[i]
            best = (j, (xs[k[i] - 1] + xs[k[i]]) / 2)
    return best
