"""Minimising the profiled (RE)ML criterion over the relative standard deviations θ ≥ 0."""

from __future__ import annotations

import numpy as np
import scipy.linalg

from .deviance import ProfiledDeviance

# θ below this is reported as a variance at the boundary (exactly zero): lme4's
# singularity tolerance for relative standard deviations.
BOUNDARY_THETA = 1e-4
# Relative standard deviations tried at a component stuck at zero, where the
# gradient of the (even) criterion vanishes.
ESCAPE_STEPS = (1e-3, 1e-2, 1e-1)
# The search stops once the criterion's gradient in θ is this small: the
# estimates then no longer move in their tenth significant digit.
POLISHED_GRADIENT = 1e-9
# A search that cannot lower the gradient further (the criterion's rounding) stops at this one.
SEARCH_GRADIENT = 1e-6
NEWTON_ITERATIONS = 30
FD_STEP = 1e-5  # relative step of the finite-difference Hessian (of the exact gradient)
# Where the symmetric search starts a component given at zero.
BOUNDARY_START = 1e-2
# Without polishing, a search stops when a Newton step would gain less than this in the criterion.
CRITERION_PRECISION = 1e-6


def optimise(objective: ProfiledDeviance, start: np.ndarray | None = None,
             polish: bool = True) -> tuple[np.ndarray, bool, str]:
    """Minimise the profiled criterion over θ ≥ 0 with its exact gradient.

    From ``start`` (a previous fit's θ, say) or one-way moment estimates of θ,
    a quasi-Newton search in log θ (finite-difference Hessian of the exact
    gradient at the start, BFGS updates after) reaches an interior optimum in
    a few evaluations. Where a component heads for zero, the same search runs
    in θ over all reals (the criterion is even in each θ_k, so a minimum at
    zero is a stationary point) and returns |θ|. Where that fails too,
    L-BFGS-B takes over, from the start, then from θ = 1 (lme4's start) and
    θ = 0.1 if lme4's convergence test fails. The
    criterion is even in each θ_k, so its gradient vanishes at θ_k = 0 and a
    gradient method can stall there: components at zero are tried at small
    positive values and the search resumes from any that is better. Where
    the test still fails, the search is restarted from its own optimum until
    the criterion stops improving (a restart discards a stale curvature
    estimate, which matters where components are orders of magnitude apart).
    The best optimum found is kept.

    Without ``polish`` (refits of simulated data, where only the minimum
    counts) the quasi-Newton searches stop once a step would lower the
    criterion by less than ``CRITERION_PRECISION``, and only the boundary part
    of the convergence test is applied to their result.
    """
    # trial points may lie where the criterion overflows (θ far out): every search rejects a non-finite criterion
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        return _optimise(objective, start, polish)


def _optimise(objective: ProfiledDeviance, start: np.ndarray | None, polish: bool) -> tuple[np.ndarray, bool, str]:
    k = objective.n_theta
    if k == 0:
        return np.zeros(0), True, "no variance components: closed form"
    first = moment_start(objective.cross) if start is None else np.asarray(start, dtype=float)
    bounded = _bounded(objective, k)
    decrement = None if polish else CRITERION_PRECISION
    found = newton_search(objective, first, decrement)
    if found is None:
        found = _symmetric_search(objective, first, decrement)
    if found is not None:
        if polish:
            theta, converged, message = _check_convergence(objective, found)
        else:
            theta, message = found, _boundary_message(objective, found, objective(found))
            converged = not message
        if converged:
            return theta, converged, message
    best = None
    for start in (first, np.where(bounded, 1.0, first), np.where(bounded, 0.1, first)):
        result = _resume_from_boundary(objective, _lbfgsb(objective, start))
        theta, converged, message = _check_convergence(objective, _snap_to_boundary(objective, result.x))
        if not converged:
            result = _restarted_lbfgsb(objective, result)
            theta, converged, message = _check_convergence(objective, _snap_to_boundary(objective, result.x))
        value = objective(theta)
        if best is None or value < best[0]:
            best = (value, theta, converged, message)
        if converged:
            break
    value, theta, converged, message = best
    if not np.isfinite(value):
        converged, message = False, "the criterion is not finite at the optimum"
    return theta, converged, message


def _bounded(objective, size: int) -> np.ndarray:
    """The coordinates constrained to be ≥ 0: all of them (relative standard deviations), unless the
    objective's ``bounded`` mask frees some (the fixed effects a GLMM optimises jointly with θ)."""
    return np.asarray(getattr(objective, "bounded", np.ones(size, dtype=bool)))


def moment_start(stats) -> np.ndarray:
    """θ from one-way ANOVA estimates of each factor's variance (others ignored), in formula order.

    Each factor's between-level mean square against its within-level one
    gives σ_k² (Searle, Casella & McCulloch 1992, ch. 3); the residual is
    what the factors leave of the total. A crude but cheap start: it puts θ
    within a factor of about two of the optimum on the papers' grids.
    """
    offsets = np.concatenate([[0], np.cumsum(stats.rest_sizes)]).astype(int)
    parts = [(stats.dominant_counts, stats.dominant_zy)]
    parts += [(np.diag(stats.rest_gram)[a:b], stats.rest_zy[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
    ordered = one_way_theta(parts, stats.n_obs, stats.yty, stats.y_sum)
    theta = np.empty_like(ordered)
    theta[stats.order] = ordered
    return theta


def one_way_theta(parts, n: int, yty: float, y_sum: float) -> np.ndarray:
    """Relative SDs from one-way ANOVA: ``parts`` holds each factor's level counts and sums of y (``moment_start``)."""
    total = yty - y_sum**2 / n
    variances = np.zeros(len(parts))
    for k, (counts, sums) in enumerate(parts):
        levels = len(counts)
        between = float(sums @ (sums / counts)) - y_sum**2 / n
        within = (total - between) / max(n - levels, 1)
        n0 = (n - float(counts @ counts) / n) / max(levels - 1, 1)
        variances[k] = max(between / max(levels - 1, 1) - within, 0.0) / n0
    residual = max(total / n - variances.sum(), 0.05 * total / n)
    return np.sqrt(np.maximum(variances / residual, 1e-4))


def newton_search(objective: ProfiledDeviance, start: np.ndarray, decrement: float | None = None,
                  bounded: np.ndarray | None = None, tolerance: float = POLISHED_GRADIENT) -> np.ndarray | None:
    """θ where the gradient vanishes, reached from an interior start by Newton steps with BFGS updates.

    The search runs in u = log θ, where the criterion is closer to quadratic
    (a third fewer evaluations on InstEval than in θ); coordinates without a
    bound (a GLMM's fixed effects) stay as they are. It returns None as soon
    as a component heads for zero, a step stops lowering the criterion or the
    iterations run out: the other searches take over there. With ``decrement``
    it also stops once a Newton step would lower the criterion by less than that. ``bounded`` marks the
    coordinates ≥ 0 where the objective does not (``_bounded``); the search ends where the gradient's largest
    component is below ``tolerance``.
    """
    bounded = _bounded(objective, len(start)) if bounded is None else bounded
    if np.any(start[bounded] <= 0):
        return None

    def theta_of(u):
        return np.where(bounded, np.exp(np.where(bounded, u, 0.0)), u)

    def evaluate(u):
        theta = theta_of(u)
        value, gradient = objective.value_and_gradient(theta)
        return value, gradient * np.where(bounded, theta, 1.0)

    u = np.where(bounded, np.log(np.where(bounded, start, 1.0)), start)
    value, gradient = evaluate(u)
    if not np.isfinite(value):
        return None
    identity = np.eye(len(u))
    columns = [(evaluate(u + FD_STEP * identity[i])[1] - gradient) / FD_STEP for i in range(len(u))]
    hessian = 0.5 * (np.array(columns) + np.array(columns).T)
    def size(u, gradient):
        return np.abs(gradient / np.where(bounded, theta_of(u), 1.0)).max()

    def settled(u, gradient):
        return theta_of(u) if size(u, gradient) < SEARCH_GRADIENT else None

    noise = _rounding(value)
    for _ in range(NEWTON_ITERATIONS):
        if size(u, gradient) < tolerance:
            return theta_of(u)
        try:
            step = -scipy.linalg.cho_solve(scipy.linalg.cho_factor(hessian), gradient)
        except np.linalg.LinAlgError:
            return settled(u, gradient)
        if decrement and -0.5 * (gradient @ step) < decrement:
            return theta_of(u)
        alpha = 1.0
        while True:
            trial = u + alpha * step
            trial_value, trial_gradient = evaluate(trial)
            if trial_value <= value + 1e-4 * alpha * (gradient @ step):   # Armijo's sufficient decrease
                break
            if trial_value <= value + noise and size(trial, trial_gradient) < size(u, gradient):
                break   # below the criterion's rounding the gradient decides
            alpha /= 2
            if alpha < 1e-3:
                return settled(u, gradient)
        s, y = trial - u, trial_gradient - gradient
        if s @ y > 0:
            hs = hessian @ s
            hessian = hessian - np.outer(hs, hs) / (s @ hs) + np.outer(y, y) / (s @ y)
        u, value, gradient = trial, trial_value, trial_gradient
        if np.any(bounded) and theta_of(u)[bounded].min() < 10 * BOUNDARY_THETA:
            return None
    return settled(u, gradient)


def _symmetric_search(objective: ProfiledDeviance, start: np.ndarray, decrement: float | None = None) -> np.ndarray | None:
    """θ where the gradient vanishes, reached by Newton steps with BFGS updates over all real θ.

    The criterion is even in each θ_k, so a minimum at θ_k = 0 is a stationary
    point there and the search needs no bound: it returns |θ|, components
    within the boundary tolerance of zero set to exactly zero where that does
    not worsen the criterion. Components that start at zero start at
    ``BOUNDARY_START`` instead (at zero the gradient vanishes whether or not
    they should leave it). Where the steps stop lowering the criterion or the
    iterations run out, it returns the point reached if its gradient is below
    ``SEARCH_GRADIENT`` (the criterion's rounding, as where two components are
    identified only through their sum and the criterion is flat along a
    circle), else None (a poor start). With ``decrement`` it also stops once a
    Newton step would lower the criterion by less than that.
    """
    bounded = _bounded(objective, len(start))
    theta = np.where(bounded & (start <= 0), BOUNDARY_START, start)
    value, gradient = objective.value_and_gradient(theta)
    if not np.isfinite(value):
        return None
    hessian = _hessian(objective, theta, np.ones(len(theta), dtype=bool), gradient)
    noise = _rounding(value)

    def settled(theta, gradient):
        if np.abs(gradient).max() < SEARCH_GRADIENT:
            return _snap_to_boundary(objective, np.where(bounded, np.abs(theta), theta))
        return None

    for _ in range(NEWTON_ITERATIONS):
        step = -_descent_solve(hessian, gradient)
        if np.abs(gradient).max() < POLISHED_GRADIENT or (decrement and -0.5 * (gradient @ step) < decrement):
            return _snap_to_boundary(objective, np.where(bounded, np.abs(theta), theta))
        alpha = 1.0
        while True:
            trial = theta + alpha * step
            trial_value, trial_gradient = objective.value_and_gradient(trial)
            if trial_value <= value + 1e-4 * alpha * (gradient @ step):   # Armijo's sufficient decrease
                break
            if trial_value <= value + noise and np.abs(trial_gradient).max() < np.abs(gradient).max():
                break   # below the criterion's rounding the gradient decides
            alpha /= 2
            if alpha < 1e-3:
                return settled(theta, gradient)
        s, y = trial - theta, trial_gradient - gradient
        if s @ y > 0:
            hs = hessian @ s
            hessian = hessian - np.outer(hs, hs) / (s @ hs) + np.outer(y, y) / (s @ y)
        theta, value, gradient = trial, trial_value, trial_gradient
    return settled(theta, gradient)


def _rounding(value: float) -> float:
    """The criterion's rounding error near an optimum where it is ``value``: below it, a search lets the gradient
    decide whether a step is better."""
    return 1e-13 * abs(value) + 1e-9


def _descent_solve(hessian: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """H⁻¹g with H's eigenvalues made positive (|λ|, at least 1e-8 of the largest): a descent direction always."""
    values, vectors = np.linalg.eigh(hessian)
    values = np.maximum(np.abs(values), 1e-8 * max(np.abs(values).max(), 1e-300))
    return vectors @ ((vectors.T @ gradient) / values)


def _resume_from_boundary(objective: ProfiledDeviance, result):
    """Resume the search from small positive values of components stuck at zero, while that improves."""
    for _ in range(5):
        candidate = _escape_boundary(objective, result)
        if np.array_equal(candidate, result.x):
            return result
        again = _lbfgsb(objective, candidate)
        if not again.fun < result.fun - 1e-9:
            return result if result.fun <= again.fun else again
        result = again
    return result


def _restarted_lbfgsb(objective: ProfiledDeviance, result):
    """L-BFGS-B restarted from its own optimum (and from the boundary) until the criterion stops improving."""
    best = result
    for _ in range(5):
        again = _lbfgsb(objective, _escape_boundary(objective, best))
        improved = best.fun - again.fun
        if again.fun < best.fun:
            best = again
        if not improved > 1e-9:
            break
    return best


def _escape_boundary(objective: ProfiledDeviance, result) -> np.ndarray:
    """θ with each zero component moved to the best small positive value that lowers the criterion."""
    theta = result.x.copy()
    value = result.fun
    for j in np.flatnonzero((theta == 0) & _bounded(objective, len(theta))):
        for trial_value in ESCAPE_STEPS:
            trial = theta.copy()
            trial[j] = trial_value
            trial_criterion = objective(trial)
            if trial_criterion < value - 1e-10:
                theta, value = trial, trial_criterion
    return theta


def _lbfgsb(objective: ProfiledDeviance, start: np.ndarray):
    import scipy.optimize  # 0.15 s to import, and only needed where the Newton search stops at a bound

    return scipy.optimize.minimize(
        objective.value_and_gradient,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None) if b else (None, None) for b in _bounded(objective, len(start))],
        options={"maxiter": 1000, "ftol": 1e-14, "gtol": 1e-8},
    )


def _check_convergence(objective: ProfiledDeviance, theta: np.ndarray) -> tuple[np.ndarray, bool, str]:
    """lme4's test: the gradient, scaled by the Cholesky factor of the Hessian, is below 0.002.

    At a component fixed at zero the gradient vanishes; there the criterion
    must not fall when the component is made slightly positive. On a flat
    ridge the gradient can exceed the tolerance while a Newton step would
    still improve −2 log L by less than 1e-6, which no inference can notice;
    that also counts as converged. Before the test, Newton steps on the
    free components polish θ to near machine precision (the quasi-Newton
    search stops where the criterion no longer changes in its 14th digit,
    which can leave θ uncertain in its 7th).
    """
    value, gradient = objective.value_and_gradient(theta)
    free = (theta > 0) | ~_bounded(objective, len(theta))
    message = _boundary_message(objective, theta, value)
    if message:
        return theta, False, message
    if not free.any():
        return theta, True, ""
    if np.abs(gradient[free]).max() < POLISHED_GRADIENT:
        return theta, True, ""
    hessian = _hessian(objective, theta, free, gradient)
    theta, gradient = _newton_polish(objective, theta, value, gradient, free, hessian)
    try:
        factor = np.linalg.cholesky(hessian)
        scaled = np.linalg.solve(factor, gradient[free])
    except np.linalg.LinAlgError:
        scaled = gradient[free]
    worst = float(np.abs(scaled).max())
    if worst < 2e-3 or 0.5 * float(scaled @ scaled) < 1e-6:
        return theta, True, ""
    return theta, False, f"optimizer stopped with scaled max|gradient| {worst:.2g} (tolerance 0.002)"


def _boundary_message(objective: ProfiledDeviance, theta: np.ndarray, value: float) -> str:
    """Why θ is not optimal on the boundary: a component at zero that lowers the criterion when made positive."""
    for j in np.flatnonzero((theta == 0) & _bounded(objective, len(theta))):
        for trial_value in ESCAPE_STEPS:
            trial = theta.copy()
            trial[j] = trial_value
            if objective(trial) < value - 1e-8:
                return f"the criterion still falls when the zero variance of component {j + 1} is made positive"
    return ""


def _newton_polish(objective, theta, value, gradient, free, hessian, steps: int = 3):
    """Newton steps on the free components while they shrink the gradient, keep the criterion and stay in bounds."""
    try:
        factor = scipy.linalg.cho_factor(hessian)
    except np.linalg.LinAlgError:
        return theta, gradient
    for _ in range(steps):
        trial = theta.copy()
        trial[free] -= scipy.linalg.cho_solve(factor, gradient[free])
        if np.any(trial[free & _bounded(objective, len(theta))] <= 0):
            break
        trial_value, trial_gradient = objective.value_and_gradient(trial)
        # near the optimum the criterion changes below its rounding error: the gradient decides
        noise = _rounding(value)
        if not (trial_value <= value + noise and np.abs(trial_gradient[free]).max() < np.abs(gradient[free]).max()):
            break
        theta, value, gradient = trial, trial_value, trial_gradient
        if np.abs(gradient[free]).max() < POLISHED_GRADIENT:
            break
    return theta, gradient


def _hessian(objective: ProfiledDeviance, theta: np.ndarray, free: np.ndarray, gradient: np.ndarray) -> np.ndarray:
    """Forward differences of the exact gradient over the free components (accurate to O(h) = 1e-5)."""
    index = np.flatnonzero(free)
    columns = []
    for i in index:
        h = 1e-5 * max(1.0, theta[i])
        up = theta.copy()
        up[i] += h
        columns.append((objective.value_and_gradient(up)[1][index] - gradient[index]) / h)
    hessian = np.array(columns)
    return 0.5 * (hessian + hessian.T)


def _snap_to_boundary(objective: ProfiledDeviance, theta: np.ndarray) -> np.ndarray:
    """Set tiny θ to exactly zero where that does not worsen the criterion."""
    theta = theta.copy()
    value = objective(theta)
    for j in np.flatnonzero((theta > 0) & (theta < BOUNDARY_THETA) & _bounded(objective, len(theta))):
        trial = theta.copy()
        trial[j] = 0.0
        trial_value = objective(trial)
        if trial_value <= value + 1e-10:
            theta, value = trial, trial_value
    return theta
