"""Tests of the contrast B − A on simulated statistics: the one injectable piece of the power simulation.

A test takes the statistics of one simulated data set (fixed effects: the
intercept and the B − A difference, in that order), a start for the
optimiser (the true relative SDs, so each refit is warm) and the strata of
the planned design (``closed_form.Strata``), refits with the package's
frequentist engine and returns the p-value. Any object with ``name``,
``description`` and ``__call__(stats, start, strata) -> RefitOutcome`` can be
passed to the simulation instead.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.special import chdtrc, ndtr, stdtr

from ..design import GaussianStats
from ..frequentist.deviance import ProfiledDeviance
from ..frequentist.glrt import STATISTIC_RESOLUTION
from ..frequentist.optimise import optimise
from .closed_form import Strata, satterthwaite_df
from .planned_test import KENWARD_ROGER, LRT, WALD

CONTRAST_COLUMN = 1


@dataclass(frozen=True)
class RefitOutcome:
    p: float
    converged: bool


def _fit(stats: GaussianStats, reml: bool, start: np.ndarray):
    objective = ProfiledDeviance(stats, reml=reml)
    theta, converged, _ = optimise(objective, start)
    return objective, objective.solve(theta), converged


def _wald(stats: GaussianStats, start: np.ndarray):
    """t = (B − A)/SE from the REML fit, the fitted components (formula order, then the residual), convergence."""
    objective, solution, converged = _fit(stats, True, start)
    sigma2 = objective.sigma2(solution)
    covariance = sigma2 * np.linalg.inv(solution.fixed_precision)
    t = solution.beta[CONTRAST_COLUMN] / np.sqrt(covariance[CONTRAST_COLUMN, CONTRAST_COLUMN])
    return float(t), np.append(sigma2 * solution.theta**2, sigma2), converged


class WaldTest:
    """Wald z test of B − A from the REML fit, normal reference: what ``compare`` prints where many levels carry it."""

    name = WALD
    description = "Wald z test of the contrast from the REML fit (normal reference)"

    def __call__(self, stats: GaussianStats, start: np.ndarray, strata: Strata) -> RefitOutcome:
        t, _, converged = _wald(stats, start)
        return RefitOutcome(float(2.0 * ndtr(-abs(t))), converged)


class KenwardRogerTest:
    """t test of B − A from the REML fit with Kenward–Roger's degrees of freedom at the fitted components.

    In a balanced design Kenward–Roger's adjusted covariance of B − A is the
    plain one (its variance is linear in the components) and its degrees of
    freedom are Satterthwaite's with the expected information of every
    component, those estimated at zero included (``closed_form``); the tests
    hold both against ``frequentist.ddf`` on simulated balanced data.
    """

    name = KENWARD_ROGER
    description = "Kenward-Roger t test of the contrast from the REML fit"

    def __call__(self, stats: GaussianStats, start: np.ndarray, strata: Strata) -> RefitOutcome:
        t, components, converged = _wald(stats, start)
        df = float(satterthwaite_df(strata, components[None, :])[0])
        return RefitOutcome(float(2.0 * stdtr(df, -abs(t))), converged)


class LikelihoodRatioTest:
    """GLRT of the model with and without the B − A difference, both fitted by ML, χ²(1) reference (``glrt``)."""

    name = LRT
    description = "likelihood-ratio test of ML fits with and without the contrast, chi2(1) reference"

    def __call__(self, stats: GaussianStats, start: np.ndarray, strata: Strata) -> RefitOutcome:
        objective1, solution1, converged1 = _fit(stats, False, start)
        objective0, solution0, converged0 = _fit(without_contrast(stats), False, start)
        statistic = objective0.criterion(solution0) - objective1.criterion(solution1)
        statistic = statistic if statistic >= STATISTIC_RESOLUTION else 0.0
        return RefitOutcome(float(chdtrc(1, statistic)), converged0 and converged1)


def without_contrast(stats: GaussianStats) -> GaussianStats:
    """The statistics of the null model: the B − A column of the fixed design dropped."""
    keep = [k for k in range(stats.n_fixed) if k != CONTRAST_COLUMN]
    return replace(
        stats,
        dominant_zx=stats.dominant_zx[:, keep],
        rest_zx=stats.rest_zx[:, keep],
        xtx=stats.xtx[np.ix_(keep, keep)],
        xty=stats.xty[keep],
        x_sum=stats.x_sum[keep],
    )


TESTS = {test.name: test for test in (WaldTest(), KenwardRogerTest(), LikelihoodRatioTest())}
