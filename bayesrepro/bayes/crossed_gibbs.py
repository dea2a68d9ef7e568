"""A collapsed Gibbs sampler for crossed random intercepts whose cost per sweep grows with the rows alone.

For y = μ + Σ_k b_k + ε (intercept only; the fast path's priors: μ ~ Normal,
σ_k ~ HalfNormal, σ ~ HalfStudentT) the fast path's dense Schur complement
grows with the square of the levels. Given the other factors' effects, one
factor's effects are independent a posteriori, so each sweep updates, factor by
factor,

1. (μ, b_k) jointly given the rest (Papaspiliopoulos, Roberts & Zanella 2020,
   Biometrika 107(1)): μ from its marginal with b_k integrated out — the level
   means r̄_m of the partial residual are independent N(μ, σ_k² + σ²/n_m) — then
   every b_km from its scalar conditional N(v_m Σ(r − μ)/σ², v_m),
   v_m = 1/(n_m/σ² + 1/σ_k²);
2. σ_k twice, interweaving its two parameterisations (Yu & Meng 2011,
   J. Comput. Graph. Statist. 20(3)): given b_k, an independence Metropolis step
   whose proposal σ_k² ~ InvGamma((M_k − 1)/2, Σ b²/2) is the likelihood, accepted by
   the ratio of the half-normal prior; given the standardised effects b_k/σ_k, σ_k
   is a regression coefficient with a Gaussian likelihood, and with its half-normal
   prior a normal truncated at 0, drawn exactly;

then σ from the same independence step with proposal InvGamma((N − 1)/2, RSS/2)
accepted by the ratio of its half-Student-t prior. A sweep is a few ``bincount``s
over the rows: O(N K). A kept draw is taken every ``SWEEPS_PER_DRAW`` sweeps.
The effects themselves are not kept per draw; only μ and the SDs are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.special

from ..errors import BayesreproError
from .draws import Draws
from .gaussian_model import sd_name
from .priors import RESIDUAL, PriorSpec

# Sweeps per kept draw: the SD of a factor whose levels have few rows each (the raters of a crowd, most of them
# scoring one or two items) has the slowest chain, a bulk ESS of about 11 % of the draws on the skewed 40,000-row
# crowd with one sweep per draw, just above the 100 per chain the diagnostics ask; two sweeps double it.
SWEEPS_PER_DRAW = 2


@dataclass(frozen=True)
class CrossedData:
    y: np.ndarray
    codes: list[np.ndarray]
    counts: list[np.ndarray]
    names: list[str]

    @property
    def n_obs(self) -> int:
        return len(self.y)


def crossed_data(frame) -> CrossedData:
    if frame.fixed_names != ["Intercept"] or not frame.has_rows:
        raise BayesreproError(
            f"the crossed Gibbs sampler covers intercept-only formulas with rows in memory, not {frame.formula!r}; "
            "drop the fixed terms, or use --engine memory"
        )
    codes = [g.codes for g in frame.groups]
    counts = [np.bincount(c, minlength=g.n_levels).astype(float) for c, g in zip(codes, frame.groups)]
    return CrossedData(np.asarray(frame.y, dtype=float), codes, counts, [g.name for g in frame.groups])


def sample_crossed(data: CrossedData, priors: PriorSpec, draws: int, tune: int, chains: int, seed) -> Draws:
    """``chains`` chains of ``tune`` sweeps and ``draws`` kept draws (``SWEEPS_PER_DRAW`` sweeps each); μ and every SD
    per kept draw, as a ``Draws``."""
    if not priors.half_normal_sds:
        raise BayesreproError("the crossed Gibbs sampler takes half-normal SD priors ('scaled' or 'bambi'), not 'r2d2'")
    streams = np.random.SeedSequence(seed).spawn(chains)
    names = [*data.names, RESIDUAL]
    kept = np.empty((chains, draws, len(names) + 1))
    for chain, stream in enumerate(streams):
        kept[chain] = _chain(data, priors, draws, tune, np.random.default_rng(stream))
    result = Draws({sd_name(name): kept[:, :, k] for k, name in enumerate(names)})
    result.add("intercept", kept[:, :, -1])
    return result


def _chain(data: CrossedData, priors: PriorSpec, draws: int, tune: int, rng) -> np.ndarray:
    y, codes, counts = data.y, data.codes, data.counts
    n_factors = len(codes)
    mu0, s0 = float(priors.fixed_mu[0]), float(priors.fixed_sigma[0])
    scales = [priors.group_sigma[name] for name in data.names]
    spread = float(np.std(y)) or 1.0
    mu = float(np.mean(y))
    sd = rng.uniform(0.2, 1.0, n_factors) * spread
    sigma = rng.uniform(0.2, 1.0) * spread
    effects = [np.zeros(len(c)) for c in counts]
    fitted = np.zeros_like(y)          # Σ_k b_k at each row
    out = np.empty((draws, n_factors + 2))
    for sweep in range(tune + SWEEPS_PER_DRAW * draws):
        for k in range(n_factors):
            fitted -= effects[k][codes[k]]
            partial = y - fitted            # μ + b_k + ε
            totals = np.bincount(codes[k], weights=partial, minlength=len(counts[k]))
            mu = _intercept_given_others(totals, counts[k], sd[k], sigma, mu0, s0, rng)
            centred = totals - counts[k] * mu
            effects[k] = _level_effects(centred, counts[k], sd[k], sigma, rng)
            sd[k] = _centred_sd(effects[k], sd[k], scales[k], rng)
            sd[k], effects[k] = _standardised_sd(centred, counts[k], effects[k], sd[k], sigma, scales[k], rng)
            fitted += effects[k][codes[k]]
        residual = y - mu - fitted
        sigma = _residual_sd(float(np.sum(residual * residual)), len(y), sigma, priors, rng)
        kept = sweep - tune
        if kept >= 0 and kept % SWEEPS_PER_DRAW == SWEEPS_PER_DRAW - 1:
            out[kept // SWEEPS_PER_DRAW] = [*sd, sigma, mu]
    return out


def _intercept_given_others(totals, counts, sd_k, sigma, mu0, s0, rng) -> float:
    """μ given every factor but k, with b_k integrated out: level means are N(μ, σ_k² + σ²/n)."""
    weights = 1.0 / (sd_k * sd_k + sigma * sigma / counts)
    precision = 1.0 / (s0 * s0) + float(weights.sum())
    mean = (mu0 / (s0 * s0) + float(np.sum(weights * totals / counts))) / precision
    return mean + rng.normal() / np.sqrt(precision)


def _level_effects(centred_totals, counts, sd_k, sigma, rng) -> np.ndarray:
    variance = 1.0 / (counts / (sigma * sigma) + 1.0 / (sd_k * sd_k))
    return variance * centred_totals / (sigma * sigma) + np.sqrt(variance) * rng.normal(size=len(counts))


def _centred_sd(effects, sd_k, scale, rng) -> float:
    """σ_k given b_k: proposal from the likelihood (inverse gamma in σ_k²), accepted by the half-normal prior's ratio."""
    proposal = np.sqrt(_inverse_gamma((len(effects) - 1) / 2.0, float(np.sum(effects * effects)) / 2.0, rng))
    log_ratio = (sd_k * sd_k - proposal * proposal) / (2.0 * scale * scale)
    return proposal if np.log(rng.random()) < log_ratio else sd_k


def _standardised_sd(centred_totals, counts, effects, sd_k, sigma, scale, rng):
    """σ_k given the standardised effects z = b_k/σ_k: the partial residual less μ is σ_k z + ε (level totals
    ``centred_totals``); with a HalfNormal(scale) prior a normal truncated at 0. The effects move with it (b_k = σ_k z)."""
    z = effects / sd_k
    precision = float(np.sum(counts * z * z)) / (sigma * sigma) + 1.0 / (scale * scale)
    mean = float(np.sum(z * centred_totals)) / (sigma * sigma) / precision
    new = _positive_normal(mean, 1.0 / np.sqrt(precision), rng)
    return new, new * z


def _residual_sd(rss: float, n: int, sigma: float, priors: PriorSpec, rng) -> float:
    proposal = np.sqrt(_inverse_gamma((n - 1) / 2.0, rss / 2.0, rng))
    nu, scale = priors.residual_nu, priors.residual_sigma

    def log_prior(s):
        return -(nu + 1.0) / 2.0 * np.log1p((s / scale) ** 2 / nu)

    return proposal if np.log(rng.random()) < log_prior(proposal) - log_prior(sigma) else sigma


def _inverse_gamma(shape: float, scale: float, rng) -> float:
    return scale / rng.gamma(shape)


def _positive_normal(mean: float, sd: float, rng) -> float:
    """A draw of N(mean, sd²) truncated to (0, ∞), by the inverse of its distribution function."""
    low = scipy.special.ndtr(-mean / sd)
    u = low + (1.0 - low) * rng.random()
    return float(mean + sd * scipy.special.ndtri(min(u, 1.0 - 1e-16)))
