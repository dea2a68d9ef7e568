"""Fit binary GLMMs with random slopes or correlated effects by Laplace's approximation, as glmer (nAGQ = 1);
also random-intercept models whose crossed factors couple more levels than the cell engine holds (crowd designs:
items × thousands of raters), on the same sparse core.

The criterion (``sparse_laplace.py``) is minimised over (θ, β) jointly, as
glmer's second stage does, by the bounded search of the Gaussian slopes core
(``bounded_search.py``: quasi-Newton steps with the exact gradient until its
largest component is below the convergence test's tolerance, L-BFGS-B where
they head for a bound or stall), in coordinates that make the problem well scaled for
its quasi-Newton steps: every row of a term's block of Λθ is multiplied by
the root mean square of its model-matrix column (a slope on a covariate
measured in tens moves η as much as an intercept), and β is whitened by the
Cholesky factor of its information at the start, around the fixed effects of
the model without random effects (a GLM). The search starts from identity
blocks in those coordinates (lme4's start where the columns have unit scale). Standard errors of
β come from the Hessian of the criterion over (θ, β), as glmer's ``vcov``.
Each term's covariance matrix is on the latent scale of the link (σ² = 1 in
lme4's Σ = σ²TT'); the term variances of the VCA table are the variances the
terms add to one observation, averaged over the rows, as for Gaussian slopes.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg

from ..design import Family, ModelFrame
from ..design.binomial import binomial_cells
from ..design.random_design import RandomDesign, lower_triangle, random_design
from ..errors import BayesreproError
from ..links import get_link, log_binomial_coefficient
from ..runtime import numerical_work
from .bounded_search import GRADIENT_TOLERANCE, bounded_minimum
from .covariance_structure import TERM_VARIANCE_NOTE, singular_terms, term_variances, varcorr_rows
from .criterion_hessian import covariance_of_beta, gradient_hessian, value_hessian
from .glmm_fit import GlmmFit, fixed_rows
from .laplace import LaplaceDeviance
from .optimise import BOUNDARY_THETA, one_way_theta
from .sparse_laplace import SparseLaplaceDeviance

# The search stops where an iteration lowers f by less than this share (5e-8 of a criterion of 5e4, where f's own
# rounding is near 1e-11): the estimates then agree with the optimum's to about 1e-7 relative. It is restarted only
# where the gradient fails the convergence test: at the optimum the exact gradient stays near 1e-4 (f's rounding
# over curvatures of 1e4), which no further search can lower.
SEARCH_CHANGE = 1e-12
# The least start of a random intercept's θ: a component the moments put near zero is searched from here.
MOMENT_FLOOR = 0.1


def fit_binary_slopes(frame: ModelFrame, family: Family, nagq: int, notes: list[str]) -> GlmmFit:
    """The Laplace ML fit of a binary model on the sparse core (rows in memory)."""
    frame = frame.require_rows("a binary model with random slopes or large crossed factors")
    if nagq != 1:
        raise BayesreproError("binary models with random slopes are fitted by the Laplace approximation only; "
                              "leave --nagq at 1")
    fixed_cells = binomial_cells(dataclasses.replace(frame, groups=[]))   # checks the 0/1 scores
    link = get_link(family.link)
    trials = np.ones(frame.n_obs) if frame.trials is None else frame.trials
    design = random_design(frame.spec, frame.data)
    laplace = SparseLaplaceDeviance(design, frame.X, frame.y, trials, link,
                                    float(log_binomial_coefficient(frame.y, trials).sum()))
    with numerical_work():
        theta_start = moment_start(design, frame.y, trials, link)
        coordinates = ScaledCoordinates(design, laplace, LaplaceDeviance(fixed_cells, link).glm_start(), theta_start)
        start = np.concatenate([design.start(), np.zeros(frame.n_fixed)]) if theta_start is None else \
            coordinates.scaled(theta_start)
        params, converged, message = scaled_minimum(coordinates, start)
        deviance, fixed_precision = laplace.evaluate(params)
        theta, beta = params[:design.n_theta], params[design.n_theta:]
        free = np.where(laplace.bounded, params > BOUNDARY_THETA, True)
        hessian = (gradient_hessian(laplace, params, free) if laplace.exact_gradient
                   else value_hessian(laplace, params, free))
        covariance = covariance_of_beta(hessian, free, design.n_theta, fixed_precision)
    return GlmmFit(
        formula=frame.formula, family=family.name, link=family.link, n_obs=frame.n_obs, n_cells=frame.n_obs, nagq=1,
        variances=term_variances(design, theta, 1.0), fixed_names=list(frame.fixed_names), beta=beta,
        covariance=covariance, loglik=-0.5 * deviance, converged=converged, message=message, theta=theta,
        n_levels={g.name: g.n_levels for g in frame.groups}, **fixed_rows(fixed_cells, beta),
        notes=notes + ([TERM_VARIANCE_NOTE] if frame.spec.has_slopes else []),
        random_effects=varcorr_rows(design, theta, 1.0)[:-1],   # no residual row: the latent one is fixed
        singular=singular_terms(design, theta),
    )


def moment_start(design: RandomDesign, successes: np.ndarray, trials: np.ndarray, link) -> np.ndarray | None:
    """θ to start from: for random intercepts of 0/1 rows, each factor's one-way ANOVA estimate of its SD relative
    to the residual's (``optimise.one_way_theta``) times the latent residual SD of the link, an SD on the latent
    scale (the threshold model's reading of a correlation of 0/1 scores), at least ``MOMENT_FLOOR``; None (lme4's
    identity blocks) for other terms or binomial rows. On a skewed crowd design this start is within 20 % of the estimates, where
    identity blocks are 45–180 % away, and the search takes 13 evaluations instead of 17."""
    if not all(block.is_intercept for block in design.blocks) or np.any(trials != 1):
        return None
    y = np.asarray(successes, dtype=float)
    parts = []
    for block in design.blocks:
        codes = design.Z[:, block.offset:block.offset + block.n_levels].tocsr().indices
        parts.append((np.bincount(codes, minlength=block.n_levels).astype(float),
                      np.bincount(codes, weights=y, minlength=block.n_levels)))
    theta = one_way_theta(parts, len(y), float(y @ y), float(y.sum())) * np.sqrt(link.latent_residual)
    return np.maximum(theta, MOMENT_FLOOR)


def scaled_minimum(coordinates: "ScaledCoordinates", start: np.ndarray) -> tuple[np.ndarray, bool, str]:
    """(θ, β) minimising the criterion from ``start`` (scaled coordinates), whether the search converged, and why
    not: the search of every sparse Laplace fit, the observed one's and a bootstrap's refits alike."""
    scaled, converged, message = bounded_minimum(coordinates, start, coordinates.laplace.bounded, SEARCH_CHANGE,
                                                 GRADIENT_TOLERANCE, quasi_newton=True)
    return coordinates.unscaled(scaled), converged, message


class ScaledCoordinates:
    """The criterion over scaled θ and whitened β (see the module's note); ``unscaled`` maps back to (θ, β)."""

    def __init__(self, design: RandomDesign, laplace: SparseLaplaceDeviance, beta: np.ndarray,
                 theta: np.ndarray | None = None):
        """Around ``beta`` and ``theta`` (default: identity blocks in the scaled coordinates)."""
        self.laplace = laplace
        scales = []
        for block in design.blocks:
            rows, _ = lower_triangle(block.nc)
            scales.append(np.sqrt(np.diag(block.mean_outer))[rows])
        self.theta_scale = np.concatenate(scales) if scales else np.zeros(0)
        self.beta = beta
        theta = design.start() / self.theta_scale if theta is None else theta
        self.whitening = np.linalg.cholesky(laplace.evaluate(np.concatenate([theta, beta]))[1])

    def scaled(self, theta: np.ndarray) -> np.ndarray:
        """The point (``theta``, the centre's β) in the scaled coordinates."""
        return np.concatenate([theta * self.theta_scale, np.zeros(len(self.beta))])

    def unscaled(self, scaled: np.ndarray) -> np.ndarray:
        k = len(self.theta_scale)
        beta = self.beta + scipy.linalg.solve_triangular(self.whitening, scaled[k:], lower=True, trans="T")
        return np.concatenate([scaled[:k] / self.theta_scale, beta])

    @property
    def has_exact_gradient(self) -> bool:
        return self.laplace.exact_gradient

    def __call__(self, scaled: np.ndarray) -> float:
        if self.has_exact_gradient:   # kept for the search's next call, at the same point
            return self.value_and_gradient(scaled)[0]
        return self.laplace(self.unscaled(np.asarray(scaled, dtype=float)))

    def value_and_gradient(self, scaled: np.ndarray) -> tuple[float, np.ndarray]:
        """f and its gradient in the scaled coordinates (chain rule through ``unscaled``)."""
        value, gradient = self.laplace.value_and_gradient(self.unscaled(np.asarray(scaled, dtype=float)))
        k = len(self.theta_scale)
        return value, np.concatenate([gradient[:k] / self.theta_scale,
                                      scipy.linalg.solve_triangular(self.whitening, gradient[k:], lower=True)])
