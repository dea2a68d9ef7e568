"""Fitting LMMs of any random-effects structure on sparse Z and Λθ (lme4's formulation).

This core fits random slopes and correlated effects, and random-intercept
models whose dense Schur complement would be large: two crossed factors with
thousands of levels each (crowd annotation: items × raters), where the dense
path's block grows with the square of the second factor's levels while the
sparse factor of A = Λ'Z'ZΛ + I stays small. Random-intercept models with one
dominant factor and small facets stay on the dense path (``deviance.py``),
which works from grouped statistics and is faster there.
"""

from __future__ import annotations

import numpy as np

from ..design import ModelFrame
from ..runtime import numerical_work
from .lmm_fit import fit_of
from .optimise import one_way_theta

# The dense path factorises a dense block with one row per level of every factor but the largest, at every
# evaluation: above this many rows (a 2,000² block costs ~0.2 s per Cholesky factor) the sparse core is used.
DENSE_SCHUR_LEVELS = 2000
SPARSE_NOTE = "fitted on the sparse core: the dense Schur complement would have {levels} rows"


def needs_general_core(frame: ModelFrame) -> bool:
    """Random slopes, or two large crossed factors with the rows in memory."""
    if frame.spec.has_slopes:
        return True
    return frame.has_rows and dense_schur_levels(frame) > DENSE_SCHUR_LEVELS


def dense_schur_levels(frame: ModelFrame) -> int:
    sizes = sorted(g.n_levels for g in frame.groups)
    return int(sum(sizes[:-1]))


def start_of(design, y: np.ndarray) -> np.ndarray:
    """lme4's start (identity blocks), with one-way ANOVA estimates for the random-intercept terms: closer to the
    optimum, so fewer evaluations of a criterion that may cost a large sparse factorisation each."""
    start = design.start()
    intercepts = [block for block in design.blocks if block.is_intercept]
    if not intercepts:
        return start
    shifted = y - y.mean()
    parts = []
    for block in intercepts:
        columns = design.Z[:, block.offset:block.offset + block.n_levels]
        parts.append((np.asarray(columns.sum(axis=0)).ravel(), np.asarray(columns.T @ shifted).ravel()))
    start[[block.theta_offset for block in intercepts]] = one_way_theta(parts, len(y), float(shifted @ shifted), 0.0)
    return start


def fit_general_frame(frame: ModelFrame, method: str):
    # the sparse core's modules (SciPy's sparse solvers among them) are imported here, not with the choice of the
    # core above, which every Gaussian fit makes
    from ..design.random_design import random_design
    from .bounded_search import bounded_minimum
    from .covariance_structure import TERM_VARIANCE_NOTE, singular_terms, term_variances, varcorr_rows
    from .sparse_deviance import SparseProfiledDeviance

    frame = frame.require_rows("a model with random slopes or two large crossed factors")
    design = random_design(frame.spec, frame.data)
    objective = SparseProfiledDeviance(design, frame.X, frame.y, reml=(method == "reml"))
    with numerical_work():
        theta, converged, message = bounded_minimum(objective, start_of(design, frame.y), design.diagonal,
                                                    stencil=True)
        solution = objective.solve(theta)
    sigma2 = objective.sigma2(solution)
    note = TERM_VARIANCE_NOTE if frame.spec.has_slopes else SPARSE_NOTE.format(levels=dense_schur_levels(frame))
    return fit_of(frame, method, objective, solution, (converged, message), term_variances(design, theta, sigma2),
                  [note], random_effects=varcorr_rows(design, theta, sigma2), singular=singular_terms(design, theta))
