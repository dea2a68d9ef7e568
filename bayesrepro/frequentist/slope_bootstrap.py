"""Parametric bootstrap of a likelihood-ratio statistic between models with random slopes, on the rows.

The grouped statistics of ``bootstrap_test`` hold random intercepts only; with
slopes a replicate is simulated row by row from H0's ML fit,
y = Xβ̂ + σ̂ZΛθ̂u + σ̂ε with u, ε standard normal (lme4's ``simulate``), and
both models are refitted by ML on the sparse core from their fitted θ. The
p-value and its Monte-Carlo SE are those of ``bootstrap_test``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..design import ModelFrame
from ..design.random_design import RandomDesign, random_design
from ..runtime import numerical_work
from .bootstrap_test import SimulatedReference, observed_statistic, run_in_chunks
from .bounded_search import bounded_minimum
from .lmm_fit import LmmFit
from .optimise import BOUNDARY_THETA
from .sparse_deviance import SparseProfiledDeviance


@dataclass(frozen=True)
class RowModel:
    """One model's ML criterion on the observed response (its products with the design are reused by every
    refit), its random-effects design and the θ its refits start from."""

    criterion: SparseProfiledDeviance
    design: RandomDesign
    start: np.ndarray

    def ml_criterion(self, y: np.ndarray) -> tuple[float, bool]:
        """The ML deviance of a refit to ``y`` and whether it converged."""
        objective = self.criterion.with_response(y)
        theta, converged, _ = bounded_minimum(objective, self.start, self.design.diagonal)
        return objective(theta), converged


def row_model(frame: ModelFrame, fit: LmmFit) -> RowModel:
    design = random_design(frame.spec, frame.data)
    return RowModel(SparseProfiledDeviance(design, frame.X, frame.y, reml=False), design,
                    refit_start(design, fit.theta))


def refit_start(design: RandomDesign, theta: np.ndarray) -> np.ndarray:
    """θ a refit starts from: the fitted one, a diagonal entry of Λθ at the boundary at exactly zero (the others,
    correlations, are free)."""
    return np.where(design.diagonal & (theta < BOUNDARY_THETA), 0.0, theta)


def random_factor(design: RandomDesign, theta: np.ndarray) -> sp.csr_matrix:
    """ZΛθ: the rows' random effects are ZΛθu for spherical u."""
    return (design.Z @ design.relative_factor(theta)).tocsr()


def simulated_effects(factor: sp.csr_matrix, rng: np.random.Generator) -> np.ndarray:
    """Every row's sum of random effects, ZΛθu with u ~ N(0, I): each term's level effects drawn from its fitted
    covariance (correlated within a level), as lme4's ``simulate`` draws them."""
    return factor @ rng.standard_normal(factor.shape[1])


@dataclass(frozen=True)
class RowBootstrapJob:
    """Simulation under H0's ML fit and ML refits of both models (``run`` as ``bootstrap_test.BootstrapJob``)."""

    mean: np.ndarray              # Xβ̂ of H0
    random_factor: object         # ZΛθ̂ of H0 (sparse)
    sigma: float
    models: tuple[RowModel, RowModel]

    def run(self, size: int, seed: np.random.SeedSequence) -> tuple[np.ndarray, int]:
        rng = np.random.default_rng(seed)
        sample = np.empty(size)
        unconverged = 0
        with numerical_work():
            for r in range(size):
                y = self.mean + self.sigma * (simulated_effects(self.random_factor, rng)
                                              + rng.standard_normal(len(self.mean)))
                (c0, ok0), (c1, ok1) = (model.ml_criterion(y) for model in self.models)
                unconverged += (not ok0) + (not ok1)
                sample[r] = max(c0 - c1, 0.0)
        return sample, unconverged


def row_bootstrap_lrt(frame0: ModelFrame, frame1: ModelFrame, fit0: LmmFit, fit1: LmmFit, samples: int, seed=None,
                      workers: int = 1) -> SimulatedReference:
    """2(ℓ₁ − ℓ₀) of the ML fits and its parametric-bootstrap null distribution, simulated on the rows."""
    frame0 = frame0.require_rows("a parametric bootstrap of models with random slopes")
    null = row_model(frame0, fit0)
    job = RowBootstrapJob(frame0.X @ fit0.beta, random_factor(null.design, fit0.theta),
                          float(np.sqrt(fit0.variances["Residual"])), (null, row_model(frame1, fit1)))
    sample, unconverged = run_in_chunks(job, samples, seed, workers)
    return SimulatedReference("bootstrap", observed_statistic(fit0.criterion, fit1.criterion), sample, unconverged)
