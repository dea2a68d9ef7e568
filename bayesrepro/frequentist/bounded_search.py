"""Minimising a profiled criterion over θ with lme4's bounds: diagonal entries of Λθ ≥ 0, the others free.

L-BFGS-B from the caller's start, with the criterion's exact gradient where
the objective has one (``has_exact_gradient``, ``value_and_gradient``) and
central differences otherwise,
restarted from its own optimum while the projected gradient there is not
small and the criterion still improves (a restart discards a stale curvature
estimate). Where the caller asks for it (``quasi_newton``), an objective with an
exact gradient is first searched by the quasi-Newton steps of the Gaussian
criterion (``optimise.newton_search``: log scale for the bounded entries),
which reach an interior optimum in fewer evaluations; L-BFGS-B takes over
where that search heads for a bound or stalls. An objective without an exact
gradient is first searched, where the caller asks for it (``stencil``), by
Newton steps on central differences (``stencil_newton.py``: a few
evaluations from a close start, and no SciPy optimiser to import); L-BFGS-B
with differenced gradients takes over where that search fails. Diagonal entries that end at
zero are tried at small positive values, since the criterion's slope there
can be flat. Convergence is lme4's test in spirit: the projected gradient
(zero components of a bound that the gradient pushes against) is small.
"""

from __future__ import annotations

import functools

import numpy as np

from .optimise import newton_search
from .stencil_newton import stencil_newton

# The criterion's projected gradient below which a fit counts as converged (lme4 checks 2e-3 on its scale).
GRADIENT_TOLERANCE = 1e-3
RESTARTS = 4
ESCAPE_STEPS = (1e-2, 1e-1)
# Relative change of the criterion below which a restart is not worth another one.
IMPROVEMENT = 1e-10
# A projected gradient below this ends the search: the criterion is then within ~1e-8 of its minimum.
SETTLED_GRADIENT = 1e-4
# Relative step of the convergence test's differences: large enough that the criterion's rounding (relative
# 1e-13 of a criterion of 1e5) stays far below the tolerance.
TEST_STEP = 1e-4


def bounded_minimum(objective, start: np.ndarray, diagonal: np.ndarray, relative_change: float = 1e-15,
                    settled_gradient: float = SETTLED_GRADIENT,
                    quasi_newton: bool = False, stencil: bool = False) -> tuple[np.ndarray, bool, str]:
    """θ minimising ``objective`` over the bounds, whether lme4's convergence test passed, and why not.

    A search ends where an iteration changes the criterion by less than ``relative_change`` (L-BFGS-B's ftol; the
    quasi-Newton search: where a step would gain less than that share) and L-BFGS-B is restarted unless the
    projected gradient is below ``settled_gradient``. With ``stencil`` an objective without an exact gradient is
    searched by ``stencil_newton`` first, to the same ``settled_gradient``."""
    if len(start) == 0:
        return np.zeros(0), True, "no variance components: closed form"
    start = np.asarray(start, dtype=float)
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        if quasi_newton and getattr(objective, "has_exact_gradient", False):
            found = newton_search(objective, start, bounded=diagonal, tolerance=settled_gradient)
            if found is not None:
                theta, converged, message = _tested(found, objective(found),
                                                    _projected_gradient(objective, found, diagonal))
                if converged:
                    return theta, converged, message
        if stencil and not getattr(objective, "has_exact_gradient", False):
            found = stencil_newton(objective, start, diagonal, settled_gradient)
            if found is not None:
                theta, converged, message = _tested(*found)
                if converged:
                    return theta, converged, message
        bounds = [(0.0, None) if d else (None, None) for d in diagonal]
        search = functools.partial(_search, objective, bounds=bounds, diagonal=diagonal,
                                   relative_change=relative_change, settled_gradient=settled_gradient)
        theta, value, gradient = search(start)
        for step in ESCAPE_STEPS:
            at_zero = diagonal & (theta == 0.0)
            if not at_zero.any():
                break
            trial, trial_value, trial_gradient = search(np.where(at_zero, step, theta))
            if trial_value < value:
                theta, value, gradient = trial, trial_value, trial_gradient
    return _tested(theta, value, gradient)


def _tested(theta: np.ndarray, value: float, gradient: np.ndarray) -> tuple[np.ndarray, bool, str]:
    """θ, whether the criterion is finite there with a projected gradient within the tolerance, and why not."""
    if not np.isfinite(value):
        return theta, False, "the criterion is not finite at any point tried"
    worst = float(np.max(np.abs(gradient)))
    if worst > GRADIENT_TOLERANCE:
        return theta, False, f"the criterion's gradient is {worst:.2g} at the optimum found (tolerance {GRADIENT_TOLERANCE:g})"
    return theta, True, ""


def _search(objective, start, bounds, diagonal, relative_change,
            settled_gradient) -> tuple[np.ndarray, float, np.ndarray]:
    import scipy.optimize   # only where a fit needs it: the model commands start without it

    theta, value = np.asarray(start, dtype=float), objective(start)
    exact = getattr(objective, "has_exact_gradient", False)
    function, jacobian = (objective.value_and_gradient, True) if exact else (objective, "3-point")
    for _ in range(RESTARTS):
        result = scipy.optimize.minimize(function, theta, method="L-BFGS-B", jac=jacobian, bounds=bounds,
                                         options={"ftol": relative_change, "gtol": 1e-9, "maxiter": 500})
        improved = result.fun < value - IMPROVEMENT * max(1.0, abs(value))
        if result.fun <= value:
            theta, value = result.x, float(result.fun)
        gradient = _projected_gradient(objective, theta, diagonal)
        if not improved or np.max(np.abs(gradient)) <= settled_gradient:
            break
    return theta, value, gradient


def _projected_gradient(objective, theta: np.ndarray, diagonal: np.ndarray, step: float = TEST_STEP) -> np.ndarray:
    """The exact gradient or central differences inside the bounds, and at a zero diagonal (where only an increase
    is allowed; a positive slope there is the optimality condition, not a failure) its negative part, by forward
    differences where there is no exact gradient."""
    steps = step * np.maximum(1.0, np.abs(theta))
    at_bound = diagonal & (theta < steps)
    if getattr(objective, "has_exact_gradient", False):
        gradient = objective.value_and_gradient(theta)[1]
        return np.where(at_bound, np.minimum(0.0, gradient), gradient)
    gradient = np.zeros(len(theta))
    base = objective(theta)
    for k in range(len(theta)):
        e = np.zeros(len(theta))
        e[k] = steps[k]
        if at_bound[k]:
            gradient[k] = min(0.0, (objective(theta + e) - base) / e[k])
        else:
            gradient[k] = (objective(theta + e) - objective(theta - e)) / (2.0 * e[k])
    return gradient
