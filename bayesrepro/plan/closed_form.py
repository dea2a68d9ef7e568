"""Variance, degrees of freedom and power of the contrast in a balanced random-intercept design, in closed form.

In a balanced design with crossed and nested factors the covariance of the
scores has an orthogonal block structure (Nelder 1965; Bailey 2008, *Design
of Comparative Experiments*, ch. 10): V = Σ_S ξ_S P_S over the *strata* S,
one per term of the lattice spanned by the model's terms (closed under
intersection), where P_S projects on the contrasts between levels of S
orthogonal to every coarser term. With N scores and L_G levels of term G,

    ξ_S = Σ_{random terms G ⊇ S} σ²_G · N / L_G,     dim(S) = L_S − Σ_{S' ⊂ S} dim(S').

The difference of the two systems' means lies in the stratum of the compared
factor F alone, so

    Var(B − A) = (4/N) ξ_F = Σ_{G ⊇ F} 4 σ²_G / L_G,

i.e. every term that varies with the system (seeds nested in it, the
system × item interaction, the residual) adds twice its variance divided by
its number of levels per system; terms shared by both systems cancel. The
ML/REML estimate of the contrast is the difference of means, exactly.

Degrees of freedom: the REML likelihood of a balanced design is
−½ Σ_S [d_S log ξ_S + SS_S/ξ_S] with d_S = dim(S) less the fixed effects in
it, so the expected information for the components is K' diag(d/(2ξ²)) K
(K_SG = N/L_G for G ⊇ S). The estimated variance of the contrast is then
approximately a scaled χ² with Satterthwaite's

    ν = 2 Var² / (w' I⁻¹ w),     w = ∂Var/∂σ²,

which is exact where one stratum carries the whole variance (a paired t test
of items × two systems has ν = items − 1) and is what Satterthwaite's and
Kenward–Roger's methods give for balanced data. The t statistic of the
contrast then follows a noncentral t with ν degrees of freedom and
noncentrality δ/√Var; the power of a test that rejects beyond the critical
value q is P(|T_ν(δ/√Var)| > q): q = t_{ν, 1−α/2} for the t reference, or
q = z_{1−α/2} for the normal reference of the Wald test (whose actual size
is then P(|T_ν| > z), above α when ν is small).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Mapping

import numpy as np
from scipy.special import ndtri, nctdtr, stdtrit

from ..errors import BayesreproError
from .structure import DesignStructure

T_REFERENCE = "t"
NORMAL_REFERENCE = "normal"
REFERENCES = (T_REFERENCE, NORMAL_REFERENCE)


@dataclass(frozen=True)
class ContrastPrecision:
    """The sampling distribution of the contrast's estimate and t statistic in one planned design."""

    variance: float      # Var(B − A)
    df: float            # Satterthwaite's ν of its estimated variance (0: not estimable)

    @property
    def se(self) -> float:
        return float(np.sqrt(self.variance))


class ContrastModel:
    """The lattice of strata of a design structure, evaluated at any counts and variance components."""

    def __init__(self, structure: DesignStructure):
        self.structure = structure
        random_terms = [t.term for t in structure.terms]
        fixed_terms = [frozenset(), frozenset({structure.factor})]
        lattice = set(random_terms) | set(fixed_terms)
        while True:
            grown = lattice | {a & b for a, b in itertools.combinations(lattice, 2)}
            if grown == lattice:
                break
            lattice = grown
        self.strata = sorted(lattice, key=lambda s: (len(s), sorted(s)))
        # one fixed-effect dimension (intercept, system difference) in each of the two fixed strata
        self.fixed_dims = np.array([1.0 if s in fixed_terms else 0.0 for s in self.strata])
        self.below = [[j for j, other in enumerate(self.strata) if other < s] for s in self.strata]
        # K_SG is nonzero where the random term G contains the stratum's term S
        self.contains = np.array([[t.term >= s for t in structure.terms] for s in self.strata], dtype=float)
        self.factor_stratum = self.strata.index(frozenset({structure.factor}))
        self.names = [t.name for t in structure.terms]

    def precision(self, counts: Mapping[str, int], variances: Mapping[str, float]) -> ContrastPrecision:
        """Var(B − A) and its degrees of freedom at the facet counts ``counts``."""
        structure = self.structure
        sigma2 = np.array([float(variances[name]) for name in self.names])
        n = structure.n_obs(counts)
        replication = np.array([n / structure.levels_of(t.term, counts) for t in structure.terms])
        k = self.contains * replication[None, :]
        xi = k @ sigma2
        variance = 4.0 / n * xi[self.factor_stratum]
        dims = np.zeros(len(self.strata))
        for i, s in enumerate(self.strata):
            dims[i] = structure.levels_of(s, counts) - dims[self.below[i]].sum()
        residual_dims = dims - self.fixed_dims
        return ContrastPrecision(float(variance), _satterthwaite(k, xi, residual_dims, variance, 4.0 / n * k[self.factor_stratum]))


def _satterthwaite(k: np.ndarray, xi: np.ndarray, dims: np.ndarray, variance: float, gradient: np.ndarray) -> float:
    """ν = 2 Var² / (w' I⁻¹ w) with the expected REML information I = K' diag(d / 2ξ²) K; 0 if Var is not estimable."""
    used = dims > 0.5
    if variance <= 0:
        return np.inf
    weights = dims[used] / (2.0 * xi[used] ** 2)
    information = k[used].T @ (weights[:, None] * k[used])
    solution, *_ = np.linalg.lstsq(information, gradient, rcond=None)
    # w must lie in the span of the information: otherwise some component of Var(B − A) has no stratum to be estimated from
    if np.linalg.norm(information @ solution - gradient) > 1e-8 * max(np.linalg.norm(gradient), 1e-300):
        return 0.0
    spread = float(gradient @ solution)
    return 2.0 * variance**2 / spread if spread > 0 else np.inf


def critical_value(alpha: float, df: float, reference: str) -> float:
    if reference == NORMAL_REFERENCE or not np.isfinite(df):
        return float(ndtri(1.0 - alpha / 2.0))
    return float(stdtrit(df, 1.0 - alpha / 2.0))


def rejection_probability(effect: float, precision: ContrastPrecision, alpha: float, reference: str = T_REFERENCE) -> float:
    """P(|t| > q) for t ~ noncentral t(ν, effect/se): the power (or, at effect 0, the size) of the two-sided test."""
    if reference not in REFERENCES:
        raise BayesreproError(f"reference '{reference}' is unknown; choose one of: {', '.join(REFERENCES)}")
    if precision.df <= 0:
        return float("nan")
    q = critical_value(alpha, precision.df, reference)
    shift = effect / precision.se
    if not np.isfinite(precision.df):
        from scipy.special import ndtr

        return float(ndtr(shift - q) + ndtr(-shift - q))
    return float(1.0 - nctdtr(precision.df, shift, q) + nctdtr(precision.df, shift, -q))
