"""The exact null distribution of the restricted likelihood-ratio test of one variance component.

For y = Xβ + Zb + ε with b ~ N(0, λσ²I) and H0: λ = 0, Crainiceanu & Ruppert
(2004, J. R. Stat. Soc. B 66, 165–185) show that the restricted LRT statistic
has the null distribution of

    sup_{λ ≥ 0}  (n − p) log(1 + N(λ)/D(λ)) − Σ_s log(1 + λμ_s),
    N(λ) = Σ_s λμ_s/(1 + λμ_s) w_s²,   D(λ) = Σ_s w_s²/(1 + λμ_s) + χ²_{n−p−K},

with w_s independent standard normals and μ_s the eigenvalues of
Z'(I − P_X)Z: a distribution that depends on the design alone and is drawn in
microseconds. With other variance components in the model, the null
distribution of the model with the tested component alone is used (Greven,
Crainiceanu, Küchenhoff & Peters 2008), as RLRsim's ``exactRLRT`` does; the
observed statistic is that of the REML fits of the full model with and
without the component. The supremum is taken over RLRsim's grid of λ.
"""

from __future__ import annotations

import numpy as np

from ..design import GaussianStats, ModelFrame
from ..runtime import numerical_work
from .bootstrap_test import SimulatedReference, observed_statistic
from .lmm_fit import LmmFit

# RLRsim's grid: λ = 0 and 199 values from e^-10 to e^8 (μ scaled to a maximum of 1)
LAMBDA_GRID = np.concatenate([[0.0], np.exp(np.linspace(-10.0, 8.0, 199))])
CHUNK = 2000     # draws evaluated at once over the whole grid


def rlrt_eigenvalues(stats: GaussianStats, component: int) -> np.ndarray:
    """μ: eigenvalues of Z'(I − P_X)Z for the factor ``component`` (formula order), scaled to a maximum of 1."""
    position = stats.order.index(component)
    if position == 0:
        counts, zx = stats.dominant_counts, stats.dominant_zx
    else:
        offsets = np.concatenate([[0], np.cumsum(stats.rest_sizes)]).astype(int)
        block = slice(offsets[position - 1], offsets[position])
        counts, zx = np.diag(stats.rest_gram)[block], stats.rest_zx[block]
    residual = np.diag(counts) - zx @ np.linalg.solve(stats.xtx, zx.T)
    mu = np.clip(np.linalg.eigvalsh(0.5 * (residual + residual.T)), 0.0, None)[::-1]
    return mu / mu[0]


def rlrt_null_sample(mu: np.ndarray, n_obs: int, n_fixed: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Draws from the exact null distribution of the restricted LRT statistic."""
    k = len(mu)
    free = n_obs - n_fixed
    lam_mu = LAMBDA_GRID[:, None] * mu[None, :]                     # (grid, K)
    numerator_weight = lam_mu / (1.0 + lam_mu)
    denominator_weight = 1.0 / (1.0 + lam_mu)
    penalty = np.log1p(lam_mu).sum(axis=1)                          # (grid,)
    sample = np.empty(draws)
    for start in range(0, draws, CHUNK):
        size = min(CHUNK, draws - start)
        w2 = rng.chisquare(1, (size, k))
        rest = rng.chisquare(free - k, size) if free > k else np.zeros(size)
        n = w2 @ numerator_weight.T                                  # (size, grid)
        d = w2 @ denominator_weight.T + rest[:, None]
        sample[start:start + size] = np.max(free * np.log1p(n / d) - penalty[None, :], axis=1)
    return np.maximum(sample, 0.0)


def exact_rlrt(frame1: ModelFrame, reml0: LmmFit, reml1: LmmFit, component: str, draws: int,
               seed=None) -> SimulatedReference:
    """The restricted LRT of ``component`` (a grouping factor of H1) against its exact simulated null."""
    stats = frame1.stats()
    with numerical_work():
        mu = rlrt_eigenvalues(stats, frame1.group_names.index(component))
        sample = rlrt_null_sample(mu, stats.n_obs, stats.n_fixed, draws, np.random.default_rng(seed))
    return SimulatedReference("exact-rlrt", observed_statistic(reml0.criterion, reml1.criterion), sample)
