"""Parametric bootstrap of the fixed effects: data simulated from a fit and refitted, β̂ of every replicate.

The replicates are those the side-by-side comparison draws for its variance
components, kept for their fixed effects instead: new level effects of every
grouping factor (and, for Gaussian scores, new residuals) drawn from the fitted
variances around Xβ̂, every replicate refitted from the fitted estimates.

- Gaussian random intercepts: REML refits in the statistics, without rows
  (``bootstrap_test.reml_refits``);
- Gaussian random slopes: REML refits on the rows by the sparse core
  (``slope_variance_bootstrap.slope_reml_refits``);
- 0/1 scores or successes out of trials: the successes of every binomial cell
  drawn with the probability of its linear predictor (rows sharing a cell share
  it, so their sum is binomial) and the Laplace criterion refitted on the cells
  (``binary_bootstrap.cell_refit``); on the rows by the sparse Laplace
  criterion where the fit itself was made there (random slopes, large crossed
  designs: ``binary_slope_bootstrap.SparseRefitModel``).
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np

from ..design import ModelFrame
from ..links import get_link
from ..runtime import numerical_work
from .binary_bootstrap import cell_refit, draw_successes
from .optimise import BOUNDARY_THETA


def fixed_effect_replicates(fit, frame: ModelFrame, binary: bool, n_boot: int, rng: np.random.Generator,
                            progress: Callable[[float], None] | None = None) -> tuple[np.ndarray, int]:
    """β̂ of ``n_boot`` data sets simulated from ``fit`` (rows: replicates, columns: ``frame.fixed_names``), and
    how many refits did not meet the convergence test (they are kept)."""
    refits = _binary_refits(fit, frame, n_boot, rng) if binary else _gaussian_refits(fit, frame, n_boot, rng)
    betas, unconverged = np.empty((n_boot, len(fit.beta))), 0
    with numerical_work():
        for replicate, (beta, converged) in enumerate(refits):
            betas[replicate] = beta
            unconverged += not converged
            if progress is not None:
                progress((replicate + 1) / n_boot)
    return betas, unconverged


def _gaussian_refits(fit, frame: ModelFrame, n_boot: int, rng: np.random.Generator):
    if frame.spec.has_slopes:
        from .slope_variance_bootstrap import slope_reml_refits

        for objective, theta, converged in slope_reml_refits(fit, frame, n_boot, rng):
            yield objective.solve(theta).beta, converged
    else:
        from .bootstrap_test import reml_refits

        for _, solution, converged in reml_refits(fit, frame, n_boot, rng):
            yield solution.beta, converged


def _binary_refits(fit, frame: ModelFrame, n_boot: int, rng: np.random.Generator):
    from .glmm import fitted_on_rows

    link = get_link(fit.link)
    if fitted_on_rows(frame):
        from .binary_slope_bootstrap import sparse_refit_model
        from .slope_bootstrap import random_factor, simulated_effects

        rows = frame.require_rows("a parametric bootstrap of a binary model fitted on its rows")
        model = sparse_refit_model(rows, fit)
        design = model.criterion.design
        factor = random_factor(design, model.theta_start)
        fixed_part = rows.X @ fit.beta
        for _ in range(n_boot):
            eta = fixed_part + simulated_effects(factor, rng)
            _, params, converged = model.refit(draw_successes(link.inverse(eta), rows.trials, rng))
            yield params[design.n_theta:], converged
        return
    cells = frame.binomial()
    start = np.concatenate([np.where(fit.theta < BOUNDARY_THETA, 0.0, fit.theta), fit.beta])
    fixed_part = cells.X @ fit.beta
    for _ in range(n_boot):
        eta = fixed_part.copy()
        for name, codes, levels in zip(cells.group_names, cells.codes, cells.levels):
            eta += rng.normal(0.0, math.sqrt(fit.variances[name]), len(levels))[codes]
        successes = rng.binomial(cells.trials.astype(np.int64), link.inverse(eta)).astype(float)
        _, params, converged = cell_refit(cells, successes, link, start)
        yield params[len(fit.theta):], converged
