"""Post-hoc inference on a fitted model: estimated means, pairwise contrasts, slopes.

Means are predictions on a reference grid (every level of the compared factor,
within every level of a conditioning factor; other numeric covariates at their
mean, other categorical ones averaged over their levels with equal weight).
By default inference is asymptotic (Wald z, normal reference), right when the
contrast is estimated within thousands of test items. When a grouping factor
with few levels carries it (a few seeds per system), a ``SmallSample``
reference gives t tests and intervals with Kenward–Roger or Satterthwaite
degrees of freedom on the REML fit. Every table says which reference it used
(columns ``df`` and ``reference``). Pairwise p-values are Holm-adjusted within
each family (each level of the conditioning factor is one family).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from ..data import is_categorical
from ..errors import BayesreproError
from ..design import ModelFrame
from ..design.cells import levels_of, mean_of
from .ddf import KENWARD_ROGER, SmallSampleInference, t_p_values
from .lmm_fit import LmmFit

Z_95 = scipy.stats.norm.ppf(0.975)
WALD = "Wald z"


@dataclass(frozen=True)
class SmallSample:
    """t tests of contrasts with small-sample degrees of freedom: the REML fit, its machinery, the method."""

    fit: LmmFit
    inference: SmallSampleInference
    method: str

    @property
    def label(self) -> str:
        return f"{'Kenward-Roger' if self.method == KENWARD_ROGER else 'Satterthwaite'} t (REML)"


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


def estimated_means(fit: LmmFit, frame: ModelFrame, factor: str, by: str | None = None, at: dict | None = None,
                    small_sample: SmallSample | None = None) -> pd.DataFrame:
    """Model-estimated mean score per level (× level of ``by``) with SE and 95 % interval."""
    keys = [factor] + ([by] if by else [])
    weights, labels = averaging_weights(frame, factor, by, at)
    return _linear_summary(fit, weights, labels, keys, small_sample).drop(columns=["statistic", "p"])


def pairwise_contrasts(fit: LmmFit, frame: ModelFrame, factor: str, by: str | None = None,
                       residual_sd: float | None = None, at: dict | None = None,
                       small_sample: SmallSample | None = None) -> pd.DataFrame:
    """All pairwise differences of estimated means, Holm-adjusted within each level of ``by``.

    ``effect_size`` is the difference divided by ``residual_sd`` (by default
    the fit's residual SD), the papers' standardised effect. With
    ``small_sample`` the estimates, t tests and intervals are those of its REML fit.
    """
    weights, labels = averaging_weights(frame, factor, by, at)
    sigma = fit.residual_sd if residual_sd is None else residual_sd
    rows, matrix = [], []
    families = labels.groupby(by, observed=True).groups if by else {None: labels.index}
    for family, index in families.items():
        for i, j in itertools.combinations(index, 2):
            matrix.append(weights[i] - weights[j])
            rows.append({"contrast": f"{labels.loc[i, factor]} - {labels.loc[j, factor]}", **({by: family} if by else {})})
    table = _linear_summary(fit, np.array(matrix), pd.DataFrame(rows), list(rows[0]), small_sample)
    table["effect_size"] = table["estimate"] / sigma
    table["p_holm"] = table.groupby(by, observed=True)["p"].transform(holm).to_numpy() if by else holm(table["p"])
    return table


def slopes(fit: LmmFit, frame: ModelFrame, covariate: str, factor: str,
           small_sample: SmallSample | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
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
    per_level = _linear_summary(fit, high - low, labels, [factor], small_sample)
    rows, matrix = [], []
    for i, j in itertools.combinations(labels.index, 2):
        matrix.append((high[i] - low[i]) - (high[j] - low[j]))
        rows.append({"contrast": f"{labels.loc[i, factor]} - {labels.loc[j, factor]}"})
    differences = _linear_summary(fit, np.array(matrix), pd.DataFrame(rows), ["contrast"], small_sample)
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


def _linear_summary(fit: LmmFit, matrix: np.ndarray, labels: pd.DataFrame, keys: list[str],
                    small_sample: SmallSample | None = None) -> pd.DataFrame:
    """Estimate, SE, df, 95 % interval, test statistic (z or t) and p of each row's linear combination."""
    if small_sample is None:
        estimate = matrix @ fit.beta
        se = np.sqrt(np.einsum("ij,jk,ik->i", matrix, fit.covariance, matrix))
        df = np.full(len(estimate), np.inf)
        quantile = np.full(len(estimate), Z_95)
        p = 2 * scipy.stats.norm.sf(np.abs(estimate / se))
        label = WALD
    else:
        estimate = matrix @ small_sample.fit.beta
        se, df = small_sample.inference.contrasts(matrix, small_sample.method)
        quantile = scipy.stats.t.ppf(0.975, df)
        p = t_p_values(estimate, se, df)
        label = small_sample.label
    table = labels[keys].copy().reset_index(drop=True)
    table["estimate"] = estimate
    table["std_error"] = se
    table["df"] = df
    table["low"] = estimate - quantile * se
    table["high"] = estimate + quantile * se
    table["statistic"] = estimate / se
    table["p"] = p
    table["reference"] = label
    return table
