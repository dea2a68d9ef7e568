"""The simulated data sets a frequentist model check reads its observed scores against.

Every simulated data set draws the levels' effects afresh from the fitted covariance of every term (lme4's
``simulate``, ``use.u = FALSE``), then the scores around them, with one change: the fixed effects are set as the
fit set them for the observed scores. The fit adapts its fixed effects to the observed scores, so these reproduce
the fixed part of the data exactly (the residuals have lost p dimensions); simulated around Xβ̂ alone they would
scatter by β̂'s sampling error, and every check would be conservative (three seeds, say, move all the scores of a
data set together).

- Gaussian scores: each simulated data set keeps the observed scores' projection on the fixed design, and only
  its part orthogonal to that design is simulated (``Fit.simulate`` draws it).
- Binomial scores: in each simulated data set the linear predictor's fixed part is shifted, given its fresh
  level effects, until the expected successes of every fixed-design column equal the observed ones
  (X'E[y] = X'y, the score equations of β), then the successes are drawn. Without this the observed success
  counts, which the ML fit matches, are closer to the model than any simulated set's, and the uniformity test
  of correct binary models rejected 1 % of them at 5 % instead of 5 % (studies/model_check_calibration.py).
"""

from __future__ import annotations

import numpy as np

NEWTON_STEPS = 8
BLOCK_VALUES = 2 ** 20     # simulated values shifted at a time


def simulated_scores(fit, n: int, seed) -> np.ndarray:
    """``n`` data sets of scores simulated from ``fit``, one per column (rows × ``n``).

    Parameters
    ----------
    fit : Fit
        A frequentist fit built by ``Model.fit`` (it holds its model frame).
    n : int
        Simulated data sets.
    seed : int or None
        Seed of the random numbers.

    Returns
    -------
    numpy.ndarray
        The simulated scores (successes for a binomial model).
    """
    frame = fit._require_frame("a model check")
    if fit.family.binary:
        return _binary_scores(fit, frame, n, np.random.default_rng(seed))
    simulated = fit.simulate(n, seed=seed)
    basis = np.linalg.qr(frame.X)[0]       # the fixed design's columns are independent (aliased ones dropped)
    shift = (basis.T @ frame.y)[:, None] - basis.T @ simulated
    step = max(1, BLOCK_VALUES // n)
    for start in range(0, frame.n_obs, step):     # in place, a block of rows at a time (small temporaries)
        simulated[start:start + step] += basis[start:start + step] @ shift
    return simulated


def _binary_scores(fit, frame, n: int, rng: np.random.Generator) -> np.ndarray:
    from ..links import get_link

    engine_fit, X = fit.engine_fit, frame.X
    link = get_link(engine_fit.link)
    trials = np.ones(frame.n_obs) if frame.trials is None else np.asarray(frame.trials, dtype=float)
    eta = (X @ np.asarray(engine_fit.beta, dtype=float))[:, None] + _random_part(engine_fit, frame, n, rng)
    target = X.T @ frame.y                                                     # observed successes per column
    shift = np.zeros((X.shape[1], n))
    for _ in range(NEWTON_STEPS):
        current = eta + X @ shift
        gradient = X.T @ (trials[:, None] * link.inverse(current)) - target[:, None]
        weights = trials[:, None] * link.derivative(current)
        hessian = np.einsum("ip,is,iq->spq", X, weights, X)
        shift -= np.linalg.solve(hessian, gradient.T[:, :, None])[:, :, 0].T
    probability = link.inverse(eta + X @ shift)
    return rng.binomial(np.repeat(trials.astype(np.int64)[:, None], n, axis=1), probability).astype(float)


def _random_part(engine_fit, frame, n: int, rng: np.random.Generator) -> np.ndarray:
    """Every row's sum of fresh random effects in each of ``n`` data sets (latent scale of a binary fit)."""
    if frame.spec.has_slopes:
        from ..design.random_design import random_design
        from ..frequentist.slope_bootstrap import random_factor

        factor = random_factor(random_design(frame.spec, frame.data), np.asarray(engine_fit.theta, dtype=float))
        return np.asarray(factor @ rng.standard_normal((factor.shape[1], n)))
    total = np.zeros((frame.n_obs, n))
    for group in frame.groups:
        total += np.sqrt(engine_fit.variances[group.name]) * rng.standard_normal((group.n_levels, n))[group.codes]
    return total
