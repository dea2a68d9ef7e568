"""Hessians of a fit's criterion by finite differences, and the covariance of β̂ read from one (lme4's ``vcov``).

Shared by the binary fits (cells, sparse rows) and the bootstrap of their fixed effects.
"""

from __future__ import annotations

import numpy as np

# Relative steps of finite differences: of exact gradients for the Hessian of the Laplace criterion,
# of values (second differences) for the Hessian of the quadrature deviance or the sparse Laplace criterion.
GRADIENT_STEP = 1e-5
VALUE_STEP = 1e-4


def gradient_hessian(criterion, params: np.ndarray, free: np.ndarray) -> np.ndarray:
    """Hessian of a criterion (the Laplace one, cell or sparse) by forward differences of its exact gradient
    (``value_and_gradient``); rows and columns outside ``free`` (parameters at a bound) are left zero."""
    _, base_gradient = criterion.value_and_gradient(params)
    columns = []
    for j in range(len(params)):
        if not free[j]:
            columns.append(np.zeros(len(params)))
            continue
        h = GRADIENT_STEP * max(1.0, abs(params[j]))   # the step of the optimiser's own convergence test
        shifted = params.copy()
        shifted[j] += h
        columns.append((criterion.value_and_gradient(shifted)[1] - base_gradient) / h)
    hessian = np.array(columns)
    hessian[:, ~free] = 0.0
    return 0.5 * (hessian + hessian.T)


def value_hessian(criterion, params: np.ndarray, free: np.ndarray | None = None) -> np.ndarray:
    """Hessian of a criterion (the quadrature deviance, the sparse Laplace one) by central second differences of
    its values; rows and columns outside ``free`` (parameters at a bound) are left zero."""
    size = len(params)
    free = np.ones(size, dtype=bool) if free is None else free
    steps = VALUE_STEP * np.maximum(1.0, np.abs(params))
    base = criterion(params)
    hessian = np.zeros((size, size))
    for i in np.flatnonzero(free):
        for j in np.flatnonzero(free[i:]) + i:
            ei, ej = np.eye(size)[i] * steps[i], np.eye(size)[j] * steps[j]
            if i == j:
                value = (criterion(params + ei) - 2 * base + criterion(params - ei)) / steps[i] ** 2
            else:
                value = (criterion(params + ei + ej) - criterion(params + ei - ej)
                         - criterion(params - ei + ej) + criterion(params - ei - ej)) / (4 * steps[i] * steps[j])
            hessian[i, j] = hessian[j, i] = value
    return hessian


def covariance_of_beta(hessian: np.ndarray, free: np.ndarray, k: int, fixed_precision: np.ndarray) -> np.ndarray:
    """Cov(β̂) = 2·[H⁻¹]_ββ over the ``free`` parameters (lme4's vcov; the first ``k`` are θ); (R_X'R_X)⁻¹ where
    H is not positive definite."""
    reduced = hessian[np.ix_(free, free)]
    try:
        np.linalg.cholesky(reduced)
    except np.linalg.LinAlgError:
        return np.linalg.inv(fixed_precision)
    inverse = np.linalg.inv(reduced)
    n_free_theta = int(free[:k].sum())
    covariance = 2.0 * inverse[n_free_theta:, n_free_theta:]
    return 0.5 * (covariance + covariance.T)
