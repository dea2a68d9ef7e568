"""Newton steps on a profiled criterion without an exact gradient: the derivatives from a stencil of differences.

Where each evaluation of the criterion is a large sparse factorisation and no
exact gradient is at hand (the sparse core's crowd designs: items × raters,
items eliminated, the raters' Schur complement factorised by SuperLU), L-BFGS-B
with differenced gradients took 47 evaluations on a skewed crowd design, and
SciPy's optimiser costs 0.2 s to import. The criterion is smooth and close to
quadratic in u = log θ near an interior optimum, so Newton's method converges
quadratically from a moment start, if its derivatives are fresh. At each point
u the central differences with step h

    g_i  = (f(u + h e_i) − f(u − h e_i)) / 2h
    H_ii = (f(u + h e_i) − 2 f(u) + f(u − h e_i)) / h²

give the gradient and the Hessian's diagonal in 2k evaluations (k = len θ);
the mixed differences

    H_ij = (f(u + h e_i + h e_j) − f(u + h e_i) − f(u + h e_j) + f(u)) / h²

(k(k − 1)/2 more) are taken at the first point, and corrected after each step
by the secant condition (the least change of the off-diagonal entries that
makes the Hessian, with the fresh diagonal, carry the step to the change of the
gradient): the correlation of the estimates changes little over the search, and
this keeps 2k evaluations a point. Where that Hessian is not positive definite
(a long first step: sleepstudy's slopes from lme4's start) the mixed
differences are taken again there. On the skewed crowd design the
criterion's rounding is about 1e-10 and its third derivatives in u are
about twice the second, so h = 1e-4 keeps the gradient's truncation (h²/6·f''')
and rounding (1e-10/h) errors near 1e-5 of a Hessian in the thousands: θ is
found to about 1e-8 of itself. Coordinates without a bound (off-diagonal
entries of Λθ) stay as they are (u = θ there).

The search returns None where a bounded component heads for zero, the
Hessian is not positive definite or a step stops lowering the criterion: the
caller's L-BFGS-B takes over there (``bounded_search.py``).
"""

from __future__ import annotations

import numpy as np

# Step of the differences in u (log θ for bounded entries, θ for the others).
STENCIL_STEP = 1e-4
# Longest Newton step in u (a factor of e in θ): further is outside the quadratic model's reach.
LONGEST_STEP = 1.0
ITERATIONS = 12
# A bounded component below this heads for the boundary, which the stencil cannot straddle.
LOWEST_THETA = 1e-3
HALVINGS = 4


def stencil_newton(objective, start: np.ndarray, bounded: np.ndarray,
                   tolerance: float) -> tuple[np.ndarray, float, np.ndarray] | None:
    """θ, the criterion and its central-difference gradient in θ where that gradient's largest component is below
    ``tolerance``, or where no point along the Newton step is lower (the criterion's rounding: the caller tests the
    gradient returned), from ``start`` with every bounded component positive; None where the search cannot get there
    (see the module's note)."""
    bounded = np.asarray(bounded, dtype=bool)
    start = np.asarray(start, dtype=float)
    if np.any(start[bounded] < LOWEST_THETA):
        return None

    def theta_of(u: np.ndarray) -> np.ndarray:
        return np.where(bounded, np.exp(np.where(bounded, u, 0.0)), u)

    def f(u: np.ndarray) -> float:
        return float(objective(theta_of(u)))

    u = np.where(bounded, np.log(np.where(bounded, start, 1.0)), start)
    value = f(u)
    if not np.isfinite(value):
        return None
    k = len(u)
    h = STENCIL_STEP
    mixed = None
    previous = None   # the last point's u, gradient and Hessian diagonal
    for _ in range(ITERATIONS):
        ups = np.array([f(u + h * e) for e in np.eye(k)])
        downs = np.array([f(u - h * e) for e in np.eye(k)])
        if not (np.all(np.isfinite(ups)) and np.all(np.isfinite(downs))):
            return None
        gradient = (ups - downs) / (2.0 * h)
        diagonal = (ups - 2.0 * value + downs) / h ** 2
        theta = theta_of(u)
        in_theta = gradient / np.where(bounded, theta, 1.0)
        if np.abs(in_theta).max() < tolerance:
            return theta, value, in_theta
        lower = None
        if mixed is not None:
            mixed = _secant_mixed(mixed, u - previous[0], gradient - previous[1], 0.5 * (diagonal + previous[2]))
            lower = _cholesky(mixed + np.diag(diagonal))
        if lower is None:   # the first point, or a secant update that left the Hessian indefinite: differences
            mixed = np.zeros((k, k))
            for i in range(k):
                for j in range(i):
                    both = f(u + h * (np.eye(k)[i] + np.eye(k)[j]))
                    mixed[i, j] = mixed[j, i] = (both - ups[i] - ups[j] + value) / h ** 2
            lower = _cholesky(mixed + np.diag(diagonal))
            if lower is None:
                return None
        previous = (u, gradient, diagonal)
        step = -np.linalg.solve(lower.T, np.linalg.solve(lower, gradient))
        step *= min(1.0, LONGEST_STEP / np.abs(step).max())
        for _ in range(HALVINGS):
            trial_value = f(u + step)
            if trial_value < value:
                break
            step /= 2.0
        else:   # no lower point along the step: the criterion's rounding, or a poor model; the caller tests it
            return theta, value, in_theta
        u, value = u + step, trial_value
        if np.any(theta_of(u)[bounded] < LOWEST_THETA):
            return None
    return None


def _cholesky(hessian: np.ndarray) -> np.ndarray | None:
    """The lower Cholesky factor of ``hessian``, None where it is not positive definite."""
    try:
        return np.linalg.cholesky(hessian)
    except np.linalg.LinAlgError:
        return None


def _secant_mixed(mixed: np.ndarray, step: np.ndarray, change: np.ndarray, diagonal: np.ndarray) -> np.ndarray:
    """The Hessian's off-diagonal entries corrected by the least change that makes the Hessian (with the fresh
    ``diagonal``) carry ``step`` to the gradient's ``change`` (the secant condition, in least squares)."""
    k = len(step)
    pairs = [(i, j) for i in range(k) for j in range(i)]
    if not pairs:
        return mixed
    residual = change - (mixed + np.diag(diagonal)) @ step
    effect = np.zeros((k, len(pairs)))   # how each off-diagonal entry moves H·step
    for m, (i, j) in enumerate(pairs):
        effect[i, m] = step[j]
        effect[j, m] = step[i]
    correction = np.linalg.lstsq(effect, residual, rcond=None)[0]
    updated = mixed.copy()
    for m, (i, j) in enumerate(pairs):
        updated[i, j] += correction[m]
        updated[j, i] += correction[m]
    return updated
