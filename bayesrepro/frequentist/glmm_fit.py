"""A fitted binomial GLMM (ML) as every binary fit returns it: the cell engine (``glmm``), the sparse Laplace
criterion on the rows (``binary_slopes``) and Laplace with Monte Carlo traces (``monte_carlo_laplace``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from ..design import BinomialCells
from ..links import get_link
from ..reliability import phi_observed
from .fit_result import MixedFit


@dataclass(kw_only=True)
class GlmmFit(MixedFit):
    """A fitted binomial GLMM (ML), printable as a VCA table on the latent scale."""

    family: str                          # bernoulli or binomial
    link: str
    n_cells: int
    nagq: int
    loglik: float                        # binomial coefficients included
    cell_eta: np.ndarray                 # fixed part of the linear predictor of each distinct fixed-design row
    cell_trials: np.ndarray              # trials with that row (weights of the observation-scale φ)
    method: str = "ml"

    residual_parameters: ClassVar[int] = 0
    exact: ClassVar[bool] = True         # the criterion's optimum, computed (not with Monte Carlo traces)

    @property
    def title(self) -> str:
        return (f"Generalized linear mixed model ({self.family}, {self.link} link) fit by ML "
                f"({self.approximation}): {self.formula}")

    @property
    def observation_cells(self) -> str:
        return f" in {self.n_cells} binomial cells"

    @property
    def headings(self) -> tuple[str, str, str]:
        return ("Random effects (latent scale):",
                f"Variance components (latent scale; residual = {self.link} latent variance):",
                f"Fixed effects ({self.link} scale):")

    @property
    def approximation(self) -> str:
        return "Laplace" if self.nagq == 1 else f"adaptive Gauss-Hermite quadrature ({self.nagq} nodes)"

    @property
    def deviance(self) -> float:
        return -2.0 * self.loglik

    @property
    def criterion(self) -> float:
        return self.deviance

    @property
    def reml_criterion(self) -> None:
        return None

    @property
    def residual_variance(self) -> float:
        """The latent-scale residual of the link: π²/3 (logit) or 1 (probit)."""
        return get_link(self.link).latent_residual

    def phi_observed(self, object: str) -> float:
        """φ of ``object`` on the observation scale (at the design's fixed effects)."""
        return float(phi_observed(self.variances, object, self.link, self.cell_eta, self.cell_trials))

    def to_dict(self) -> dict:
        return {**super().to_dict(), "family": self.family, "link": self.link, "scale": "latent",
                "approximation": self.approximation, "n_cells": self.n_cells,
                "latent_residual": self.residual_variance}


def fixed_rows(cells: BinomialCells, beta: np.ndarray) -> dict:
    """A GlmmFit's ``cell_eta`` and ``cell_trials``: the fixed part of the linear predictor of each distinct
    fixed-design row of ``cells`` and the trials with it."""
    return {"cell_eta": cells.X_fixed @ beta,
            "cell_trials": np.bincount(cells.fixed_cell, weights=cells.trials, minlength=len(cells.X_fixed))}
