"""One model check: the quantile residuals, every test, and the findings of the figures, from the observed
scores and a matrix of scores simulated from the model (frequentist fit or posterior predictive alike)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import tests
from .residuals import quantile_residuals, simulated_quantile_residuals

Z_95 = 1.959963984540054
MIN_LEVELS = 5     # a factor of fewer levels has no tail to be out in


@dataclass(frozen=True)
class Grouping:
    """A grouping factor of the model as the checks use it: every row's level code and the level labels."""

    name: str
    codes: np.ndarray
    levels: pd.Index


@dataclass(frozen=True)
class CheckedResiduals:
    """The observed quantile residuals, the simulated data sets' 95 % band of every ordered residual, and the
    tests."""

    residuals: np.ndarray
    band: np.ndarray          # 2 × n: the 2.5 % and 97.5 % points of the simulated data sets' i-th smallest residual
    tests: list
    notes: list


def residual_checks(observed: np.ndarray, simulated: np.ndarray, X: np.ndarray, groups: list[Grouping],
                    rng: np.random.Generator, discrete: bool = True) -> CheckedResiduals:
    """Quantile residuals and the tests of a check: uniformity, dispersion, and per grouping factor the
    within-level structure (where a fixed effect varies within its levels) and the outlying levels (factors of
    at least ``MIN_LEVELS`` levels), Holm-adjusted together.

    Parameters
    ----------
    observed : numpy.ndarray
        The n observed scores.
    simulated : numpy.ndarray
        n × S scores simulated from the model.
    X : numpy.ndarray
        The fixed-effects design.
    groups : list of Grouping
        The model's grouping factors.
    rng : numpy.random.Generator
        Source of the randomization of tied ranks.
    discrete : bool, default True
        Whether simulated scores can tie (binary or binomial scores); False for scores simulated with Gaussian
        noise, which never do.

    Returns
    -------
    CheckedResiduals
        The residuals and the tests.
    """
    residuals = quantile_residuals(observed, simulated, rng)
    ordered = simulated_quantile_residuals(simulated, rng, ties=discrete)
    ordered.sort(axis=0)
    found = [tests.uniformity_test(residuals, ordered)]
    band = simulated_band(ordered)
    del ordered
    residual, simulated_residual = tests.marginal_residuals(observed, simulated)
    found.append(tests.dispersion_test(residual, simulated_residual))
    no_slopes, few_levels = [], []
    for group in groups:
        structure = tests.within_level_structure_test(residual, simulated_residual, X, group.codes,
                                                      len(group.levels), group.name)
        if structure is None:
            no_slopes.append(group.name)
        else:
            found.append(structure)
        if len(group.levels) < MIN_LEVELS:
            few_levels.append(group.name)
        else:
            found.append(tests.outlying_levels_test(residual, simulated_residual, group.codes, group.levels,
                                                    group.name))
    notes = []
    if no_slopes:
        notes.append(f"no fixed effect varies within the levels of {', '.join(no_slopes)}: no slope to check there")
    if few_levels:
        notes.append(f"outlying levels are not tested for {', '.join(few_levels)} (fewer than {MIN_LEVELS} levels)")
    return CheckedResiduals(residuals, band, tests.holm(found), notes)


def simulated_band(ordered: np.ndarray) -> np.ndarray:
    """The 2.5 % and 97.5 % points, over the simulated data sets, of each ordered residual (rows of ``ordered``)."""
    rows, s = ordered.shape
    low, high = int(np.floor(0.025 * (s - 1))), int(np.ceil(0.975 * (s - 1)))
    step = max(1, 2 ** 20 // s)      # a block of rows at a time: no copy of the whole matrix
    return np.concatenate([np.partition(ordered[start:start + step], [low, high], axis=1)[:, [low, high]]
                           for start in range(0, rows, step)]).T


def binned_means(fitted: np.ndarray, residuals: np.ndarray, bins: int = 10) -> tuple[np.ndarray, np.ndarray]:
    """Mean fitted value and mean residual of each of ``bins`` groups of rows of consecutive fitted values."""
    order = np.argsort(fitted, kind="stable")
    parts = [part for part in np.array_split(order, min(bins, len(order))) if len(part)]
    return np.array([fitted[p].mean() for p in parts]), np.array([residuals[p].mean() for p in parts])


def fitted_finding(fitted: np.ndarray, residuals: np.ndarray, what: str) -> str:
    """What the plot of ``what`` residuals against the fitted values shows, in one sentence."""
    _, means = binned_means(fitted, residuals)
    spread = float(np.std(residuals))
    largest = float(np.max(np.abs(means))) if len(means) else float("nan")
    return (f"The mean {what} residual of each tenth of the fitted values lies between {means.min():.3g} and "
            f"{means.max():.3g}; the largest, in absolute value, is {100 * largest / spread:.0f} % of the residuals' SD "
            f"({spread:.3g}).")


def band_finding(residuals: np.ndarray, band: np.ndarray) -> str:
    """How often the ordered quantile residuals leave the simulated data sets' 95 % band, in one sentence."""
    ordered = np.sort(residuals)
    outside = int(np.sum((ordered < band[0]) | (ordered > band[1])))
    return (f"The ordered quantile residuals leave the band of 95 % of the simulated data sets at {outside} of "
            f"{len(residuals)} positions ({100 * outside / len(residuals):.1f} %; neighbours move together, so a "
            "single excursion covers many).")


def standardized_levels(effects: pd.DataFrame, varcorr: list[dict]) -> pd.DataFrame:
    """Level effects over their SD under the model: each conditional mode's variance is the term's variance
    less the level's conditional variance (lme4's condVar), the variance of a predictor of the effect.

    Parameters
    ----------
    effects : pandas.DataFrame
        ``Fit.level_effects()`` (``group``, ``term``, ``level``, ``estimate``, ``sd``).
    varcorr : list of dict
        The fit's ``VarCorr`` rows (``group``, ``var1``, ``var2``, ``vcov``).

    Returns
    -------
    pandas.DataFrame
        ``effects`` with a ``z`` column (NaN where the term's variance is zero).
    """
    variance, groups = {}, set(effects["group"])
    for row in varcorr:
        if row["var2"] is None and row["var1"] is not None:
            group = row["group"] if row["group"] in groups else re.sub(r"\.\d+$", "", row["group"])  # (x || g)
            variance[(group, row["var1"].strip("()"))] = row["vcov"]
    term_variance = np.array([variance.get((g, t.strip("()")), np.nan) for g, t in zip(effects["group"], effects["term"])])
    sd = effects["sd"].to_numpy(dtype=float)
    spread = np.sqrt(np.clip(term_variance - np.where(np.isfinite(sd), sd ** 2, 0.0), 0.0, None))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(spread > 0, effects["estimate"].to_numpy(dtype=float) / spread, np.nan)
    return effects.assign(z=z)


def levels_finding(table: pd.DataFrame, group: str) -> str:
    """What the Q–Q plot of a factor's standardized level effects shows, in one sentence."""
    z = table["z"].to_numpy(dtype=float)
    z = z[np.isfinite(z)]
    if not len(z):
        return f"The level effects of {group} are all zero: its variance was estimated at zero."
    beyond = int(np.sum(np.abs(z) > Z_95))
    return (f"{beyond} of {len(z)} standardized level effects of {group} lie beyond ±1.96 ({100 * beyond / len(z):.1f} %, "
            f"5 % expected under the model); the largest |z| is {np.max(np.abs(z)):.2f}.")
