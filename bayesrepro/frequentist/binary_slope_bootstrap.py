"""Parametric bootstrap of the latent variance components of a binary model with random slopes, on the rows.

``compare_binary.glmm_bootstrap`` simulates random intercepts on the cells;
with slopes a replicate is simulated row by row from the Laplace fit, as
lme4's ``simulate`` does for glmer: η = Xβ̂ + ZΛθ̂u with u standard normal
(each term's effects of a level correlated as its fitted covariance says),
every row's 0/1 score (or successes out of its trials) drawn with probability
μ(η). The replicate is refitted by the sparse Laplace criterion from the
observed (θ̂, β̂) (a diagonal entry of Λθ at the boundary from exactly zero)
and summarised as the fit is: the term variances of ``vca`` for slope models,
the latent residual of the link and, given the object of measurement, φ on
the observation scale.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..design import ModelFrame
from ..design.binomial import binomial_cells
from ..design.random_design import random_design
from ..links import get_link
from ..reliability import phi_observed
from ..runtime import numerical_work
from .binary_draws import draw_successes
from .binary_slopes import ScaledCoordinates, scaled_minimum
from .bootstrap_test import run_in_chunks
from .covariance_structure import term_variances
from .glmm_fit import GlmmFit
from .slope_bootstrap import random_factor, refit_start, simulated_effects
from .sparse_laplace import SparseLaplaceDeviance


def laplace_refit(criterion: SparseLaplaceDeviance, beta: np.ndarray,
                  theta_start: np.ndarray) -> tuple[np.ndarray, bool]:
    """(θ, β) minimising ``criterion`` from (``theta_start``, ``beta``), in the fit's scaled coordinates; and
    whether the search converged."""
    coordinates = ScaledCoordinates(criterion.design, criterion, beta, theta_start)
    params, converged, _ = scaled_minimum(coordinates, coordinates.scaled(theta_start))
    return params, converged


@dataclass(frozen=True)
class SparseRefitModel:
    """One model of a likelihood-ratio bootstrap refitted on the rows by the sparse Laplace criterion
    (``binary_bootstrap.RefitModel``'s counterpart for models with random slopes)."""

    criterion: SparseLaplaceDeviance     # on the observed scores
    beta: np.ndarray
    theta_start: np.ndarray

    def refit(self, successes: np.ndarray) -> tuple[SparseLaplaceDeviance, np.ndarray, bool]:
        """The criterion of ``successes``, the (θ, β) minimising it from the fit's estimates, and whether the
        search converged."""
        criterion = self.criterion.with_response(successes)
        params, converged = laplace_refit(criterion, self.beta, self.theta_start)
        return criterion, params, converged

    def deviance(self, successes: np.ndarray, link) -> tuple[float, bool]:
        criterion, params, converged = self.refit(successes)
        return criterion(params), converged


def sparse_refit_model(frame: ModelFrame, fit: GlmmFit) -> SparseRefitModel:
    """``frame``'s criterion on its rows, started from ``fit`` (a random-intercept fit's θ is its SDs: σ = 1)."""
    design = random_design(frame.spec, frame.data)
    trials = np.ones(frame.n_obs) if frame.trials is None else frame.trials
    theta = fit.theta if frame.spec.has_slopes else np.sqrt([fit.variances[b.group] for b in design.blocks])
    return SparseRefitModel(SparseLaplaceDeviance(design, frame.X, frame.y, trials, get_link(fit.link), 0.0),
                            fit.beta, refit_start(design, theta))


@dataclass(frozen=True)
class BinarySlopeBootstrapJob:
    """The Laplace fit to simulate from and the criterion its replicates are refitted by."""

    link: str
    model: SparseRefitModel              # the criterion on the observed scores (a replicate swaps in its own)
    fixed_part: np.ndarray               # Xβ̂ of every row
    random_factor: object                # ZΛθ̂ (sparse)
    trials: np.ndarray | None            # None: 0/1 scores
    cell_x: np.ndarray                   # the distinct fixed-design rows, with the trials of each
    cell_trials: np.ndarray
    object: str | None

    def run(self, size: int, seed: np.random.SeedSequence) -> tuple[np.ndarray, int]:
        """One row per replicate: the term variances, the latent residual and (with an object) φ observed."""
        rng = np.random.default_rng(seed)
        link = get_link(self.link)
        design = self.model.criterion.design
        rows, unconverged = [], 0
        with numerical_work():
            for _ in range(size):
                eta = self.fixed_part + simulated_effects(self.random_factor, rng)
                _, params, converged = self.model.refit(draw_successes(link.inverse(eta), self.trials, rng))
                unconverged += not converged
                variances = term_variances(design, params[:design.n_theta], 1.0)
                row = [*variances.values(), link.latent_residual]
                if self.object is not None:
                    row.append(phi_observed(variances, self.object, self.link,
                                            self.cell_x @ params[design.n_theta:], self.cell_trials))
                rows.append(row)
        return np.array(rows, dtype=float).reshape(size, -1), unconverged


def binary_slope_bootstrap(fit: GlmmFit, frame: ModelFrame, n_boot: int, rng: np.random.Generator,
                           object: str | None = None, progress=None) -> tuple[pd.DataFrame, int, np.ndarray | None]:
    """What ``compare_binary.glmm_bootstrap`` returns, for a binary model fitted on its rows (random slopes, or
    crossed factors beyond the cell engine, ``glmm.fitted_on_rows``): the latent
    components of ``n_boot`` replicates (``fit.components``' columns), how many refits did not converge, and each
    refit's observation-scale φ of ``object`` (None without one). The chunks' seeds are drawn from ``rng``."""
    frame = frame.require_rows("a parametric bootstrap of a binary model fitted on its rows")
    model = sparse_refit_model(frame, fit)
    design = model.criterion.design
    fixed_cells = binomial_cells(dataclasses.replace(frame, groups=[]))
    job = BinarySlopeBootstrapJob(
        link=fit.link, model=model, fixed_part=frame.X @ fit.beta,
        random_factor=random_factor(design, fit.theta), trials=frame.trials, cell_x=fixed_cells.X_fixed,
        cell_trials=fit.cell_trials, object=object)
    sample, unconverged = run_in_chunks(job, n_boot, int(rng.integers(2**63)), 1, progress)
    components = pd.DataFrame(sample[:, :len(fit.components)], columns=list(fit.components))
    return components, unconverged, sample[:, -1] if object is not None else None
