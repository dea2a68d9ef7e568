"""Parametric-bootstrap reference of the likelihood-ratio statistic of two binomial GLMMs.

With few levels of the factor that carries the tested effect (three seeds per
system, say) the χ² reference of a Laplace likelihood ratio is liberal. As
pbkrtest's ``PBmodcomp`` does for glmer fits, responses are simulated from
H0's ML fit: new effects for every level of H0's grouping factors, drawn with
their fitted variances, added to the fitted fixed part, and every row's 0/1
score (or successes out of its trials) drawn with the implied probability.
Both models are refitted by the Laplace approximation, starting from the
observed fits' estimates; p = (r + 1)/(R + 1) as for the Gaussian bootstrap.

A replicate never rebuilds the design: the cells of each model depend on the
design alone, so the simulated rows are summed into the observed cells. When
either model has random slopes, H0's effects are drawn as ZΛθ̂u (each term's
effects of a level correlated as fitted) and both models are refitted on the
rows by the sparse Laplace criterion (``binary_slope_bootstrap``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..design import BinomialCells, ModelFrame
from ..design.binomial import row_cells
from ..links import get_link
from ..runtime import numerical_work
from .binary_draws import draw_successes
from .bootstrap_test import SimulatedReference, observed_statistic, run_in_chunks
from .glmm_fit import GlmmFit
from .laplace import LaplaceDeviance
from .optimise import BOUNDARY_THETA, optimise
from .slope_bootstrap import random_factor, simulated_effects


@dataclass(frozen=True)
class RefitModel:
    """One model's cells and where its refits start."""

    cells: BinomialCells
    row_cell: np.ndarray          # the cell of every row
    start: np.ndarray             # (θ, β) of the observed fit, components at the boundary at exactly zero

    def deviance(self, successes: np.ndarray, link) -> tuple[float, bool]:
        counts = np.bincount(self.row_cell, weights=successes, minlength=self.cells.n_cells)
        laplace, params, converged = cell_refit(self.cells, counts, link, self.start)
        return laplace(params), converged


def cell_refit(cells: BinomialCells, successes: np.ndarray, link, start: np.ndarray):
    """The Laplace criterion of ``cells`` with new ``successes``, the (θ, β) minimising it from ``start``, and
    whether the search converged."""
    laplace = LaplaceDeviance(dataclasses.replace(cells, successes=successes, log_coefficient=0.0), link)
    params, converged, _ = optimise(laplace, start, polish=False)
    return laplace, params, converged


@dataclass(frozen=True)
class BinaryBootstrapJob:
    """H0's fitted model on the rows, and both models to refit."""

    link: str
    fixed_part: np.ndarray                               # η of every row without the level effects
    effects: tuple[tuple[np.ndarray, int, float], ...]   # (codes, levels, SD) of each of H0's factors
    trials: np.ndarray | None                            # None: 0/1 scores
    models: tuple                                        # H0, H1: RefitModel, or SparseRefitModel with slopes
    random_factor: object = None                         # ZΛθ̂ of an H0 with random slopes (``effects`` empty)

    def run(self, size: int, seed: np.random.SeedSequence) -> tuple[np.ndarray, int]:
        rng = np.random.default_rng(seed)
        link = get_link(self.link)
        sample = np.empty(size)
        unconverged = 0
        with numerical_work():
            for r in range(size):
                eta = self.fixed_part.copy()
                for codes, levels, sd in self.effects:
                    eta += sd * rng.standard_normal(levels)[codes]
                if self.random_factor is not None:
                    eta += simulated_effects(self.random_factor, rng)
                successes = draw_successes(link.inverse(eta), self.trials, rng)
                (deviance0, converged0), (deviance1, converged1) = (m.deviance(successes, link) for m in self.models)
                unconverged += (not converged0) + (not converged1)
                sample[r] = max(deviance0 - deviance1, 0.0)
        return sample, unconverged


def binary_bootstrap_job(frame0: ModelFrame, frame1: ModelFrame, fit0: GlmmFit, fit1: GlmmFit) -> BinaryBootstrapJob:
    """Simulation under H0's Laplace fit and refits of both models from the fits' estimates (on the rows, by the
    sparse criterion, when either model has random slopes)."""
    frame0 = frame0.require_rows("a parametric bootstrap of a binary GLMM")
    if frame0.spec.has_slopes or frame1.spec.has_slopes:
        return _slope_job(frame0, frame1.require_rows("a parametric bootstrap of a binary GLMM"), fit0, fit1)
    sd = np.sqrt([fit0.variances[g.name] for g in frame0.groups])
    return BinaryBootstrapJob(
        link=fit0.link,
        fixed_part=frame0.X_cells[frame0.cell_codes] @ fit0.beta,
        effects=tuple((g.codes, g.n_levels, float(s)) for g, s in zip(frame0.groups, sd)),
        trials=frame0.trials,
        models=tuple(RefitModel(frame.binomial(), row_cells(frame),
                                np.concatenate([np.where(fit.theta < BOUNDARY_THETA, 0.0, fit.theta), fit.beta]))
                     for frame, fit in ((frame0, fit0), (frame1, fit1))),
    )


def _slope_job(frame0: ModelFrame, frame1: ModelFrame, fit0: GlmmFit, fit1: GlmmFit) -> BinaryBootstrapJob:
    from .binary_slope_bootstrap import sparse_refit_model

    null = sparse_refit_model(frame0, fit0)
    return BinaryBootstrapJob(link=fit0.link, fixed_part=frame0.X @ fit0.beta, effects=(), trials=frame0.trials,
                              models=(null, sparse_refit_model(frame1, fit1)),
                              random_factor=random_factor(null.criterion.design, null.theta_start))


def binary_bootstrap_lrt(frame0: ModelFrame, frame1: ModelFrame, fit0: GlmmFit, fit1: GlmmFit, samples: int,
                         seed=None, workers: int = 1) -> SimulatedReference:
    """The likelihood-ratio statistic of two Laplace fits and its parametric-bootstrap null distribution.

    Replicates are drawn in chunks with seeds spawned from ``seed``, so the result does not depend on ``workers``.
    """
    sample, unconverged = run_in_chunks(binary_bootstrap_job(frame0, frame1, fit0, fit1), samples, seed, workers)
    return SimulatedReference("bootstrap", observed_statistic(fit0.deviance, fit1.deviance), sample, unconverged)
