"""What a fitted mixed model holds whatever its family: ``MixedFit``, the base of ``LmmFit`` and ``GlmmFit``.

The variance components with their residual (a Gaussian model's estimated
one, a binary model's latent residual of its link), φ, the fixed effects and
their standard errors, the terms at the boundary, lme4's ``VarCorr`` rows,
and the parts of the printed table and of ``to_dict`` the two engines share.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np
import pandas as pd

from ..reliability import RESIDUAL, phi, vca_table
from .optimise import BOUNDARY_THETA


@dataclass(kw_only=True)
class MixedFit(abc.ABC):
    """A fitted mixed model, printable as the papers' tables; its engine's fit gives ``title``, ``residual_variance``
    and ``loglik``."""

    formula: str
    method: str
    n_obs: int
    variances: dict[str, float]          # random terms in formula order (a Gaussian fit's residual last)
    fixed_names: list[str]
    beta: np.ndarray
    covariance: np.ndarray               # of β̂
    converged: bool
    message: str
    theta: np.ndarray
    n_levels: dict[str, int]
    notes: list[str] = field(default_factory=list)
    # lme4's as.data.frame(VarCorr(m)) rows: group, var1, var2, vcov, sdcor (computed from variances when empty)
    random_effects: list[dict] = field(default_factory=list)
    singular: list[str] | None = None    # terms with a zero SD or a ±1 correlation, where θ is not one per variance

    residual_parameters: ClassVar[int]   # estimated residual variances: one (Gaussian) or none (binary)
    # headings of the random effects, the variance components and the fixed effects in the printed table
    headings: ClassVar[tuple[str, str, str]] = ("Random effects:", "Variance components:", "Fixed effects:")
    observation_cells: ClassVar[str] = ""   # what the observations are grouped in, when they are
    criterion_text: ClassVar[str] = ""      # the criterion printed before the log-likelihood

    @property
    @abc.abstractmethod
    def title(self) -> str:
        """The first line of the printed table: the model, how it was fitted, its formula."""

    @property
    @abc.abstractmethod
    def residual_variance(self) -> float:
        """The residual's variance: estimated (Gaussian) or the link's latent one (binary)."""

    @property
    def components(self) -> dict[str, float]:
        """Every variance component, the residual last (a binary model's: the latent residual of its link)."""
        return {**self.variances, RESIDUAL: self.residual_variance}

    def phi(self, object: str) -> float:
        """φ of ``object``: its variance over itself plus the residual (latent scale for binary scores)."""
        return float(phi(self.components, object))

    @property
    def se(self) -> np.ndarray:
        return np.sqrt(np.diag(self.covariance))

    @property
    def boundary(self) -> list[str]:
        """Variance components estimated at exactly zero, or terms with a zero SD or a ±1 correlation (singular fit)."""
        if self.singular is not None:
            return list(self.singular)
        names = [name for name in self.variances if name != RESIDUAL]
        return [name for name, t in zip(names, self.theta) if t < BOUNDARY_THETA]

    @property
    def n_parameters(self) -> int:
        """Fixed effects + covariance parameters θ + the residual variance where one is estimated."""
        return len(self.beta) + len(self.theta) + self.residual_parameters

    def varcorr(self) -> list[dict]:
        """One row per SD and per correlation (a Gaussian fit's residual last): lme4's ``as.data.frame(VarCorr(m))``,
        which has no residual row for a glmer fit."""
        if self.random_effects:
            return [dict(row) for row in self.random_effects]
        return [{"group": name, "var1": None if name == RESIDUAL else "Intercept", "var2": None,
                 "vcov": float(v), "sdcor": float(np.sqrt(v))} for name, v in self.variances.items()]

    def fixed_effects(self) -> pd.DataFrame:
        return pd.DataFrame({"estimate": self.beta, "std_error": self.se}, index=pd.Index(self.fixed_names, name="term"))

    def vca(self) -> pd.DataFrame:
        return vca_table(self.components)

    def to_dict(self) -> dict:
        return {
            "formula": self.formula,
            "method": self.method,
            "n_obs": self.n_obs,
            "variances": dict(self.variances),
            "fixed_effects": {n: {"estimate": float(b), "std_error": float(s)}
                              for n, b, s in zip(self.fixed_names, self.beta, self.se)},
            "loglik": self.loglik,
            "converged": self.converged,
            "boundary": self.boundary,
            "random_effects": self.varcorr(),
        }

    def head(self) -> list[str]:
        """The first lines of the printed table: the model and its observations."""
        return [self.title, f"  observations: {self.n_obs}{self.observation_cells}; "
                + "; ".join(f"{name}: {n} levels" for name, n in self.n_levels.items())]

    def __str__(self) -> str:
        random_heading, components_heading, fixed_heading = self.headings
        lines = self.head() + [f"  {self.criterion_text}log-likelihood: {self.loglik:.4f}   "
                               f"converged: {'yes' if self.converged else 'NO (' + self.message + ')'}"]
        if self.boundary:
            what = "variance 0" if self.singular is None else "singular: an SD of 0 or a correlation of ±1"
            lines.append(f"  at the boundary ({what}): {', '.join(self.boundary)}")
        lines += [f"  note: {note}" for note in self.notes]
        if self.random_effects:
            lines.append(random_heading)
            lines += ["  " + varcorr_line(row) for row in self.random_effects]
        lines += [components_heading, indented(self.vca()), fixed_heading, indented(self.fixed_effects())]
        return "\n".join(lines)


def sd_count(fit: MixedFit) -> int:
    """Standard deviations among the fit's covariance parameters (a Gaussian fit's residual included)."""
    return sum(row["var2"] is None for row in fit.varcorr())


def varcorr_line(row: dict) -> str:
    if row["var2"] is not None:
        return f"{row['group']:<12} corr({row['var1']}, {row['var2']}) = {row['sdcor']:.4f}"
    effect = f" {row['var1']}" if row["var1"] is not None else ""
    return f"{row['group']:<12}{effect} SD = {row['sdcor']:.6g} (variance {row['vcov']:.6g})"


def indented(table: pd.DataFrame) -> str:
    """A table of a printed fit, two spaces in."""
    return "\n".join("  " + line for line in table.to_string(float_format=lambda v: f"{v:.6g}").splitlines())
