"""Parametric bootstrap of the variance components of a random-slope model (or of crossed factors too large for
the dense path, a crowd design), simulated on the rows.

The grouped statistics that ``compare.parametric_bootstrap`` resamples hold
random intercepts only; with slopes each replicate is simulated from the REML
fit as ``slope_bootstrap`` simulates under H0, y = Xβ̂ + σ̂ZΛθ̂u + σ̂ε, refitted
by REML on the sparse core from the fitted θ, and summarised by the same
term variances the fit reports (``covariance_structure.term_variances``).
"""

from __future__ import annotations

from typing import Callable

import numpy as np
import pandas as pd

from ..design import ModelFrame
from ..runtime import numerical_work
from .bounded_search import bounded_minimum
from .covariance_structure import term_variances
from .lmm_fit import LmmFit
from .slope_bootstrap import random_factor, row_model, simulated_effects
from .sparse_deviance import SparseProfiledDeviance


def slope_reml_refits(fit: LmmFit, frame: ModelFrame, n_boot: int, rng: np.random.Generator):
    """REML refits of ``n_boot`` responses simulated on the rows from ``fit``, one at a time: yields
    ``(criterion, θ, converged)``, the replicate's sparse REML criterion (``criterion.solve(θ).beta`` its fixed
    effects), the refitted θ and whether the search converged."""
    frame = frame.require_rows("a parametric bootstrap on the sparse core")
    model = row_model(frame, fit)
    design = model.design
    mean = frame.X @ fit.beta
    factor = random_factor(design, fit.theta)
    sigma = fit.residual_sd
    for _ in range(n_boot):
        y = mean + sigma * (simulated_effects(factor, rng) + rng.standard_normal(len(mean)))
        objective = SparseProfiledDeviance(design, frame.X, y, reml=True)
        theta, converged, _ = bounded_minimum(objective, model.start, design.diagonal)
        yield objective, theta, converged


def slope_variance_bootstrap(fit: LmmFit, frame: ModelFrame, n_boot: int, rng: np.random.Generator,
                             progress: Callable[[float], None] | None = None) -> tuple[pd.DataFrame, int]:
    """REML term variances of ``n_boot`` data sets simulated from ``fit``; and how many refits did not converge."""
    rows, unconverged = [], 0
    with numerical_work():
        for objective, theta, converged in slope_reml_refits(fit, frame, n_boot, rng):
            unconverged += not converged
            sigma2 = objective.sigma2(objective.solve(theta))
            rows.append(term_variances(objective.design, theta, sigma2) | {"Residual": sigma2})
            if progress is not None:
                progress(len(rows) / n_boot)
    return pd.DataFrame(rows, columns=list(fit.variances)), unconverged
