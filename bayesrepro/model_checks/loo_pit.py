"""LOO-PIT of a posterior: where every observed score falls in its leave-one-out predictive distribution.

The LOO-PIT of score y_i is P(ỹ_i ≤ y_i | y_−i), the probability integral transform under the predictive of
the model fitted without it. PSIS-LOO estimates it from the full posterior: per draw s the score's likelihood
p(y_i | θ_s) (θ_s with the observed levels' effects; where a fast path integrates them out they are drawn from
their exact conditional per draw, as ``Posterior.predict`` draws them), ArviZ's Pareto-smoothed importance
weights w_is ∝ 1 / p(y_i | θ_s), and

- Gaussian scores: Σ_s w_is Φ((y_i − μ_is) / σ_s), the predictive CDF itself rather than the share of predictive
  draws below y_i (what ``arviz.loo_pit`` counts), which has no Monte-Carlo error beyond the weights';
- 0/1 scores and successes out of trials: the PIT of a discrete score is not uniform even under the right model
  (a 0/1 score has two values), so the randomized PIT of Czado, Gneiting & Held (2009, Biometrics 65:1254),
  P(ỹ_i < y_i | y_−i) + U · P(ỹ_i = y_i | y_−i), U uniform, which is uniform under the model; ArviZ's smoothing
  of integer data is not.

Under the model every LOO-PIT value is uniform. They are read with Kolmogorov's reference (the KS test of n
independent uniforms): they are not independent, but in a mixed model those of one level are negatively
correlated (each is compared with a prediction from the others), which makes the test conservative, not
liberal (studies/model_check_calibration.py measures it; Tesso & Vehtari 2026, arXiv:2603.02928, find the
same of independence-based tests of LOO-PIT values and propose dependence-aware ones).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

LOO_DRAWS = 1000           # posterior draws the LOO-PIT weights (spread evenly over the chains)
MIN_LOO_DRAWS = 100        # fewer and the Pareto tail fit of PSIS is unreliable
MATRICES = 4               # draws × rows arrays held at once: the means, the log-likelihood, the CDFs, the weights
PARETO_K_LIMIT = 0.7       # Vehtari et al. (2024): above it the importance weights are unreliable


@dataclass(frozen=True)
class LooPit:
    """The LOO-PIT value of every observed score, PSIS's Pareto k of its weights and the draws behind them."""

    values: np.ndarray
    pareto_k: np.ndarray
    draws: int
    randomized: bool


def loo_pit(bayes, rng: np.random.Generator) -> LooPit:
    """The LOO-PIT of every observed score of ``bayes`` (see the module).

    Parameters
    ----------
    bayes : BayesFit
        The posterior (scores in memory).
    rng : numpy.random.Generator
        Random numbers: the conditional draws of integrated-out level effects, the randomization of discrete PITs.

    Returns
    -------
    LooPit
        The values, in row order.

    Raises
    ------
    BayesreproError
        If the posterior holds no effect draws, or too many rows for ``MIN_LOO_DRAWS`` draws within the memory
        limit.
    """
    from .. import limits
    from ..bayes.prediction import predictive_draws
    from ..errors import BayesreproError

    frame = bayes.frame
    chains, per_chain = bayes.draws.shape
    total = chains * per_chain
    count = min(total, LOO_DRAWS, limits.MAX_POSTERIOR_VALUES // (MATRICES * frame.n_obs))
    if count < MIN_LOO_DRAWS:
        raise BayesreproError(f"{frame.n_obs} rows need {MIN_LOO_DRAWS} posterior draws each, over the memory limit")
    kept = np.unique(np.linspace(0, total - 1, count).round().astype(int))   # the draws predictive_draws keeps
    mean = predictive_draws(bayes, None, "mean", count, seed=rng)            # draws × rows
    sigma = bayes.draws["sigma"].reshape(-1)[kept] if bayes.family == "gaussian" else None
    values, pareto_k = psis_pit(frame.y, mean, sigma, frame.trials, _relative_efficiency(bayes, len(kept)), rng)
    return LooPit(values, pareto_k, len(kept), sigma is None)


def psis_pit(y: np.ndarray, mean: np.ndarray, sigma: np.ndarray | None, trials: np.ndarray | None, reff: float,
             rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """PSIS-LOO PIT of every score from posterior draws of its conditional mean (see the module).

    Parameters
    ----------
    y : numpy.ndarray
        The n scores (successes for a binomial model).
    mean : numpy.ndarray
        S × n draws of every score's conditional mean (a probability for a binomial model).
    sigma : numpy.ndarray or None
        The S draws of the residual SD of Gaussian scores; None for binomial scores.
    trials : numpy.ndarray or None
        Trials of every row of a binomial model (None: one each).
    reff : float
        Relative efficiency of the draws (PSIS's tail length).
    rng : numpy.random.Generator
        The randomization of discrete PITs.

    Returns
    -------
    tuple of numpy.ndarray
        The n PIT values and the Pareto k of every score's importance weights.
    """
    import arviz as az
    from scipy.special import ndtr

    if sigma is not None:
        z = (y - mean) / sigma[:, None]
        loglik = -0.5 * z * z - np.log(sigma)[:, None] - 0.5 * np.log(2 * np.pi)
        below, at = ndtr(z), None
        del z
    else:
        from scipy.stats import binom

        n = np.ones_like(y) if trials is None else np.asarray(trials, dtype=float)
        mean = np.clip(mean, 1e-300, 1 - 1e-16)
        loglik = binom.logpmf(y, n, mean)
        below, at = binom.cdf(y - 1, n, mean), np.exp(loglik)
    log_weights, pareto_k = az.psislw(-loglik.T, reff=reff)
    del loglik
    weights = np.exp(np.asarray(log_weights))                                # rows × draws, each row summing to 1
    values = np.einsum("is,si->i", weights, below)
    if at is not None:
        values += rng.uniform(size=len(y)) * np.einsum("is,si->i", weights, at)
    return np.clip(values, 0.0, 1.0), np.asarray(pareto_k, dtype=float)


def _relative_efficiency(bayes, kept: int) -> float:
    """PSIS's relative efficiency of the kept draws, as ``arviz.loo_pit`` takes it: the mean ESS of the
    posterior's fixed effects and variances over the draws, capped at the kept draws' count (thinning makes
    draws more independent, up to fully)."""
    import arviz as az

    draws = bayes.draws
    chains, per_chain = draws.shape
    if chains < 2:
        return 1.0
    columns = [draws[name].reshape(chains, per_chain, -1) for name in ("fixed", "variance") if name in draws]
    values = np.concatenate(columns, axis=2)
    ess = [float(az.ess(values[:, :, j], method="mean")) for j in range(values.shape[2])
           if np.ptp(values[:, :, j]) > 0]
    return 1.0 if not ess else float(min(1.0, np.mean(ess) / kept))
