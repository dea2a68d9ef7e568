"""One model check: the quantile residuals, every test, and the findings of the figures, from the observed
scores and a matrix of scores simulated from the model (frequentist fit or posterior predictive alike)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import tests
from .figures import binned_means
from .residuals import quantile_residuals, simulated_quantile_residuals

Z_95 = 1.959963984540054


@dataclass(frozen=True)
class Grouping:
    """A grouping factor of the model as the checks use it: every row's level code and the level labels."""

    name: str
    codes: np.ndarray
    levels: pd.Index


@dataclass(frozen=True)
class CheckedResiduals:
    """The quantile residuals of the observed and of every simulated data set, and the tests read from them."""

    residuals: np.ndarray
    simulated: np.ndarray
    tests: list


def residual_checks(observed: np.ndarray, simulated: np.ndarray, X: np.ndarray, groups: list[Grouping],
                    rng: np.random.Generator) -> CheckedResiduals:
    """Quantile residuals and the tests of a check: uniformity, dispersion, and per grouping factor the
    within-level structure and the outlying levels, Holm-adjusted together.

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

    Returns
    -------
    CheckedResiduals
        The residuals and the tests.
    """
    residuals = quantile_residuals(observed, simulated, rng)
    simulated_residuals = simulated_quantile_residuals(simulated, rng)
    found = [tests.uniformity_test(residuals, simulated_residuals), tests.dispersion_test(observed, simulated)]
    for group in groups:
        found.append(tests.within_level_structure_test(observed, simulated, X, group.codes, len(group.levels),
                                                       group.name))
        found.append(tests.outlying_levels_test(observed, simulated, group.codes, group.levels, group.name))
    return CheckedResiduals(residuals, simulated_residuals, tests.holm(found))


def fitted_finding(fitted: np.ndarray, residuals: np.ndarray, what: str) -> str:
    """What the plot of ``what`` residuals against the fitted values shows, in one sentence."""
    _, means = binned_means(fitted, residuals)
    spread = float(np.std(residuals))
    largest = float(np.max(np.abs(means))) if len(means) else float("nan")
    return (f"The mean {what} residual of each tenth of the fitted values lies between {means.min():.3g} and "
            f"{means.max():.3g}; the largest, in absolute value, is {100 * largest / spread:.0f} % of the residuals' SD "
            f"({spread:.3g}).")


def band_finding(residuals: np.ndarray, simulated: np.ndarray) -> str:
    """How often the ordered quantile residuals leave the simulated data sets' 95 % band, in one sentence."""
    ordered = np.sort(residuals)
    band = np.quantile(np.sort(simulated, axis=0), [0.025, 0.975], axis=1)
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
