"""Rank-normalised split R-hat and bulk and tail effective sample sizes, in NumPy.

The estimators of Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021),
"Rank-normalization, folding, and localization: an improved R-hat for
assessing convergence of MCMC", Bayesian Analysis 16(2), as ArviZ computes
them (``arviz.rhat(method="rank")``, ``arviz.ess(method="bulk"|"tail")``): the
tests hold the two equal to rounding. Every Bayesian result carries these
figures, and importing ArviZ to compute them takes seconds (it loads
matplotlib); these functions need NumPy alone.

Every function takes the draws of one scalar quantity as an array
(chain, draw) and returns NaN when they hold a NaN or are too few
(R-hat: 2 chains of 4 draws; ESS: 4 draws).
"""

from __future__ import annotations

import math

import numpy as np

BLOM_OFFSET = 3 / 8          # ranks to normal scores: Φ⁻¹((r − 3/8) / (S + 1/4)), Blom (1958)
TAIL_QUANTILES = (0.05, 0.95)


def r_hat(draws) -> float:
    """Rank-normalised split R-hat: the larger of the bulk (z-scores) and the tail (folded z-scores) one."""
    x = np.asarray(draws, dtype=float)
    if _too_few(x, min_chains=2):
        return math.nan
    split = _split_chains(x)
    bulk = _split_r_hat(_normal_scores(split))
    tail = _split_r_hat(_normal_scores(np.abs(split - np.median(split))))
    return max(bulk, tail)


def ess_bulk(draws) -> float:
    """Bulk effective sample size: that of the normal scores of the split chains."""
    x = np.asarray(draws, dtype=float)
    if _too_few(x, min_chains=1):
        return math.nan
    return _ess(_normal_scores(_split_chains(x)))


def ess_tail(draws) -> float:
    """Tail effective sample size: the smaller one of the indicators of the 5 % and 95 % quantiles."""
    x = np.asarray(draws, dtype=float)
    if _too_few(x, min_chains=1):
        return math.nan
    return min(_ess(_split_chains((x <= np.quantile(x, p)).astype(float))) for p in TAIL_QUANTILES)


def _too_few(x: np.ndarray, min_chains: int) -> bool:
    return x.ndim != 2 or x.shape[0] < min_chains or x.shape[1] < 4 or bool(np.isnan(x).any())


def _split_chains(x: np.ndarray) -> np.ndarray:
    """Each chain's first and last half as two chains (the middle draw of an odd length left out)."""
    half = x.shape[1] // 2
    return np.vstack((x[:, :half], x[:, -half:]))


def _normal_scores(x: np.ndarray) -> np.ndarray:
    """Normal quantiles of the ranks of all draws together (ties get their average rank)."""
    from scipy.special import ndtri

    flat = x.ravel()
    order = np.argsort(flat, kind="mergesort")
    ordered = flat[order]
    starts_run = np.concatenate(([True], ordered[1:] != ordered[:-1]))
    first = np.flatnonzero(starts_run)
    length = np.diff(np.append(first, flat.size))
    ranks = np.empty(flat.size)
    ranks[order] = (first + (length + 1) / 2.0)[np.cumsum(starts_run) - 1]
    return ndtri((ranks - BLOM_OFFSET) / (flat.size - 2 * BLOM_OFFSET + 1)).reshape(x.shape)


def _split_r_hat(x: np.ndarray) -> float:
    n = x.shape[1]
    between = n * np.var(x.mean(axis=1), ddof=1)
    within = np.mean(np.var(x, axis=1, ddof=1))
    with np.errstate(divide="ignore", invalid="ignore"):  # constant draws: NaN, as ArviZ gives
        return float(np.sqrt((between / within + n - 1) / n))


def _autocovariance(x: np.ndarray) -> np.ndarray:
    """Autocovariance of every chain at every lag (biased, divided by n), by FFT of the zero-padded chains."""
    n = x.shape[1]
    centred = x - x.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    return np.fft.irfft(spectrum * np.conjugate(spectrum), n=size, axis=1)[:, :n] / n


def _ess(x: np.ndarray) -> float:
    """ESS of chains (chain, draw): Geyer's initial positive, then monotone, sequence of autocorrelations."""
    n_chain, n = x.shape
    if np.max(x) - np.min(x) < np.finfo(float).resolution:
        return float(x.size)
    acov = _autocovariance(x)
    mean_var = np.mean(acov[:, 0]) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if n_chain > 1:
        var_plus += np.var(x.mean(axis=1), ddof=1)
    rho = np.zeros(n)
    rho[0] = rho_even = 1.0
    rho[1] = rho_odd = 1.0 - (mean_var - np.mean(acov[:, 1])) / var_plus
    t = 1
    while t < n - 3 and rho_even + rho_odd > 0.0:
        rho_even = 1.0 - (mean_var - np.mean(acov[:, t + 1])) / var_plus
        rho_odd = 1.0 - (mean_var - np.mean(acov[:, t + 2])) / var_plus
        if rho_even + rho_odd >= 0:
            rho[t + 1], rho[t + 2] = rho_even, rho_odd
        t += 2
    last = t - 2
    if rho_even > 0:
        rho[last + 1] = rho_even
    t = 1
    while t <= last - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = rho[t + 2] = (rho[t - 1] + rho[t]) / 2.0
        t += 2
    total = x.size
    tau = -1.0 + 2.0 * np.sum(rho[: last + 1]) + np.sum(rho[last + 1 : last + 2])
    tau = max(tau, 1.0 / np.log10(total))
    return math.nan if np.isnan(rho).any() else float(total / tau)
