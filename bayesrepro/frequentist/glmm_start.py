"""Where the search for a binary GLMM's (θ, β) starts: cheap approximations that land near the optimum.

θ: a Gaussian model of the same cells (every trial a 0/1 row, a linear
probability model) is fitted by ML, which takes one pass over the grouped
sums. Its component σ²_k, as a share r_k of its total variance, is the
correlation of two 0/1 scores that share only factor k's level. Under a
probit model with mean success rate p̄ = Φ(a) that correlation belongs to a
latent correlation ρ_k with Φ₂(a, a; ρ_k) − p̄² = r_k·p̄(1 − p̄) (the
tetrachoric relation), and the latent variances are σ²_k = ρ_k / (1 − Σρ)
on the probit scale; the logit scale is π²/3 times as wide.

β: the fixed effects of the model without random effects (a GLM) describe
the population average, which is attenuated against the subject-specific
effects of the GLMM: by √(1 + σ²) for probit and about √(1 + 0.346 σ²) for
logit, σ² the summed random-intercept variances (Zeger, Liang & Albert 1988,
Biometrics 44).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr, ndtri, owens_t

from ..design import BinomialCells
from ..design.gaussian import stats_from_sums
from ..links import Link
from .deviance import ProfiledDeviance
from .optimise import optimise

# the smallest relative SD the search starts from: at the bound the gradient-based search cannot move
THETA_FLOOR = 0.05
# (16√3 / 15π)², the logit's attenuation constant
LOGIT_ATTENUATION = (16.0 * np.sqrt(3.0) / (15.0 * np.pi)) ** 2
LARGEST_CORRELATION = 0.95


def latent_start(cells: BinomialCells, link: Link) -> np.ndarray:
    """θ (formula order) carried from the linear probability model's components to the latent scale."""
    if not cells.group_names:
        return np.zeros(0)
    intercept = bool(np.any(np.all(cells.X_fixed == 1.0, axis=0)))
    linear = ProfiledDeviance(stats_from_sums(cells.grouped_sums(), cells.X_fixed, list(cells.group_names), intercept),
                              reml=False)
    theta, _, _ = optimise(linear)
    residual = linear.sigma2(linear.solve(theta))
    shares = theta**2 * residual / (residual * (1.0 + theta @ theta))
    rate = float(cells.successes.sum() / cells.total_trials)
    correlations = np.array([_tetrachoric(share, rate) for share in shares])
    total = correlations.sum()
    if total > LARGEST_CORRELATION:
        correlations *= LARGEST_CORRELATION / total
        total = LARGEST_CORRELATION
    probit_variances = correlations / (1.0 - total)
    return np.maximum(np.sqrt(probit_variances * link.latent_residual), THETA_FLOOR)


def attenuated_start(glm_beta: np.ndarray, theta: np.ndarray, link: Link) -> np.ndarray:
    """The GLM's (population-averaged) β scaled up to the GLMM's subject-specific scale."""
    factor = 1.0 if link.name == "probit" else LOGIT_ATTENUATION
    return glm_beta * np.sqrt(1.0 + factor * float(theta @ theta))


def _tetrachoric(share: float, rate: float) -> float:
    """The latent (probit) correlation ρ whose two thresholded scores have correlation ``share``."""
    if share <= 0:
        return 0.0
    a = ndtri(rate)
    variance = rate * (1.0 - rate)

    def excess(rho):
        both = ndtr(a) - 2.0 * owens_t(a, np.sqrt((1.0 - rho) / (1.0 + rho)))
        return both - rate * rate - share * variance

    if excess(0.0) >= 0:   # a share within rounding of zero
        return 0.0
    if excess(LARGEST_CORRELATION) <= 0:
        return LARGEST_CORRELATION
    from scipy.optimize import brentq  # 0.15 s to import: only binary fits reach it, not every command's start-up
    return float(brentq(excess, 0.0, LARGEST_CORRELATION, xtol=1e-8))
