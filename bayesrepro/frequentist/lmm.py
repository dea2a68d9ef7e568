"""Fit LMMs by ML or REML: parse → cross-products → optimise θ → result.

Random-intercept models with one dominant factor are fitted from grouped
cross-products (``deviance.py``); random slopes and designs with two large
crossed factors by the sparse core (``general_lmm.py``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..errors import BayesreproError
from ..runtime import numerical_work
from ..design import ModelFrame, model_frame, parse_formula
from ..design.memory_estimate import require_within
from .deviance import ProfiledDeviance
from .optimise import BOUNDARY_THETA, optimise

METHODS = ("reml", "ml")


@dataclass
class LmmFit:
    """A fitted LMM, printable as the papers' tables."""

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
    # lme4's as.data.frame(VarCorr(m)) rows: group, var1, var2, vcov, sdcor (computed from variances when empty)
    random_effects: list[dict] = field(default_factory=list)
    singular: list[str] | None = None    # terms at the boundary, where θ is not one per variance

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
        """Variance components estimated at exactly zero, or terms with a zero SD or a ±1 correlation (singular fit)."""
        if self.singular is not None:
            return list(self.singular)
        names = list(self.variances)[:-1]
        return [name for name, t in zip(names, self.theta) if t < BOUNDARY_THETA]

    @property
    def n_parameters(self) -> int:
        """Fixed effects + covariance parameters θ + residual variance."""
        return len(self.beta) + len(self.theta) + 1

    def varcorr(self) -> list[dict]:
        """One row per SD and per correlation, then the residual: lme4's ``as.data.frame(VarCorr(m))``."""
        if self.random_effects:
            return [dict(row) for row in self.random_effects]
        return [{"group": name, "var1": None if name == "Residual" else "Intercept", "var2": None,
                 "vcov": float(v), "sdcor": float(np.sqrt(v))} for name, v in self.variances.items()]

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
            "random_effects": self.varcorr(),
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
            what = "variance 0" if self.singular is None else "singular: an SD of 0 or a correlation of ±1"
            lines.append(f"  at the boundary ({what}): {', '.join(self.boundary)}")
        lines += [f"  note: {note}" for note in self.notes]
        if self.random_effects:
            lines.append("Random effects:")
            lines += ["  " + varcorr_line(row) for row in self.random_effects]
        lines.append("Variance components:")
        lines += ["  " + line for line in self.vca().to_string(float_format=lambda v: f"{v:.6g}").splitlines()]
        lines.append("Fixed effects:")
        lines += ["  " + line for line in self.fixed_effects().to_string(float_format=lambda v: f"{v:.6g}").splitlines()]
        return "\n".join(lines)


def fit_lmm(formula, data=None, method: str = "reml", where: str | None = None, drop_missing: bool = False,
            max_memory=None) -> LmmFit:
    """Fit ``formula`` to ``data`` by REML (default) or ML.

    ``formula`` is a formula string (then ``data`` is a DataFrame, a path or a
    bundled dataset name) or an already built ModelFrame. ``max_memory`` (bytes or a size such as ``'4G'``;
    default half the machine's memory) bounds the dense blocks of the fit: past it the fit is refused.
    """
    method = _check_method(method)
    if isinstance(formula, str):
        formula = parse_formula(formula, slopes=True)
    frame = formula if isinstance(formula, ModelFrame) else model_frame(formula, data, where, drop_missing)
    return fit_model_frame(frame.with_memory_limit(max_memory), method)


def require_memory(*frames: ModelFrame) -> None:
    """Refuse, before any fit, a frame whose fit would pass its memory limit: for random intercepts the dense
    path's block (which bounds the sparse core's factor of the same levels), for slopes the sparse core's arrays
    estimated from the random-effects design (``core_memory``)."""
    for frame in frames:
        if not frame.spec.has_slopes:
            require_within(frame.dense_estimate("gaussian"), frame.max_memory)
        elif frame.has_rows:
            from ..design.random_design import random_design
            from .core_memory import require_core_memory

            require_core_memory(random_design(frame.spec, frame.data), frame.max_memory)


def fit_model_frame(frame: ModelFrame, method: str) -> LmmFit:
    """The fit of ``frame`` by ``method``, computed once per frame (``ModelFrame.fitted``)."""
    return frame.fitted(method, lambda: fit_frame_once(frame, method))


def fit_frame_once(frame: ModelFrame, method: str) -> LmmFit:
    if frame.n_obs <= frame.n_fixed:
        raise BayesreproError(
            f"{frame.n_obs} observations cannot estimate {frame.n_fixed} fixed effects of {frame.formula!r}"
        )
    from .general_lmm import fit_general_frame, needs_general_core

    require_memory(frame)
    if needs_general_core(frame):
        return fit_general_frame(frame, method)
    objective = ProfiledDeviance(frame.stats(), reml=(method == "reml"))
    with numerical_work():
        theta, converged, message = optimise(objective)
        solution = objective.solve(theta)
    sigma2 = objective.sigma2(solution)
    variances = {g.name: float(sigma2 * t * t) for g, t in zip(frame.groups, theta)}
    return fit_of(frame, method, objective, solution, (converged, message), variances)


def fit_of(frame: ModelFrame, method: str, objective, solution, convergence: tuple[bool, str],
           variances: dict[str, float], notes=(), **structure) -> LmmFit:
    """The LmmFit at the optimum ``solution`` of ``objective``: ``variances`` of the random terms, the residual's
    added; ``structure`` the covariance rows and singular terms where θ is not one per variance."""
    sigma2 = objective.sigma2(solution)
    converged, message = convergence
    return LmmFit(
        formula=frame.formula,
        method=method,
        n_obs=frame.n_obs,
        variances={**variances, "Residual": float(sigma2)},
        fixed_names=list(frame.fixed_names),
        beta=solution.beta,
        covariance=sigma2 * np.linalg.inv(solution.fixed_precision),
        criterion=objective.criterion(solution),
        converged=converged,
        message=message,
        theta=solution.theta,
        n_levels={g.name: g.n_levels for g in frame.groups},
        notes=list(frame.notes) + list(notes),
        **structure,
    )


def varcorr_line(row: dict) -> str:
    if row["var2"] is not None:
        return f"{row['group']:<12} corr({row['var1']}, {row['var2']}) = {row['sdcor']:.4f}"
    effect = f" {row['var1']}" if row["var1"] is not None else ""
    return f"{row['group']:<12}{effect} SD = {row['sdcor']:.6g} (variance {row['vcov']:.6g})"


def _check_method(method: str) -> str:
    if str(method).lower() not in METHODS:
        raise BayesreproError(f"method '{method}' is not known; use one of: {', '.join(METHODS)}")
    return str(method).lower()
