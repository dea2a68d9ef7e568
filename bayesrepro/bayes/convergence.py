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


def r_hat_columns(draws) -> np.ndarray:
    """``r_hat`` of every column of draws (chain, draw, column) at once; NaN where ``r_hat`` gives NaN."""
    x = np.asarray(draws, dtype=float)
    out = np.full(x.shape[2], math.nan)
    if x.shape[0] < 2 or x.shape[1] < 4:
        return out
    split = _split_chains(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        bulk = _split_r_hat_columns(_normal_score_columns(split))
        tail = _split_r_hat_columns(_normal_score_columns(np.abs(split - np.median(split, axis=(0, 1)))))
    out = np.maximum(bulk, tail)
    out[np.isnan(x).any(axis=(0, 1))] = math.nan
    return out


def ess_bulk_columns(draws) -> np.ndarray:
    """``ess_bulk`` of every column of draws (chain, draw, column) at once."""
    x = np.asarray(draws, dtype=float)
    if x.shape[1] < 4:
        return np.full(x.shape[2], math.nan)
    out = _ess_columns(_normal_score_columns(_split_chains(x)))
    out[np.isnan(x).any(axis=(0, 1))] = math.nan
    return out


def _normal_score_columns(x: np.ndarray) -> np.ndarray:
    """``_normal_scores`` of every column (chain, draw, column), ranks over the chains and draws of the column."""
    from scipy.special import ndtri

    columns = np.ascontiguousarray(x.reshape(-1, x.shape[2]).T)     # (column, draw): sorted row by row
    k, n = columns.shape
    order = np.argsort(columns, axis=1)
    ordered = np.take_along_axis(columns, order, axis=1).ravel()
    starts_run = np.ones(ordered.size, dtype=bool)
    starts_run[1:] = ordered[1:] != ordered[:-1]
    starts_run[::n] = True                                            # a column starts a run
    first = np.flatnonzero(starts_run)
    length = np.diff(np.append(first, ordered.size))
    average = (first % n + (length + 1) / 2.0)[np.cumsum(starts_run) - 1]   # ties get their average rank
    ranks = np.empty((k, n))
    ranks[np.arange(k)[:, None], order] = average.reshape(k, n)
    ranks = ranks.T
    return ndtri((ranks - BLOM_OFFSET) / (n - 2 * BLOM_OFFSET + 1)).reshape(x.shape)


def _split_r_hat_columns(x: np.ndarray) -> np.ndarray:
    n = x.shape[1]
    between = n * np.var(x.mean(axis=1), axis=0, ddof=1)
    within = np.mean(np.var(x, axis=1, ddof=1), axis=0)
    return np.sqrt((between / within + n - 1) / n)


def _ess_columns(x: np.ndarray) -> np.ndarray:
    """``_ess`` of every column (chain, draw, column): Geyer's sequence with its truncation and monotone pass,
    taken over pairs of autocorrelations (pair j: lags 2j and 2j + 1) as ``_ess`` walks them."""
    n_chain, n, k = x.shape
    centred = x - x.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    spectrum = np.fft.rfft(centred, n=size, axis=1)
    acov = np.fft.irfft(spectrum * np.conjugate(spectrum), n=size, axis=1)[:, :n] / n   # (chain, lag, column)
    mean_var = acov[:, 0].mean(axis=0) * n / (n - 1.0)
    var_plus = mean_var * (n - 1.0) / n
    if n_chain > 1:
        var_plus = var_plus + np.var(x.mean(axis=1), axis=0, ddof=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        rho = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus          # (lag, column)
    rho[0] = 1.0
    # ``_ess`` computes pairs j = 1, 2, ... while 2j - 1 < n - 3, stopping after the first whose sum is not positive
    n_pairs = max((n - 3) // 2, 0) + 1
    pairs = rho[0 : 2 * n_pairs : 2] + rho[1 : 2 * n_pairs : 2]       # (pair, column)
    not_positive = pairs[1:] <= 0
    stop = (np.where(not_positive.any(axis=0), np.argmax(not_positive, axis=0) + 1, n_pairs - 1) if n_pairs > 1
            else np.zeros(k, dtype=int))
    stop = np.where(pairs[0] <= 0, 0, stop)                             # j_last: the last pair computed
    monotone = np.minimum.accumulate(pairs, axis=0)
    before = np.arange(n_pairs)[:, None] < stop[None, :]
    columns = np.arange(k)
    last_even = rho[2 * stop, columns]
    kept = (pairs[stop, columns] >= 0) | (last_even > 0)
    tau = -1.0 + 2.0 * np.where(before, monotone, 0.0).sum(axis=0) + np.where(kept, last_even, 0.0)
    total = n_chain * n
    tau = np.maximum(tau, 1.0 / np.log10(total))
    out = total / tau
    constant = (x.max(axis=(0, 1)) - x.min(axis=(0, 1))) < np.finfo(float).resolution
    out[constant] = total
    out[np.isnan(rho).any(axis=0) & ~constant] = math.nan
    return out
