"""Scores simulated from a frequentist fit with fresh random effects (lme4's ``simulate``, ``use.u = FALSE``).

Every simulated data set draws new level effects from the fitted covariance of every term, then the scores
around them: Gaussian noise of the fitted σ, or successes with the link's probability. Drawn this way, the
observed scores and the simulated ones are exchangeable when the model is right, level effects included.
"""

from __future__ import annotations

import numpy as np

from ..errors import BayesreproError


def simulate_fit(engine_fit, frame, binary: bool, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` data sets of scores simulated from ``engine_fit``, as an n_obs × ``n`` matrix.

    Parameters
    ----------
    engine_fit : LmmFit or GlmmFit
        The fit to simulate from.
    frame : RowFrame
        Its model frame, with rows in memory.
    binary : bool
        Whether the model is binomial: then each row's successes out of its trials (0/1 scores: one trial).
    n : int
        Data sets to simulate.
    rng : numpy.random.Generator
        The random numbers.

    Returns
    -------
    numpy.ndarray
        One column per simulated data set.
    """
    from ..frequentist.binary_bootstrap import draw_successes
    from ..links import get_link

    if not getattr(frame, "has_rows", False):
        raise BayesreproError("a model check simulates scores row by row: use --engine memory")
    X = frame.X
    basis = np.linalg.qr(X)[0]            # the fixed design's columns are independent (aliased ones dropped)
    off_fixed = lambda v: v - basis @ (basis.T @ v)   # noqa: E731
    effects = _effects(engine_fit, frame, binary)
    out = np.empty((frame.n_obs, n))
    if binary:
        link = get_link(engine_fit.link)
        mean = X @ np.asarray(engine_fit.beta, dtype=float)
        for j in range(n):
            out[:, j] = draw_successes(link.inverse(mean + off_fixed(effects(rng))), frame.trials, rng)
    else:
        sigma = float(np.sqrt(engine_fit.residual_variance))
        mean = basis @ (basis.T @ frame.y)
        for j in range(n):
            out[:, j] = mean + off_fixed(effects(rng) + sigma * rng.standard_normal(frame.n_obs))
    return out


def _effects(engine_fit, frame, binary: bool):
    """A function drawing every row's sum of random effects."""
    if frame.spec.has_slopes:
        from ..design.random_design import random_design
        from ..frequentist.slope_bootstrap import random_factor, simulated_effects

        # θ is relative to σ for a Gaussian fit, the effects' own scale for a binary one
        scale = 1.0 if binary else float(np.sqrt(engine_fit.residual_variance))
        factor = random_factor(random_design(frame.spec, frame.data), np.asarray(engine_fit.theta, dtype=float))
        return lambda rng: scale * simulated_effects(factor, rng)
    terms = [(g.codes, g.n_levels, float(np.sqrt(engine_fit.variances[g.name]))) for g in frame.groups]

    def draw(rng):
        total = np.zeros(frame.n_obs)
        for codes, n_levels, sd in terms:
            total += sd * rng.standard_normal(n_levels)[codes]
        return total

    return draw
