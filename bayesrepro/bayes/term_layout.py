"""A random-effect term of the Bayesian slope models on the rows, the names of its sampled variables, and its
covariance matrix per draw."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd


@dataclass(frozen=True)
class TermLayout:
    """One random-effect term on the rows: level codes, model matrix (rows × nc) and mean(zz') over the rows."""

    group: str                   # lme4's name ("g", or "g.1" for a second term of g)
    columns: tuple[str, ...]
    codes: np.ndarray
    levels: pd.Index
    matrix: np.ndarray
    mean_outer: np.ndarray

    @property
    def nc(self) -> int:
        return len(self.columns)

    @property
    def pairs(self) -> list[tuple[int, int]]:
        """(j, i), i > j, column by column: the order of the recorded correlations (lme4's VarCorr order)."""
        return [(j, i) for j in range(self.nc) for i in range(j + 1, self.nc)]


def sd_variable(group: str) -> str:
    return f"sd|{group}"


def corr_variable(group: str) -> str:
    return f"corr|{group}"


def term_covariances(draws, term: TermLayout) -> np.ndarray:
    """Every draw's covariance matrix of the term's effects: (chain, draw, nc, nc)."""
    sd = draws[sd_variable(term.group)]
    correlation = np.broadcast_to(np.eye(term.nc), (*sd.shape[:-1], term.nc, term.nc)).copy()
    if term.nc > 1:
        corr = draws[corr_variable(term.group)]
        for k, (j, i) in enumerate(term.pairs):
            correlation[..., i, j] = correlation[..., j, i] = corr[..., k]
    return correlation * sd[..., :, None] * sd[..., None, :]
