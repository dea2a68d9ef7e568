"""Post-hoc inference on a fitted model: estimated means, pairwise contrasts, slopes.

Means are predictions on a reference grid (every level of the compared factor,
within every level of a conditioning factor; other numeric covariates at their
mean, other categorical ones averaged over their levels with equal weight).
Inference is asymptotic (Wald, normal reference): with thousands of test items
the degrees-of-freedom corrections of small-sample methods do not matter.
Pairwise p-values are Holm-adjusted within each family (each level of the
conditioning factor is one family).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import scipy.stats

from ..data import is_categorical
from ..errors import BayesreproError
from ..design import ModelFrame
from ..design.cells import levels_of, mean_of
from .lmm import LmmFit

Z_95 = scipy.stats.norm.ppf(0.975)


def reference_grid(frame: ModelFrame, factor: str, by: str | None = None, at: dict | None = None) -> pd.DataFrame:
    """One row per level of ``factor`` (× level of ``by``) with all other fixed variables set."""
    cells = frame.cells
    for column in [factor] + ([by] if by else []):
        if column not in frame.spec.fixed_variables:
            raise BayesreproError(f"'{column}' is not a fixed effect of {frame.formula!r}; add it to the formula")
        if not is_categorical(cells[column]):
            raise BayesreproError(f"'{column}' must be categorical to compare its levels; numeric properties give slopes")
    axes = {factor: levels_of(cells, factor)}
    if by:
        axes[by] = levels_of(cells, by)
    for column in frame.spec.fixed_variables:
        if column in axes:
            continue
        if at and column in at:
            axes[column] = [at[column]]
        elif is_categorical(cells[column]):
            axes[column] = levels_of(cells, column)  # averaged over below
        else:
            axes[column] = [mean_of(cells, column)]
    return pd.DataFrame(list(itertools.product(*axes.values())), columns=list(axes))


def estimated_means(fit: LmmFit, frame: ModelFrame, factor: str, by: str | None = None, at: dict | None = None) -> pd.DataFrame:
    """Model-estimated mean score per level (× level of ``by``) with SE and 95 % interval."""
    keys = [factor] + ([by] if by else [])
    weights, labels = averaging_weights(frame, factor, by, at)
    return _linear_summary(fit, weights, labels, keys).drop(columns=["z", "p"])


def pairwise_contrasts(fit: LmmFit, frame: ModelFrame, factor: str, by: str | None = None,
                       residual_sd: float | None = None, at: dict | None = None) -> pd.DataFrame:
    """All pairwise differences of estimated means, Holm-adjusted within each level of ``by``.

    ``effect_size`` is the difference divided by ``residual_sd`` (by default
    the fit's residual SD), the papers' standardised effect.
    """
    weights, labels = averaging_weights(frame, factor, by, at)
    sigma = fit.residual_sd if residual_sd is None else residual_sd
    rows, matrix = [], []
    families = labels.groupby(by, observed=True).groups if by else {None: labels.index}
    for family, index in families.items():
        for i, j in itertools.combinations(index, 2):
            matrix.append(weights[i] - weights[j])
            rows.append({"contrast": f"{labels.loc[i, factor]} - {labels.loc[j, factor]}", **({by: family} if by else {})})
    table = _linear_summary(fit, np.array(matrix), pd.DataFrame(rows), list(rows[0]))
    table["effect_size"] = table["estimate"] / sigma
    table["p_holm"] = table.groupby(by, observed=True)["p"].transform(holm).to_numpy() if by else holm(table["p"])
    return table


def slopes(fit: LmmFit, frame: ModelFrame, covariate: str, factor: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Slope of the score in a numeric covariate per level of ``factor``, and pairwise slope contrasts.

    A slope is the change of the prediction for a one-unit increase of the
    covariate at its mean; for models linear in the covariate (also through
    ``scale()``) that is the exact derivative.
    """
    if covariate not in frame.spec.fixed_variables or is_categorical(frame.cells[covariate]):
        raise BayesreproError(f"'{covariate}' must be a numeric fixed effect of {frame.formula!r} to have a slope")
    centre = mean_of(frame.cells, covariate)
    low, labels = averaging_weights(frame, factor, None, {covariate: centre})
    high, _ = averaging_weights(frame, factor, None, {covariate: centre + 1.0})
    per_level = _linear_summary(fit, high - low, labels, [factor])
    rows, matrix = [], []
    for i, j in itertools.combinations(labels.index, 2):
        matrix.append((high[i] - low[i]) - (high[j] - low[j]))
        rows.append({"contrast": f"{labels.loc[i, factor]} - {labels.loc[j, factor]}"})
    differences = _linear_summary(fit, np.array(matrix), pd.DataFrame(rows), ["contrast"])
    differences["p_holm"] = holm(differences["p"])
    return per_level, differences


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjustment."""
    p = np.asarray(p_values, dtype=float)
    order = np.argsort(p)
    m = len(p)
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    result = np.empty(m)
    result[order] = np.minimum(adjusted, 1.0)
    return result


def averaging_weights(frame: ModelFrame, factor: str, by: str | None, at: dict | None):
    """Design rows averaged over the nuisance axes of the reference grid, one per reported cell."""
    grid = reference_grid(frame, factor, by, at)
    keys = [factor] + ([by] if by else [])
    rows = frame.design_rows(grid)
    cells = grid.groupby(keys, sort=False, observed=True).indices
    labels = pd.DataFrame(list(cells), columns=keys) if len(keys) > 1 else pd.DataFrame({factor: list(cells)})
    weights = np.array([rows[index].mean(axis=0) for index in cells.values()])
    return weights, labels


def _linear_summary(fit: LmmFit, matrix: np.ndarray, labels: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    estimate = matrix @ fit.beta
    se = np.sqrt(np.einsum("ij,jk,ik->i", matrix, fit.covariance, matrix))
    z = estimate / se
    table = labels[keys].copy().reset_index(drop=True)
    table["estimate"] = estimate
    table["std_error"] = se
    table["low"] = estimate - Z_95 * se
    table["high"] = estimate + Z_95 * se
    table["z"] = z
    table["p"] = 2 * scipy.stats.norm.sf(np.abs(z))
    return table
