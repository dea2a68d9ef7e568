"""Power for binary scores by simulation: cells of the planned design drawn from the binary GLMM and refitted.

Every cell of the planned balanced design (one level of the compared factor
and of each facet) is scored ``replicates`` times. Its successes are binomial
with the probability the link gives the cell's linear predictor

    η = intercept + effect · [B] + Σ_g b_g,     b_g ~ N(0, σ²_g) per level of each grouping,

the components on the latent scale, as the pilot's GLMM estimated them. Each
simulated set of cells is refitted by ML (Laplace, ``frequentist.glmm``) and
the contrast is tested on the link scale: the Wald z of its estimate with
glmer's standard error (``wald``), or the likelihood-ratio test of the fits
with and without it (``lrt``). A fit that cannot run (every trial a success,
say) counts as not rejecting and as not converged.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping

import numpy as np
import pandas as pd
from scipy.special import chdtrc, ndtr

from ..design import BinomialCells
from ..errors import BayesreproError
from ..frequentist.glmm import fit_binomial_cells
from ..links import get_link, log_binomial_coefficient
from ..reliability import RESIDUAL
from .assumptions import BINOMIAL, Assumptions
from .planned_test import LRT, WALD
from .structure import REPLICATE, DesignStructure, term_digits

CONTRAST_COLUMN = 1


def planned_cells(structure: DesignStructure, counts: Mapping[str, int]) -> BinomialCells:
    """The cells of the planned design with no successes yet (fixed effects: intercept, B − A)."""
    sizes = structure.sizes(counts)
    factors = frozenset(f for f in structure.factors if f != REPLICATE)
    digits = term_digits(structure, factors, counts)
    n_cells = len(digits[structure.factor])
    codes, levels = [], []
    for term in structure.terms[:-1]:
        ordered = [f for f in structure.factors if f in term.term]
        size = int(np.prod([sizes[f] for f in ordered]))
        codes.append(np.ravel_multi_index([digits[f] for f in ordered], [sizes[f] for f in ordered]).astype(np.int64))
        levels.append(pd.Index([str(k) for k in range(size)]))
    replicates = int(counts[REPLICATE])
    return BinomialCells(
        formula="planned design", successes=np.zeros(n_cells), trials=np.full(n_cells, float(replicates)),
        fixed_cell=digits[structure.factor].astype(np.int64), X_fixed=np.array([[1.0, 0.0], [1.0, 1.0]]),
        fixed_names=("Intercept", f"{structure.factor}[{structure.levels[1]}]"),
        group_names=tuple(t.name for t in structure.terms[:-1]), codes=tuple(codes), levels=tuple(levels),
        n_rows=n_cells * replicates)


class CellSimulator:
    """Draws the successes of the planned cells under the assumed latent components, intercept and effect."""

    def __init__(self, assumptions: Assumptions, counts: Mapping[str, int]):
        self.template = planned_cells(assumptions.structure, counts)
        self.sd = [float(np.sqrt(assumptions.variances[name])) for name in self.template.group_names]
        self.fixed = assumptions.intercept + assumptions.effect * (self.template.fixed_cell == 1)
        self.link = get_link(assumptions.link)
        self.binomial_rows = assumptions.family == BINOMIAL

    def draw(self, rng: np.random.Generator) -> BinomialCells:
        t = self.template
        eta = self.fixed.copy()
        for sd, codes, levels in zip(self.sd, t.codes, t.levels):
            eta += sd * rng.standard_normal(len(levels))[codes]
        successes = rng.binomial(t.trials.astype(np.int64), self.link.inverse(eta)).astype(float)
        coefficient = float(log_binomial_coefficient(successes, t.trials).sum()) if self.binomial_rows else 0.0
        return replace(t, successes=successes, log_coefficient=coefficient)


@dataclass(frozen=True)
class BinaryOutcome:
    p: float
    converged: bool


class BinaryWaldTest:
    name = WALD
    description = "Wald z test of the contrast on the link scale from the ML fit of the binary GLMM (Laplace)"

    def __call__(self, cells: BinomialCells, link: str) -> BinaryOutcome:
        fit = fit_binomial_cells(cells, link)
        z = fit.beta[CONTRAST_COLUMN] / np.sqrt(fit.covariance[CONTRAST_COLUMN, CONTRAST_COLUMN])
        return BinaryOutcome(float(2.0 * ndtr(-abs(z))), fit.converged)


class BinaryLikelihoodRatioTest:
    name = LRT
    description = ("likelihood-ratio test of the binary GLMM's ML fits (Laplace) with and without the contrast, "
                   "chi2(1) reference")

    def __call__(self, cells: BinomialCells, link: str) -> BinaryOutcome:
        full = fit_binomial_cells(cells, link)
        null = fit_binomial_cells(replace(cells, X_fixed=cells.X_fixed[:, :CONTRAST_COLUMN],
                                          fixed_names=cells.fixed_names[:CONTRAST_COLUMN]), link)
        statistic = max(2.0 * (full.loglik - null.loglik), 0.0)
        return BinaryOutcome(float(chdtrc(1, statistic)), full.converged and null.converged)


BINARY_TESTS = {test.name: test for test in (BinaryWaldTest(), BinaryLikelihoodRatioTest())}


def binary_test(name: str):
    """The binary GLMM's test by name; ``auto`` is the Wald z (the GLMM has no Kenward–Roger)."""
    name = WALD if name == "auto" else name
    if name not in BINARY_TESTS:
        raise BayesreproError(f"--test '{name}' is not available for binary scores; choose wald or lrt")
    return BINARY_TESTS[name]


def simulate_binary_chunk(task) -> tuple[np.ndarray, int]:
    """p-values of replicates ``first`` to ``last`` of design ``index`` (generators seeded by (seed, index, r))."""
    assumptions, counts, test, seed, index, first, last = task
    simulator = CellSimulator(assumptions, counts)
    p_values = np.empty(last - first)
    not_converged = 0
    for k, replicate in enumerate(range(first, last)):
        rng = np.random.default_rng([seed, index, replicate])
        try:
            outcome = test(simulator.draw(rng), assumptions.link)
        except BayesreproError:                 # no variation among the simulated scores: nothing to fit
            outcome = BinaryOutcome(1.0, False)
        p_values[k] = outcome.p
        not_converged += not outcome.converged
    return p_values, not_converged


def latent_residual_note(assumptions: Assumptions) -> str:
    return (f"latent scale: residual {assumptions.variances[RESIDUAL]:.4g} is the {assumptions.link} link's, not "
            f"estimated; effect {assumptions.effect:.4g} on the link scale")
