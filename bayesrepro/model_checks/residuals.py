"""Residuals of a fitted model: response, Pearson and deviance (as lme4 defines them), and simulation-based
randomized quantile residuals (Dunn & Smyth 1996; the simulated form of DHARMa).

The quantile residual of an observation is its rank among values simulated from the fitted model, randomized
between the ranks it ties with: with S simulations, (#{s < y} + U·(#{s = y} + 1)) / (S + 1), U uniform. When the
observed value and the simulated ones are exchangeable (the model is right), this is exactly uniform on (0, 1),
for continuous and for 0/1 scores alike.
"""

from __future__ import annotations

import numpy as np
from scipy.special import xlogy

BLOCK_VALUES = 2 ** 20     # values of the simulated matrix ranked at a time


def quantile_residuals(observed: np.ndarray, simulated: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """The randomized quantile residual of every observation among its simulated values.

    Parameters
    ----------
    observed : numpy.ndarray
        The n observed scores.
    simulated : numpy.ndarray
        n × S scores simulated from the fitted model, one column per simulated data set.
    rng : numpy.random.Generator
        Source of the randomization between tied ranks.

    Returns
    -------
    numpy.ndarray
        n residuals in (0, 1).
    """
    observed = np.asarray(observed, dtype=float)
    simulated = np.asarray(simulated, dtype=float)
    less = (simulated < observed[:, None]).sum(axis=1)
    tied = (simulated == observed[:, None]).sum(axis=1)
    return (less + rng.uniform(size=len(observed)) * (tied + 1)) / (simulated.shape[1] + 1)


def simulated_quantile_residuals(simulated: np.ndarray, rng: np.random.Generator, ties: bool = True) -> np.ndarray:
    """Every simulated data set's quantile residuals among the other simulated data sets.

    Each column plays the observed scores once, ranked among the S − 1 other columns: the reference
    distribution of any statistic of the residuals, with the same dependence between rows (shared levels)
    as the observed residuals have under the model.

    Parameters
    ----------
    simulated : numpy.ndarray
        n × S simulated scores.
    rng : numpy.random.Generator
        Source of the randomization between tied ranks.
    ties : bool, default True
        Whether a row may hold equal values (discrete scores); False skips looking for them, for scores drawn
        from a continuous distribution, which has none.

    Returns
    -------
    numpy.ndarray
        n × S residuals in (0, 1), single precision (they are ranks among S values: 2⁻²⁴ is far below 1/S),
        stored column by column.
    """
    simulated = np.asarray(simulated, dtype=float)
    rows, s = simulated.shape
    residuals = np.empty((s, rows), dtype=np.float32).T     # column-major: the checks sort every column
    step = max(1, BLOCK_VALUES // s)
    for start in range(0, rows, step):     # blocks of rows: small temporaries, and the same random stream
        block = slice(start, min(start + step, rows))
        residuals[block] = _ranks_among_others(simulated[block], rng, ties)
    return residuals


def _ranks_among_others(simulated: np.ndarray, rng: np.random.Generator, ties: bool) -> np.ndarray:
    """``simulated_quantile_residuals`` of some rows."""
    rows, s = simulated.shape
    order = np.argsort(simulated, axis=1)
    starts = np.ones((rows, s), dtype=bool)
    if ties:
        ordered = np.take_along_axis(simulated, order, axis=1)
        starts[:, 1:] = ordered[:, 1:] != ordered[:, :-1]
        del ordered
    positions = np.arange(s, dtype=np.float32)
    if starts.all():   # no ties (continuous scores): a value's rank is its position
        ranked = positions + rng.random(size=(rows, s), dtype=np.float32)
    else:
        below = np.maximum.accumulate(np.where(starts, positions, 0), axis=1)     # values below, among all columns
        ends = np.ones((rows, s), dtype=bool)
        ends[:, :-1] = starts[:, 1:]
        last = np.minimum.accumulate(np.where(ends, positions, s)[:, ::-1], axis=1)[:, ::-1]
        ranked = below + rng.random(size=(rows, s), dtype=np.float32) * (last - below + 1)  # ties among the others
    ranked /= np.float32(s)
    # in single precision (k + U) / S rounds to 1 (or is 0) about once in 10^5 values: keep them inside (0, 1),
    # where their normal scores are finite
    np.clip(ranked, np.finfo(np.float32).tiny, np.nextafter(np.float32(1), np.float32(0)), out=ranked)
    residuals = np.empty((rows, s), dtype=np.float32)
    np.put_along_axis(residuals, order, ranked, axis=1)
    return residuals


def pearson_residuals(observed: np.ndarray, fitted: np.ndarray, binary: bool,
                      trials: np.ndarray | None = None) -> np.ndarray:
    """Pearson residuals as lme4's ``residuals(m, type = "pearson")``.

    Parameters
    ----------
    observed : numpy.ndarray
        The scores: Gaussian scores, 0/1 scores, or successes out of ``trials``.
    fitted : numpy.ndarray
        The conditional fitted values: the mean, or the probability of success.
    binary : bool
        Whether the model is binomial.
    trials : numpy.ndarray, optional
        Trials of every row of a binomial model (None: one each).

    Returns
    -------
    numpy.ndarray
        For a Gaussian fit the response residual y − ŷ (lme4 does not scale it by σ); for a binomial fit
        √n (y/n − μ) / √(μ(1 − μ)), y/n the observed proportion.
    """
    observed, fitted, n = _as_arrays(observed, fitted, trials)
    if not binary:
        return observed - fitted
    return np.sqrt(n) * (observed / n - fitted) / np.sqrt(fitted * (1.0 - fitted))


def deviance_residuals(observed: np.ndarray, fitted: np.ndarray, binary: bool,
                       trials: np.ndarray | None = None) -> np.ndarray:
    """Deviance residuals as lme4's ``residuals(m, type = "deviance")``.

    Parameters
    ----------
    observed : numpy.ndarray
        The scores: Gaussian scores, 0/1 scores, or successes out of ``trials``.
    fitted : numpy.ndarray
        The conditional fitted values: the mean, or the probability of success.
    binary : bool
        Whether the model is binomial.
    trials : numpy.ndarray, optional
        Trials of every row of a binomial model (None: one each).

    Returns
    -------
    numpy.ndarray
        For a Gaussian fit y − ŷ; for a binomial fit sign(y/n − μ) times the square root of the row's unit
        deviance 2[y log(y/(nμ)) + (n − y) log((n − y)/(n(1 − μ)))].
    """
    observed, fitted, n = _as_arrays(observed, fitted, trials)
    if not binary:
        return observed - fitted
    failures = n - observed
    unit = 2.0 * (xlogy(observed, observed / (n * fitted)) + xlogy(failures, failures / (n * (1.0 - fitted))))
    return np.sign(observed / n - fitted) * np.sqrt(np.maximum(unit, 0.0))


def _as_arrays(observed, fitted, trials) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The scores, the fitted values and every row's trials (one each when ``trials`` is None) as float arrays."""
    observed, fitted = np.asarray(observed, dtype=float), np.asarray(fitted, dtype=float)
    return observed, fitted, np.ones_like(observed) if trials is None else np.asarray(trials, dtype=float)
