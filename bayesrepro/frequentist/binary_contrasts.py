"""Post-hoc inference on a binary GLMM: means and pairwise contrasts on the link and the response scale.

The reference grid and its averaging are those of ``contrasts.py``: each
level's estimated marginal mean is a linear combination w'β on the link
scale (the logit, say), averaged over the other fixed variables there. As
emmeans does for ``type = "response"`` and ``regrid``, the probability of a
level is the inverse link of that mean, and contrasts of probabilities are
differences of those back-transformed means, with delta-method standard
errors. Link-scale contrasts are Wald z tests, their exponent (logit link)
the odds ratio. Inference is asymptotic (normal reference), p-values
Holm-adjusted within each level of ``by``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
from scipy.special import ndtr

from ..design import ModelFrame
from ..links import get_link
from .contrasts import Z_95, averaging_weights, holm
from .glmm_fit import GlmmFit


def binary_means(fit: GlmmFit, frame: ModelFrame, factor: str, by: str | None = None,
                 at: dict | None = None) -> pd.DataFrame:
    """Per level: the link-scale mean with its SE, and the probability with a 95 % interval (back-transformed)."""
    weights, labels = averaging_weights(frame, factor, by, at)
    link = get_link(fit.link)
    eta = weights @ fit.beta
    se = np.sqrt(np.einsum("ij,jk,ik->i", weights, fit.covariance, weights))
    table = labels.reset_index(drop=True)
    table[f"{fit.link}"] = eta
    table[f"{fit.link}_se"] = se
    table["probability"] = link.inverse(eta)
    table["probability_se"] = link.derivative(eta) * se
    table["low"] = link.inverse(eta - Z_95 * se)
    table["high"] = link.inverse(eta + Z_95 * se)
    return table


def binary_contrasts(fit: GlmmFit, frame: ModelFrame, factor: str, by: str | None = None,
                     at: dict | None = None) -> pd.DataFrame:
    """All pairwise contrasts of the levels of ``factor`` (within each level of ``by``).

    Columns: the link-scale difference (estimate, SE, z, p, Holm-adjusted p),
    the odds ratio with its 95 % interval (logit link), and the difference of
    probabilities with its delta-method SE, 95 % interval, p and Holm-adjusted p.
    """
    weights, labels = averaging_weights(frame, factor, by, at)
    link = get_link(fit.link)
    eta = weights @ fit.beta
    slope = link.derivative(eta)
    rows, link_rows, probability_rows = [], [], []
    families = labels.groupby(by, observed=True).groups if by else {None: labels.index}
    for family, index in families.items():
        for i, j in itertools.combinations(index, 2):
            rows.append({"contrast": f"{labels.loc[i, factor]} - {labels.loc[j, factor]}", **({by: family} if by else {})})
            link_rows.append(weights[i] - weights[j])
            probability_rows.append(slope[i] * weights[i] - slope[j] * weights[j])
    table = pd.DataFrame(rows)
    link_matrix, probability_matrix = np.array(link_rows), np.array(probability_rows)
    estimate = link_matrix @ fit.beta
    se = _standard_errors(link_matrix, fit.covariance)
    table["estimate"] = estimate
    table["std_error"] = se
    table["z"] = estimate / se
    table["p"] = 2.0 * ndtr(-np.abs(table["z"].to_numpy()))
    if fit.link == "logit":
        table["odds_ratio"] = np.exp(estimate)
        table["odds_ratio_low"] = np.exp(estimate - Z_95 * se)
        table["odds_ratio_high"] = np.exp(estimate + Z_95 * se)
    difference = np.array([link.inverse(eta[i]) - link.inverse(eta[j]) for family, index in families.items()
                           for i, j in itertools.combinations(index, 2)])
    difference_se = _standard_errors(probability_matrix, fit.covariance)
    table["probability_difference"] = difference
    table["probability_se"] = difference_se
    table["probability_low"] = difference - Z_95 * difference_se
    table["probability_high"] = difference + Z_95 * difference_se
    table["probability_p"] = 2.0 * ndtr(-np.abs(difference / difference_se))
    for column in ("p", "probability_p"):
        adjusted = table.groupby(by, observed=True)[column].transform(holm) if by else holm(table[column])
        table[f"{column}_holm"] = np.asarray(adjusted)
    return table


def _standard_errors(matrix: np.ndarray, covariance: np.ndarray) -> np.ndarray:
    return np.sqrt(np.einsum("ij,jk,ik->i", matrix, covariance, matrix))
