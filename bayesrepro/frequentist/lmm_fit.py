"""A fitted LMM (REML or ML) as the dense path (``lmm``) and the sparse core (``general_lmm``) return it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..design import ModelFrame
from ..reliability import RESIDUAL
from .fit_result import MixedFit


@dataclass(kw_only=True)
class LmmFit(MixedFit):
    """A fitted LMM (REML or ML); its variances end with the residual's."""

    criterion: float                     # REML criterion or ML deviance (−2 log L)

    residual_parameters: ClassVar[int] = 1
    exact: ClassVar[bool] = True         # the criterion's optimum, computed (not moments, not Monte Carlo traces)

    @property
    def title(self) -> str:
        return f"Linear mixed model fit by {self.method.upper()}: {self.formula}"

    @property
    def criterion_text(self) -> str:
        return f"{'REML criterion' if self.method == 'reml' else 'deviance'}: {self.criterion:.4f}   "

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
    def residual_variance(self) -> float:
        return self.variances[RESIDUAL]

    @property
    def residual_sd(self) -> float:
        return float(np.sqrt(self.residual_variance))

    def to_dict(self) -> dict:
        return {**super().to_dict(), "reml_criterion": self.reml_criterion}


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
        variances={**variances, RESIDUAL: float(sigma2)},
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
