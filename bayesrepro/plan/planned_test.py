"""Power of the test of B − A as the package runs it on a balanced design, the boundary of the variances included.

The tests divide the difference of means by its estimated standard error,
the REML estimate of Var(B − A) = w'σ², and read the ratio against a normal
(``wald``) or a t reference with Kenward–Roger's degrees of freedom at the
fitted components (``kenward-roger``: what ``glrt`` and ``compare`` use when
fewer than 50 levels carry the contrast, e.g. a few seeds per system; ``auto``
picks between the two by that rule, per design).

In a balanced design the REML fit depends on the data only through the
strata's mean squares MS_S (``closed_form``), independent of each other and
of the difference of means, with MS_S ~ ξ_S χ²_{d_S}/d_S. Where every
component's ANOVA estimate σ² = K⁻¹MS is positive, the REML estimate is that;
otherwise REML puts some components at zero, and the remaining ones are the
ANOVA estimates of the smaller model, whose strata pool the mean squares of
the original ones. The estimate is therefore the best (highest REML
likelihood) of the 2^(terms − 1) such candidates that is feasible
(nonnegative). Near a zero component (the pilot of ``kreutzer_ter`` estimates
its seed variance at zero) this matters: half of the planned data sets then
pool the seeds' stratum with the residual one, and the Satterthwaite
approximation of the noncentral t, which treats Var(B − A) as estimated
without the boundary, misses the simulated power of the Wald test by up to
0.1.

The power is P(|δ̂| > q √V̂) = 1 − E[Φ((q√V̂ − δ)/√V) − Φ((−q√V̂ − δ)/√V)],
the expectation over the mean squares taken by quasi-Monte Carlo: ``NODES``
scrambled Sobol points (a fixed seed: the same design always gets the same
value) put through the χ² quantile functions (Wilson–Hilferty's cube of a
normal above ``WILSON_HILFERTY`` df). Other scramblings move a power by about
1e-5; against simulations of the refits the closed form stays within 0.03
(``tests/test_plan_calibration.py``). A design whose smaller models are not
all saturated (a stratum that no remaining component describes alone) falls
back to the noncentral t.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from functools import lru_cache
from typing import Mapping

import numpy as np
from scipy.special import chdtri, ndtr, ndtri

from ..errors import BayesreproError
from ..frequentist.reference import FEW_LEVELS
from .closed_form import (NORMAL_REFERENCE, T_REFERENCE, ContrastModel, ContrastPrecision, Strata, critical_value,
                          rejection_probability, satterthwaite_df)
from .structure import DesignStructure

AUTO = "auto"
WALD = "wald"
KENWARD_ROGER = "kenward-roger"
LRT = "lrt"
TESTS = (AUTO, WALD, KENWARD_ROGER, LRT)
NODES = 2**11
QMC_SEED = 20240614
# A candidate's components may fall this far below zero (relative to the mean squares) and count as feasible.
FEASIBLE = 1e-12
WILSON_HILFERTY = 200


def check_test_name(name: str) -> str:
    if name not in TESTS:
        raise BayesreproError(f"--test '{name}' is unknown; choose one of: {', '.join(TESTS)}")
    return name


def carried_by_few_levels(structure: DesignStructure, counts: Mapping[str, int]) -> bool:
    """Whether a random term that varies with the compared factor has fewer than ``FEW_LEVELS`` levels.

    The rule of ``frequentist.reference``: in a balanced design the contrast
    lies wholly between the levels of every term containing the compared
    factor (seeds nested in systems, the item × system interaction) and not
    at all between those of the others.
    """
    return any(structure.factor in t.term and structure.levels_of(t.term, counts) < FEW_LEVELS
               for t in structure.terms[:-1])


def resolve_test(name: str, structure: DesignStructure, counts: Mapping[str, int]) -> str:
    """``auto`` → kenward-roger where few levels carry the contrast, else wald; other names unchanged."""
    if name != AUTO:
        return name
    return KENWARD_ROGER if carried_by_few_levels(structure, counts) else WALD


@dataclass(frozen=True)
class _Face:
    """A candidate of the constrained REML fit: the components kept free (the others at zero)."""

    active: np.ndarray      # bool over the terms (the residual always)
    groups: np.ndarray      # each stratum's stratum in the smaller model


class PlannedTest:
    """The closed-form power of the package's tests of B − A in the designs of one structure."""

    def __init__(self, structure: DesignStructure):
        self.model = ContrastModel(structure)
        self.structure = structure
        terms = [t.term for t in structure.terms]
        self.faces = []
        for kept in itertools.product((True, False), repeat=len(terms) - 1):
            active = np.array([*kept, True])
            members = [t for t, a in zip(terms, active) if a] + self.model.fixed_terms
            closures = [frozenset.intersection(*[m for m in members if m >= s]) for s in self.model.strata]
            labels = list(dict.fromkeys(closures))
            self.faces.append(_Face(active, np.array([labels.index(c) for c in closures])))

    def precision(self, counts: Mapping[str, int], variances: Mapping[str, float]) -> ContrastPrecision:
        return self.model.precision(counts, variances)

    def power(self, effect: float, counts: Mapping[str, int], variances: Mapping[str, float], alpha: float,
              test: str) -> tuple[float, bool]:
        """(power, exact): the rejection probability of ``test`` (wald or kenward-roger; lrt is given its Wald
        counterpart) at the true ``effect``; ``exact`` False where the noncentral t stands in (see the module).

        NaN where Var(B − A) has no degrees of freedom (a nested facet with one level per system): no test exists.
        """
        test = resolve_test(test, self.structure, counts)
        precision = self.model.precision(counts, variances)
        if precision.df <= 0:
            return float("nan"), True
        estimates = self.estimates(counts, variances)
        reference = NORMAL_REFERENCE if test in (WALD, LRT) else T_REFERENCE
        if estimates is None:
            return rejection_probability(effect, precision, alpha, reference), False
        ratio, df = estimates
        q = critical_value(alpha, df() if reference == T_REFERENCE else np.inf, reference)
        shift = effect / precision.se
        scaled = q * np.sqrt(ratio)
        power = 1.0 - float(np.mean(ndtr(scaled - shift) - ndtr(-scaled - shift)))
        if not np.isfinite(power):
            raise BayesreproError(f"the power of the {test} test at effect {effect} could not be computed")
        return power, True

    def estimates(self, counts: Mapping[str, int], variances: Mapping[str, float]):
        """(V̂/V, a function giving Kenward–Roger's ν̂) at the nodes, or None where a candidate model is not saturated."""
        strata = self.model.design_strata(counts)
        sigma2 = np.array([float(variances[name]) for name in self.model.names])
        used = strata.dims > 0.5
        dims = strata.dims[used]
        xi = strata.loadings[used] @ sigma2
        mean_squares = xi * _chi2_over_df(dims)                                # (nodes, used strata)
        best = np.full(len(mean_squares), -np.inf)
        fitted = np.zeros((len(mean_squares), len(sigma2)))
        for face in self.faces:
            candidate = _candidate(face, strata, used, mean_squares)
            if candidate is None:
                return None
            components, loglik = candidate
            feasible = np.all(components >= -FEASIBLE * mean_squares.max(axis=1, keepdims=True), axis=1)
            better = feasible & (loglik > best)
            best[better] = loglik[better]
            fitted[np.ix_(better, face.active)] = components[better]
            fitted[np.ix_(better, ~face.active)] = 0.0
        fitted = np.maximum(fitted, 0.0)
        variance = float(strata.contrast @ sigma2)
        return fitted @ strata.contrast / variance, lambda: satterthwaite_df(strata, fitted)


def _candidate(face: _Face, strata: Strata, used: np.ndarray, mean_squares: np.ndarray):
    """The ANOVA estimates of the smaller model at every node and its REML log-likelihood (up to a constant)."""
    groups = face.groups[used]
    dims = strata.dims[used]
    pooled_dims = np.bincount(groups, weights=dims)
    kept = np.flatnonzero(pooled_dims > 0.5)
    if len(kept) != face.active.sum():
        return None
    first = [int(np.flatnonzero(groups == g)[0]) for g in kept]
    loadings = strata.loadings[used][np.ix_(first, face.active)]
    pooling = np.zeros((len(dims), len(kept)))
    for column, g in enumerate(kept):
        members = groups == g
        pooling[members, column] = dims[members] / pooled_dims[g]
    pooled = mean_squares @ pooling
    try:
        components = np.linalg.solve(loadings, pooled.T).T
    except np.linalg.LinAlgError:
        return None
    return components, -0.5 * np.log(pooled) @ pooled_dims[kept]


def _chi2_over_df(dims: np.ndarray) -> np.ndarray:
    """χ²_d/d at the nodes for each stratum's d: exact quantiles up to ``WILSON_HILFERTY`` df, else Wilson–Hilferty's
    cube of a normal (its relative error, below 1e-4 there, moves a power by far less than the nodes do)."""
    points = _nodes(len(dims))
    columns = []
    for column, d in enumerate(dims):
        if d <= WILSON_HILFERTY:
            columns.append(_exact_quantiles(float(d), len(dims), column))
        else:
            spread = 2.0 / (9.0 * d)
            columns.append((1.0 - spread + np.sqrt(spread) * points[1][:, column]) ** 3)
    return np.column_stack(columns)


@lru_cache(maxsize=256)
def _exact_quantiles(d: float, dimension: int, column: int) -> np.ndarray:
    return chdtri(d, _nodes(dimension)[0][:, column]) / d


@lru_cache(maxsize=16)
def _nodes(dimension: int) -> tuple[np.ndarray, np.ndarray]:
    """``NODES`` scrambled Sobol points in [0, 1]^dimension (fixed seed), as upper-tail probabilities and normal
    quantiles."""
    from scipy.stats import qmc

    points = np.clip(qmc.Sobol(dimension, scramble=True, seed=QMC_SEED).random(NODES), 1e-15, 1 - 1e-15)
    return points, ndtri(1.0 - points)
