"""Fit binomial random-intercept GLMMs by maximum likelihood, as lme4's ``glmer``.

0/1 scores (Bernoulli) or ``p(successes, trials)`` (binomial), logit or
probit link, crossed and nested random intercepts. The Laplace
approximation (nAGQ = 1, glmer's default) is optimised over (θ, β) with its
exact gradient (``laplace.py``) by the optimiser of the Gaussian engine,
from a start carried over from a linear probability model and a GLM
(``glmm_start.py``); with a single grouping factor, adaptive Gauss–Hermite
quadrature (nAGQ > 1) refines that optimum. Everything
runs on the binomial cells (``design.binomial``), whose number, not the
number of rows, sets the cost.

Variance components are on the latent scale; the residual of that scale is
π²/3 (logit) or 1 (probit). Standard errors of β come from the Hessian of
the criterion over (θ, β), as ``vcov`` of a glmer fit does by default.
"""

from __future__ import annotations

import numpy as np

from ..design import BinomialCells, Family, ModelFrame, model_frame, resolve_family
from ..errors import BayesreproError
from ..limits import check_nodes
from ..links import get_link
from ..runtime import numerical_work
from .cell_products import coupling_beyond_cells
from .criterion_hessian import covariance_of_beta, gradient_hessian, value_hessian
from .glmm_fit import GlmmFit, fixed_rows
from .glmm_start import attenuated_start, latent_start
from .laplace import LaplaceDeviance
from .optimise import BOUNDARY_THETA, optimise
from .quadrature import QuadratureDeviance

# Relative step of the central differences of the quadrature deviance's values that make its gradient.
DIFFERENCE_STEP = 1e-6


def fit_glmm(formula, data=None, family: str = "auto", link: str | None = None, nagq: int = 1,
             where: str | None = None, drop_missing: bool = False) -> GlmmFit:
    """Fit a binomial GLMM by ML; ``formula`` is a formula (then ``data`` is read) or a model frame."""
    frame = formula if isinstance(formula, ModelFrame) else model_frame(formula, data, where, drop_missing)
    resolved = resolve_family(frame, family, link)
    if not resolved.binary:
        raise BayesreproError(
            f"'{frame.response}' is modelled as Gaussian; fit it with fit_lmm, or pass family='bernoulli' for 0/1 scores"
        )
    return fit_glmm_frame(frame, resolved, nagq)


def fitted_on_rows(frame: ModelFrame, nagq: int = 1) -> bool:
    """Is the binary model of ``frame`` fitted by the sparse Laplace criterion on its rows (random slopes, or
    crossed factors beyond the cell engine), not from its cells?"""
    return frame.spec.has_slopes or (frame.has_rows and nagq == 1 and
                                     coupling_beyond_cells([group.n_levels for group in frame.groups]))


def fit_glmm_frame(frame: ModelFrame, family: Family, nagq: int = 1) -> GlmmFit:
    """The ML fit of ``frame`` as ``family`` with ``nagq`` nodes, computed once per frame (``ModelFrame.fitted``)."""
    notes = list(frame.notes) + ([family.note] if family.note else [])
    reason = _monte_carlo_reason(frame, family, nagq)
    if reason:
        from .monte_carlo_laplace import fit_monte_carlo_laplace

        return frame.fitted(("glmm", family.name, family.link, family.note, nagq),
                            lambda: fit_monte_carlo_laplace(frame, family, notes, reason=reason))
    if fitted_on_rows(frame, nagq):
        from .binary_slopes import fit_binary_slopes

        return frame.fitted(("glmm", family.name, family.link, family.note, nagq),
                            lambda: fit_binary_slopes(frame, family, nagq, notes))
    return frame.fitted(("glmm", family.name, family.link, family.note, nagq),
                        lambda: fit_binomial_cells(frame.binomial(), family.link, nagq, family.name, notes))


def _monte_carlo_reason(frame: ModelFrame, family: Family, nagq: int) -> str:
    """Why the Laplace fit of 0/1 scores takes Monte Carlo traces (``monte_carlo_laplace``): two large crossed
    factors whose exact sparse factor would be large or slow (``monte_carlo_reml.exact_factor_quick``), the path's
    own memory within the limit; "" where the exact fit is taken."""
    if not (frame.has_rows and nagq == 1 and len(frame.groups) >= 2):
        return ""
    from ..design.memory_estimate import format_bytes, resolve_limit
    from ..progress import announce_path
    from .general_lmm import dense_schur_levels, needs_general_core
    from .monte_carlo_laplace import monte_carlo_binary_model
    from .monte_carlo_reml import exact_factor_quick, monte_carlo_bytes

    if not (monte_carlo_binary_model(frame, family, nagq) and needs_general_core(frame)):
        return ""
    limit = resolve_limit(frame.max_memory)
    levels = dense_schur_levels(frame)
    quick, bound, seconds = exact_factor_quick(levels, limit)
    if quick or monte_carlo_bytes(frame) > limit:
        return ""
    reason = (f"a sparse factor of {levels:,} levels could need up to {format_bytes(bound)} and ~{seconds:.0f} s a "
              f"factorisation (memory limit {format_bytes(limit)}, --max-memory)")
    announce_path(f"ML by Laplace with Monte Carlo traces: {reason}", None)
    return reason


def fit_binomial_cells(cells: BinomialCells, link: str = "logit", nagq: int = 1, family: str = "binomial",
                       notes: list[str] | None = None) -> GlmmFit:
    """The ML fit from the cell counts alone (rows in memory or grouped aggregates)."""
    nagq = check_nodes(nagq, len(cells.group_names))
    if cells.total_trials <= cells.n_fixed:
        raise BayesreproError(f"{cells.total_trials:g} trials cannot estimate {cells.n_fixed} fixed effects")
    laplace = LaplaceDeviance(cells, get_link(link))
    with numerical_work():
        theta = latent_start(cells, laplace.link)
        start = np.concatenate([theta, attenuated_start(laplace.glm_start(), theta, laplace.link)])
        params, converged, message = optimise(laplace, start)
        point = laplace.point(params)
        theta, beta = point.theta, point.beta
        if nagq > 1:
            quadrature = QuadratureDeviance(laplace, nagq)
            theta, beta, deviance, hessian, converged, message = _optimise_quadrature(quadrature, theta, beta)
            covariance = covariance_of_beta(hessian, _free(theta, beta), len(theta), point.fixed_precision)
        else:
            deviance = point.deviance
            free = _free(theta, beta)
            covariance = covariance_of_beta(gradient_hessian(laplace, np.concatenate([theta, beta]), free), free,
                                            len(theta), point.fixed_precision)
    variances = {name: float(t * t) for name, t in zip(cells.group_names, theta)}
    return GlmmFit(
        formula=cells.formula, family=family, link=link, n_obs=cells.n_rows, n_cells=cells.n_cells, nagq=nagq,
        variances=variances, fixed_names=list(cells.fixed_names), beta=beta, covariance=covariance,
        loglik=-0.5 * deviance, converged=converged, message=message, theta=theta, n_levels=cells.n_levels,
        notes=list(notes or []), **fixed_rows(cells, beta),
    )


def _optimise_quadrature(quadrature: QuadratureDeviance, theta: np.ndarray, beta: np.ndarray):
    """Minimise the quadrature deviance over (θ ≥ 0, β) from the Laplace optimum (central-difference gradient).

    Returns θ, β, the deviance, its Hessian and lme4's convergence test: the gradient scaled by the
    Cholesky factor of the Hessian below 0.002 (or a Newton step that would gain less than 1e-6).
    """
    import scipy.optimize

    def value_and_gradient(params):
        steps = DIFFERENCE_STEP * np.maximum(1.0, np.abs(params))
        gradient = np.array([(quadrature(params + h * e) - quadrature(params - h * e)) / (2 * h)
                             for h, e in zip(steps, np.eye(len(params)))])
        return quadrature(params), gradient

    result = scipy.optimize.minimize(value_and_gradient, np.concatenate([theta, beta]), jac=True, method="L-BFGS-B",
                                     bounds=[(0.0, None)] + [(None, None)] * len(beta),
                                     options={"maxiter": 500, "ftol": 1e-15, "gtol": 1e-7})
    params = result.x
    value, gradient = value_and_gradient(params)
    hessian = value_hessian(quadrature, params)
    free = np.ones(len(params), dtype=bool)
    free[0] = params[0] > BOUNDARY_THETA
    try:
        scaled = np.linalg.solve(np.linalg.cholesky(hessian[np.ix_(free, free)]), gradient[free])
        converged = bool(np.abs(scaled).max() < 2e-3 or 0.5 * scaled @ scaled < 1e-6)
    except np.linalg.LinAlgError:
        converged = False
    message = "" if converged else f"quadrature optimisation stopped short of the optimum: {result.message}"
    return params[:1], params[1:], value, hessian, converged, message


def _free(theta: np.ndarray, beta: np.ndarray) -> np.ndarray:
    """The parameters off their bound: random-intercept θ above the boundary, every β."""
    return np.concatenate([theta > BOUNDARY_THETA, np.ones(len(beta), dtype=bool)])
