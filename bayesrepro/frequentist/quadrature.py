"""Adaptive Gauss–Hermite quadrature of a binomial GLMM with one grouping factor (glmer's nAGQ > 1).

With a single factor the likelihood is a product of one-dimensional
integrals, one per level i:

    L_i = ∫ Π_{c ∈ i} p(y_c | x_c'β + θu) φ(u) du.

Each is centred at the conditional mode û_i and scaled by σ_i = 1/√D_i
(D_i = θ²Σ_c W_c + 1, the level's diagonal of the penalized system, as in
lme4), so with nodes z_j and weights w_j of the rule for the standard normal
density and g_i(u) = −2 Σ_c ℓ_c + u²:

    −2 log L_i = g_i(û_i) + log D_i − 2 log Σ_j w_j exp(−(g_i(û_i + σ_i z_j) − g_i(û_i))/2 + z_j²/2).

One node is the Laplace approximation. The log-likelihood includes the
binomial coefficients (lme4's quadrature deviance leaves out the saturated
model's log-likelihood, so its ``logLik`` differs from this by that
constant for aggregated binomial data; for 0/1 scores the two agree).
"""

from __future__ import annotations

import numpy as np

from .. import limits
from ..limits import check_nodes
from .laplace import LaplaceDeviance

MAX_NODES = limits.NAGQ.high


class QuadratureDeviance:
    """−2 log L(θ, β) by adaptive Gauss–Hermite quadrature; parameters packed as (θ, β₁, …, β_p)."""

    def __init__(self, laplace: LaplaceDeviance, nodes: int):
        check_nodes(nodes, laplace.n_components)
        self.laplace = laplace
        self.nodes, weights = np.polynomial.hermite_e.hermegauss(nodes)
        self.weights = weights / np.sqrt(2.0 * np.pi)
        self._u = laplace.last_mode

    def __call__(self, params: np.ndarray) -> float:
        theta, beta = params[:1], params[1:]
        if theta[0] < 0:
            theta = -theta  # the criterion is even in θ
        model = self.laplace
        u = model.mode(theta, beta, self._u)
        self._u = u
        level = model.layout.dominant
        n_levels = model.layout.n1
        t = float(theta[0])
        offset = model.fixed_part(beta)
        eta = offset + t * u[level]
        D = t * t * np.bincount(level, weights=model.link.weight(model.n, eta), minlength=n_levels) + 1.0
        sigma = 1.0 / np.sqrt(D)
        base = self._level_deviance(offset, t, u, level, n_levels)
        total = np.zeros(n_levels)
        for z, w in zip(self.nodes, self.weights):
            shifted = u + z * sigma
            excess = self._level_deviance(offset, t, shifted, level, n_levels) - base
            total += w * np.exp(-0.5 * excess + 0.5 * z * z)
        return float(np.sum(base + np.log(D) - 2.0 * np.log(total)) + model.constant)

    def _level_deviance(self, offset, t, u, level, n_levels) -> np.ndarray:
        model = self.laplace
        loglik = model.link.loglik_kernel(model.y, model.n, offset + t * u[level])
        return -2.0 * np.bincount(level, weights=loglik, minlength=n_levels) + u * u
