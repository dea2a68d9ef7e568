"""Miller (2024, "Adding Error Bars to Evals", arXiv:2411.00640): two models compared on the same independent items.

Each item i has a conditional mean score x_i under each model and K
resampled answers per model; the paired difference of the two models' mean
scores has variance (ω² + (σ²_A + σ²_B)/K)/n with ω² = Var(x_A − x_B) over
items and σ²_s = E[Var(score | item)] the mean within-item variance of model
s. For 0/1 scores with one answer per item (K = 1) the sum is the variance of
the paired difference, p_A(1 − p_A) + p_B(1 − p_B) − 2 Cov(x_A, x_B).
Miller's sample size for a two-sided test at α with power 1 − β is
n = (z_{α/2} + z_β)² (ω² + (σ²_A + σ²_B)/K) / δ².

This is the special case of ``closed_form`` for ``score ~ model + (1|item) +
(1|item:model)`` with K replicates per cell (σ²_item:model = ω²/2,
residual (σ²_A + σ²_B)/2), analysed with the normal reference.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri

from ..errors import BayesreproError


def paired_variance(omega2: float, within_a: float, within_b: float, resamples: int = 1) -> float:
    """Variance of one item's paired difference of mean scores: ω² + (σ²_A + σ²_B)/K."""
    if resamples < 1:
        raise BayesreproError(f"resamples per item must be at least 1, not {resamples}")
    return float(omega2 + (within_a + within_b) / resamples)


def binary_paired_variance(p_a: float, p_b: float, covariance: float) -> float:
    """p_A(1 − p_A) + p_B(1 − p_B) − 2 Cov: the paired difference of two models' 0/1 scores on one item."""
    for name, p in (("p_a", p_a), ("p_b", p_b)):
        if not 0 <= p <= 1:
            raise BayesreproError(f"{name} must be a probability in [0, 1], not {p}")
    return float(p_a * (1 - p_a) + p_b * (1 - p_b) - 2 * covariance)


def miller_power(n_items: int, effect: float, variance: float, alpha: float = 0.05) -> float:
    """Power of the two-sided paired z test of n items with per-item difference variance ``variance``."""
    se = math.sqrt(variance / n_items)
    z = float(ndtri(1 - alpha / 2))
    return float(ndtr(abs(effect) / se - z) + ndtr(-abs(effect) / se - z))


def miller_sample_size(effect: float, variance: float, alpha: float = 0.05, power: float = 0.8) -> int:
    """Miller's n = (z_{α/2} + z_β)² · variance / δ², rounded up."""
    if effect == 0:
        raise BayesreproError("no number of items detects an effect of 0")
    z_alpha, z_beta = float(ndtri(1 - alpha / 2)), float(ndtri(power))
    return int(np.ceil((z_alpha + z_beta) ** 2 * variance / effect**2))
