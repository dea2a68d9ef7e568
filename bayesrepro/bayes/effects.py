"""Effects drawn after sampling, from their exact Gaussian conditional given the SDs.

Given the SDs the joint posterior of θ = (fixed effects, level effects) is
Gaussian: δ = θ − m ~ N(P⁻¹ W'r, σ² P⁻¹). It is drawn blockwise, as the
marginal likelihood was evaluated: first the small block b from its Schur
complement, then each item's effect from its scalar conditional given b.
One draw of θ per posterior draw of the SDs gives draws from the joint
posterior of the full model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .marginal import MarginalStats, small_block_variances


@dataclass(frozen=True)
class EffectDraws:
    fixed: np.ndarray            # (D, p) fixed effects on the original (uncentred) design
    levels: dict                 # factor name -> (D, n_levels) level effects
    residual_ss: np.ndarray      # (D,) Σ e² of the realised residuals
    residual_sum: np.ndarray     # (D,) Σ e
    small_delta: np.ndarray      # (D, s) δ_b, kept for per-item log-likelihoods


def draw_effects(stats: MarginalStats, fixed_var, sigma, sd_by_group: dict, rng) -> EffectDraws:
    """One draw of every effect per posterior draw of the SDs (arrays of shape (D,))."""
    from .compiled import entry_points

    sigma = np.asarray(sigma, dtype=float)
    n_draws = sigma.shape[0]
    s2 = sigma**2
    va = np.asarray(sd_by_group[stats.dominant], dtype=float) ** 2
    w = va[:, None] / (s2[:, None] + stats.count_values[None, :] * va[:, None])
    lam = small_block_variances(
        stats,
        np.broadcast_to(fixed_var, (n_draws, stats.n_fixed)),
        [np.asarray(sd_by_group[name], dtype=float) ** 2 for name in stats.rest],
    )
    scale = np.sqrt(lam) / sigma[:, None]
    noise = rng.standard_normal((n_draws, stats.size))
    delta_b = entry_points().small_block_draws(
        *(np.ascontiguousarray(a, dtype=float) for a in (stats.wbwb, stats.G, stats.wbr, stats.g, w, scale, sigma, noise))
    )
    shrink = va[:, None] / (va[:, None] * stats.counts[None, :] + s2[:, None])
    mean_a = (stats.dominant_r[None, :] - np.asarray(stats.cross @ delta_b.T).T) * shrink
    delta_a = mean_a + np.sqrt(s2[:, None] * shrink) * rng.standard_normal(mean_a.shape)

    theta_b = stats.prior_mean[None, :] + delta_b
    p = stats.n_fixed
    fixed = theta_b[:, :p].copy()
    if stats.intercept_index is not None:
        # undo the centring: intercept of the original design
        fixed[:, stats.intercept_index] -= fixed @ stats.x_means
    levels = {stats.dominant: delta_a}
    offset = p
    for name, size in zip(stats.rest, stats.rest_sizes):
        levels[name] = theta_b[:, offset : offset + size]
        offset += size

    wr = np.einsum("ds,s->d", delta_b, stats.wbr) + delta_a @ stats.dominant_r
    quad = (
        np.einsum("di,ij,dj->d", delta_b, stats.wbwb, delta_b)
        + 2.0 * np.einsum("da,da->d", delta_a, np.asarray(stats.cross @ delta_b.T).T)
        + (delta_a**2) @ stats.counts
    )
    residual_ss = stats.rr - 2.0 * wr + quad
    total_r = stats.sum_r if stats.sum_r is not None else np.nan
    residual_sum = total_r - delta_b @ stats.colsum_b - delta_a @ stats.counts
    return EffectDraws(fixed, levels, residual_ss, residual_sum, delta_b)


def finite_population_variances(stats: MarginalStats, draws: EffectDraws) -> dict:
    """Variance of the realised effects of each factor and of the realised residuals (Gelman 2005)."""
    out = {name: np.var(draws.levels[name], axis=1, ddof=1) for name in stats.group_names}
    n = stats.n_obs
    if np.all(np.isfinite(draws.residual_sum)):
        out["Residual"] = (draws.residual_ss - draws.residual_sum**2 / n) / (n - 1)
    else:
        out["Residual"] = draws.residual_ss / (n - 1)
    return out
