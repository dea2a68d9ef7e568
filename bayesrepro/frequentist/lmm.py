"""Fit random-intercept LMMs by ML or REML: parse → cross-products → optimise θ → result."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import scipy.linalg
import scipy.optimize

from ..errors import BayesreproError
from ..runtime import numerical_work
from ..design import ModelFrame, model_frame
from .deviance import ProfiledDeviance, Solution

METHODS = ("reml", "ml")
# θ below this is reported as a variance at the boundary (exactly zero): lme4's
# singularity tolerance for relative standard deviations.
BOUNDARY_THETA = 1e-4
# Relative standard deviations tried at a component stuck at zero, where the
# gradient of the (even) criterion vanishes.
ESCAPE_STEPS = (1e-3, 1e-2, 1e-1)


@dataclass
class LmmFit:
    """A fitted random-intercept LMM, printable as the papers' tables."""

    formula: str
    method: str
    n_obs: int
    variances: dict[str, float]          # formula order, then "Residual"
    fixed_names: list[str]
    beta: np.ndarray
    covariance: np.ndarray               # of β̂
    criterion: float                     # REML criterion or ML deviance (−2 log L)
    converged: bool
    message: str
    theta: np.ndarray
    n_levels: dict[str, int]
    notes: list[str] = field(default_factory=list)

    @property
    def loglik(self) -> float:
        """Log-likelihood (ML) or restricted log-likelihood (REML), lme4's convention."""
        return -0.5 * self.criterion

    @property
    def reml_criterion(self) -> float | None:
        return self.criterion if self.method == "reml" else None

    @property
    def deviance(self) -> float | None:
        return self.criterion if self.method == "ml" else None

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.covariance))

    @property
    def residual_sd(self) -> float:
        return float(np.sqrt(self.variances["Residual"]))

    @property
    def boundary(self) -> list[str]:
        """Variance components estimated at exactly zero (singular fit)."""
        names = list(self.variances)[:-1]
        return [name for name, t in zip(names, self.theta) if t < BOUNDARY_THETA]

    @property
    def n_parameters(self) -> int:
        """Fixed effects + variance components + residual variance."""
        return len(self.beta) + len(self.variances)

    def fixed_effects(self) -> pd.DataFrame:
        return pd.DataFrame({"estimate": self.beta, "std_error": self.se}, index=pd.Index(self.fixed_names, name="term"))

    def vca(self) -> pd.DataFrame:
        from ..reliability import vca_table

        return vca_table(self.variances)

    def to_dict(self) -> dict:
        return {
            "formula": self.formula,
            "method": self.method,
            "n_obs": self.n_obs,
            "variances": dict(self.variances),
            "fixed_effects": {n: {"estimate": float(b), "std_error": float(s)} for n, b, s in zip(self.fixed_names, self.beta, self.se)},
            "loglik": self.loglik,
            "reml_criterion": self.reml_criterion,
            "converged": self.converged,
            "boundary": self.boundary,
        }

    def __str__(self) -> str:
        lines = [
            f"Linear mixed model fit by {self.method.upper()}: {self.formula}",
            f"  observations: {self.n_obs}; "
            + "; ".join(f"{name}: {n} levels" for name, n in self.n_levels.items()),
            f"  {'REML criterion' if self.method == 'reml' else 'deviance'}: {self.criterion:.4f}   "
            f"log-likelihood: {self.loglik:.4f}   converged: {'yes' if self.converged else 'NO (' + self.message + ')'}",
        ]
        if self.boundary:
            lines.append(f"  at the boundary (variance 0): {', '.join(self.boundary)}")
        lines += [f"  note: {note}" for note in self.notes]
        lines.append("Variance components:")
        lines += ["  " + line for line in self.vca().to_string(float_format=lambda v: f"{v:.6g}").splitlines()]
        lines.append("Fixed effects:")
        lines += ["  " + line for line in self.fixed_effects().to_string(float_format=lambda v: f"{v:.6g}").splitlines()]
        return "\n".join(lines)


def fit_lmm(formula, data=None, method: str = "reml", where: str | None = None, drop_missing: bool = False) -> LmmFit:
    """Fit ``formula`` to ``data`` by REML (default) or ML.

    ``formula`` is a formula string (then ``data`` is a DataFrame, a path or a
    bundled dataset name) or an already built ModelFrame.
    """
    method = _check_method(method)
    frame = formula if isinstance(formula, ModelFrame) else model_frame(formula, data, where, drop_missing)
    return fit_model_frame(frame, method)


def fit_model_frame(frame: ModelFrame, method: str) -> LmmFit:
    if frame.n_obs <= frame.n_fixed:
        raise BayesreproError(
            f"{frame.n_obs} observations cannot estimate {frame.n_fixed} fixed effects of {frame.formula!r}"
        )
    objective = ProfiledDeviance(frame.stats(), reml=(method == "reml"))
    with numerical_work():
        theta, converged, message = _optimise(objective)
        solution = objective.solve(theta)
    sigma2 = objective.sigma2(solution)
    variances = {g.name: float(sigma2 * t * t) for g, t in zip(frame.groups, theta)}
    variances["Residual"] = float(sigma2)
    return LmmFit(
        formula=frame.formula,
        method=method,
        n_obs=frame.n_obs,
        variances=variances,
        fixed_names=list(frame.fixed_names),
        beta=solution.beta,
        covariance=sigma2 * np.linalg.inv(solution.fixed_precision),
        criterion=objective.criterion(solution),
        converged=converged,
        message=message,
        theta=theta,
        n_levels={g.name: g.n_levels for g in frame.groups},
        notes=list(frame.notes),
    )


def _optimise(objective: ProfiledDeviance) -> tuple[np.ndarray, bool, str]:
    """Minimise the profiled criterion over θ ≥ 0 with its exact gradient.

    L-BFGS-B from θ = 1 (lme4's start), restarted from its own optimum until
    the criterion stops improving (a restart discards a stale curvature
    estimate, which matters where components are orders of magnitude apart).
    The criterion is even in each θ_k, so its gradient vanishes at θ_k = 0
    and a gradient method can stall there: components at zero are tried at
    small positive values and the search resumes from any that is better.
    If lme4's convergence test then fails, a second start at θ = 0.1 is
    tried and the better optimum kept.
    """
    k = objective.n_theta
    if k == 0:
        return np.zeros(0), True, "no variance components: closed form"
    best = None
    for start in (np.ones(k), np.full(k, 0.1)):
        result = _restarted_lbfgsb(objective, start)
        if best is None or result.fun < best.fun:
            best = result
        theta = _snap_to_boundary(objective, best.x)
        theta, converged, message = _check_convergence(objective, theta)
        if converged:
            break
    if not np.isfinite(best.fun):
        converged, message = False, "the criterion is not finite at the optimum"
    return theta, converged, message


def _restarted_lbfgsb(objective: ProfiledDeviance, start: np.ndarray):
    best = _lbfgsb(objective, start)
    for _ in range(5):
        candidate = _escape_boundary(objective, best)
        again = _lbfgsb(objective, candidate)
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
    for j in np.flatnonzero(theta == 0):
        for trial_value in ESCAPE_STEPS:
            trial = theta.copy()
            trial[j] = trial_value
            trial_criterion = objective(trial)
            if trial_criterion < value - 1e-10:
                theta, value = trial, trial_criterion
    return theta


def _lbfgsb(objective: ProfiledDeviance, start: np.ndarray):
    return scipy.optimize.minimize(
        objective.value_and_gradient,
        start,
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, None)] * len(start),
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
    free = theta > 0
    for j in np.flatnonzero(~free):
        for trial_value in ESCAPE_STEPS:
            trial = theta.copy()
            trial[j] = trial_value
            if objective(trial) < value - 1e-8:
                return theta, False, f"the criterion still falls when the zero variance of component {j + 1} is made positive"
    if not free.any():
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


def _newton_polish(objective, theta, value, gradient, free, hessian, steps: int = 3):
    """Newton steps on the free components while they shrink the gradient, keep the criterion and stay in bounds."""
    try:
        factor = scipy.linalg.cho_factor(hessian)
    except np.linalg.LinAlgError:
        return theta, gradient
    for _ in range(steps):
        trial = theta.copy()
        trial[free] -= scipy.linalg.cho_solve(factor, gradient[free])
        if np.any(trial[free] <= 0):
            break
        trial_value, trial_gradient = objective.value_and_gradient(trial)
        # near the optimum the criterion changes below its rounding error: the gradient decides
        noise = 1e-13 * abs(value) + 1e-9
        if not (trial_value <= value + noise and np.abs(trial_gradient[free]).max() < np.abs(gradient[free]).max()):
            break
        moved = np.max(np.abs(trial - theta) / np.maximum(theta, 1e-8))
        theta, value, gradient = trial, trial_value, trial_gradient
        if moved < 1e-10:
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
    for j in np.flatnonzero((theta > 0) & (theta < BOUNDARY_THETA)):
        trial = theta.copy()
        trial[j] = 0.0
        trial_value = objective(trial)
        if trial_value <= value + 1e-10:
            theta, value = trial, trial_value
    return theta


def _check_method(method: str) -> str:
    if str(method).lower() not in METHODS:
        raise BayesreproError(f"method '{method}' is not known; use one of: {', '.join(METHODS)}")
    return str(method).lower()
