"""The binomial model with random slopes in partially centred coordinates, chosen from the posterior mode.

The non-centred density (``slope_density.binary_slope_logp``, b_l = diag(τ) L u_l) has a funnel wherever the
data say much about a level's effects, and its SDs mix slowly there: on lme4's VerbAgg, 24 items of 316 answers
each, 4 × 1,000 draws left the SD of the item slope at a bulk ESS of 144 (1,600-1,700 in these coordinates at
the same 31 leapfrog steps per draw; of 4 × 4,000 draws, 521 against 6,330). Here each level's
effects are sampled relative to the Gaussian approximation of their conditional posterior
(``slope_density.binary_centred_logp``): the data's information H_l about b_l, its cross information K_l with the
fixed coefficients β and its estimate of b_l are read once off the likelihood at the posterior mode of the
non-centred density (a GLM's information: the rows' weights n μ'(η)² / (μ (1 − μ)) times z z'). The map from z to
b is triangular given Σ and β and carries its Jacobian, so the posterior is the same; only its coordinates change.
"""

from __future__ import annotations

import numpy as np

from .compiled_density import CompiledDensity, notice_if_slow, posterior_mode
from .slope_density import binary_slope_expand, precision_and_derivatives


def centring(pilot: CompiledDensity, frame, terms, priors, link: str) -> tuple[list[np.ndarray], np.ndarray]:
    """(H_l, h_l, K_l of every level, flattened level by level, term by term) and the chains' start in the
    partially centred coordinates, from the posterior mode of the non-centred density ``pilot``."""
    with notice_if_slow("finding the posterior mode, which chooses the coordinates the sampler moves in"):
        mode = posterior_mode(pilot)
    recorded = np.empty(pilot.n_expanded)
    binary_slope_expand(mode, pilot.floats, pilot.ints, recorded)
    p = len(priors.fixed_names)
    beta = mode[:p]
    X = np.asarray(frame.X, dtype=float) - priors.x_means
    first = p + sum(term.nc * (term.nc + 1) // 2 for term in terms)   # the effects follow the SDs and correlations
    effects, eta = [], X @ beta
    for term in terms:
        b = recorded[first:first + len(term.levels) * term.nc].reshape(len(term.levels), term.nc)
        effects.append(b)
        eta += np.einsum("ij,ij->i", term.matrix, b[term.codes])
        first += b.size
    y = np.asarray(frame.y, dtype=float)
    trials = np.ones(len(y)) if frame.trials is None else np.asarray(frame.trials, dtype=float)
    weight, score = _weights_and_scores(eta, y, trials, link)
    information, target, cross, start = [], [], [], mode.copy()
    offset = p
    for t, (term, b) in enumerate(zip(terms, effects)):
        n_levels, nc, Z = len(term.levels), term.nc, term.matrix

        def per_level(values):
            return np.bincount(term.codes, weights=values, minlength=n_levels)

        H = np.stack([np.stack([per_level(weight * Z[:, a] * Z[:, c]) for c in range(nc)], axis=1)
                      for a in range(nc)], axis=1)                               # (levels, nc, nc)
        K = np.stack([np.stack([per_level(weight * Z[:, a] * X[:, j]) for j in range(p)], axis=1)
                      for a in range(nc)], axis=1)                               # (levels, nc, p)
        g = np.stack([per_level(score * Z[:, a]) for a in range(nc)], axis=1)
        h = np.einsum("lab,lb->la", H, b) + g + K @ beta
        information.append(H.ravel())
        target.append(h.ravel())
        cross.append(K.ravel())
        # the mode's effects in the new coordinates: z = G'(b − m)
        precision = precision_and_derivatives(mode, offset, nc, priors.eta[t])[0]
        z0 = offset + nc * (nc + 1) // 2
        G = np.linalg.cholesky(precision + H)
        mean = np.linalg.solve(precision + H, (h - K @ beta)[..., None])[..., 0]
        start[z0:z0 + n_levels * nc] = np.einsum("lba,lb->la", G, b - mean).ravel()
        offset = z0 + n_levels * nc
    return [np.concatenate(information), np.concatenate(target), np.concatenate(cross)], start


def _weights_and_scores(eta: np.ndarray, y: np.ndarray, trials: np.ndarray, link: str):
    """The Fisher information of every row about its linear predictor and the log-likelihood's derivative in it."""
    if link == "logit":
        mu = 1.0 / (1.0 + np.exp(-eta))
        return trials * mu * (1.0 - mu), y - trials * mu
    from scipy.special import log_ndtr

    log_density = -0.5 * eta**2 - 0.5 * np.log(2.0 * np.pi)
    low, high = log_ndtr(eta), log_ndtr(-eta)
    weight = trials * np.exp(2.0 * log_density - low - high)
    return weight, y * np.exp(log_density - low) - (trials - y) * np.exp(log_density - high)

