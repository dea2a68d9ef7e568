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
from .binary_bootstrap import cell_refit
from .binary_draws import draw_successes
from .collapsed_laplace import ItemProfiles
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
    refit = CellRefit(cells, fit, link)
    fixed_part = (cells.X_fixed @ fit.beta)[cells.fixed_cell]
    for _ in range(n_boot):
        eta = fixed_part.copy()
        for name, codes, levels in zip(cells.group_names, cells.codes, cells.levels):
            eta += rng.normal(0.0, math.sqrt(fit.variances[name]), len(levels))[codes]
        yield refit.beta(rng.binomial(cells.trials.astype(np.int64), link.inverse(eta)).astype(float))


class CellRefit:
    """Laplace refits of a binary model's cells with new successes, from the fit's (θ̂, β̂), by Newton steps with
    the Hessian of the observed data's criterion at the fit.

    The general search (``optimise``) estimates the curvature afresh at the start of every refit, one gradient
    per parameter: for 50 systems that is most of a replicate's cost. Replicates differ from the observed data
    only in their response, so the observed curvature at the fit is a Hessian of every replicate's criterion
    there up to sampling error, and Newton steps with it converge to the replicate's optimum at a linear rate
    (the k-step bootstrap of Andrews 2002, Econometrica 70(1), iterated to convergence). A replicate whose steps
    do not settle, a model with a component at the boundary (where the criterion's curvature in θ vanishes) and
    a Hessian that is not positive definite are refitted by ``optimise`` from the fit's estimates instead.
    With one grouping factor and the logit link the steps evaluate the criterion with the items collapsed by
    profile and total successes (``collapsed_laplace``), the same criterion at a fraction of the cost.
    """

    def __init__(self, cells, fit, link):
        import scipy.linalg

        from .criterion_hessian import gradient_hessian
        from .laplace import LaplaceDeviance

        self.cells, self.link, self.k = cells, link, len(fit.theta)
        self.profiles = ItemProfiles(cells) if len(cells.codes) == 1 and link.name == "logit" else None
        self.start = np.concatenate([np.where(fit.theta < BOUNDARY_THETA, 0.0, fit.theta), fit.beta])
        self.factor = None
        if np.all(fit.theta >= BOUNDARY_THETA):
            observed = (self.profiles.criterion(cells.successes, -2.0 * cells.log_coefficient)
                        if self.profiles is not None else LaplaceDeviance(cells, link))
            hessian = gradient_hessian(observed, self.start, np.ones(len(self.start), dtype=bool))
            try:
                self.factor = scipy.linalg.cho_factor(hessian)
            except np.linalg.LinAlgError:
                self.factor = None

    def beta(self, successes: np.ndarray) -> tuple[np.ndarray, bool]:
        """β̂ of the cells with ``successes``, and whether the refit converged."""
        import dataclasses

        import scipy.linalg

        from .laplace import LaplaceDeviance

        if self.factor is not None:
            laplace = (self.profiles.criterion(successes) if self.profiles is not None else
                       LaplaceDeviance(dataclasses.replace(self.cells, successes=successes, log_coefficient=0.0),
                                       self.link))
            params = self.start.copy()
            for _ in range(NEWTON_STEPS):
                value, gradient = laplace.value_and_gradient(params)
                if not np.isfinite(value):
                    break
                step = scipy.linalg.cho_solve(self.factor, gradient)
                params -= step
                params[:self.k] = np.abs(params[:self.k])     # the criterion is even in each θ
                if np.max(np.abs(step) / np.maximum(1.0, np.abs(params))) < STEP_TOLERANCE:
                    return params[self.k:], True
        _, params, converged = cell_refit(self.cells, successes, self.link, self.start)
        return params[self.k:], converged


# Newton steps a replicate may take, and the relative step below which it has converged
NEWTON_STEPS = 25
STEP_TOLERANCE = 1e-6
