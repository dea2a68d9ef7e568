"""The simulated data sets a frequentist model check reads its observed scores against.

They are ``Fit.simulate``'s (lme4's ``simulate``: fresh random effects, then scores around them), with one
change for Gaussian scores: every simulated data set keeps the observed scores' projection on the fixed
design, and only its part orthogonal to that design is simulated. The observed scores' residuals around
their fitted fixed effects have lost those dimensions; simulated scores drawn around Xβ̂ have not, and would
scatter around the observed fit by the sampling error of β̂ (large when a factor with few levels, such as
seeds, moves every score of a level together). Binary scores are simulated as ``Fit.simulate`` draws them.
"""

from __future__ import annotations

import numpy as np


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
    simulated = fit.simulate(n, seed=seed)
    if fit.family.binary:
        return simulated
    frame = fit._require_frame("a model check")
    basis = np.linalg.qr(frame.X)[0]       # the fixed design's columns are independent (aliased ones dropped)
    return simulated + (basis @ (basis.T @ (frame.y[:, None] - simulated)))
