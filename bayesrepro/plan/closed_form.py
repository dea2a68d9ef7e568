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
noncentrality δ/√Var; ``rejection_probability`` is P(|T_ν(δ/√Var)| > q).
That ignores the boundary: a component whose estimate would be negative is
estimated at zero, which ``test_power`` accounts for.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Mapping

import numpy as np
from scipy.special import gammaln, ndtr, ndtri, stdtrit

from ..errors import BayesreproError
from .structure import DesignStructure

T_REFERENCE = "t"
NORMAL_REFERENCE = "normal"
REFERENCES = (T_REFERENCE, NORMAL_REFERENCE)

# Nodes of log(X/ν) for X ~ χ²_ν, in units of its scale √(2/ν): the trapezoid rule on this grid integrates the
# smooth acceptance probability of a t test to about 1e-10 for every ν ≥ 1 (checked against scipy's noncentral t).
_LOG_CHI2_GRID = np.arange(-40.0, 12.0 + 1e-9, 0.05)


@dataclass(frozen=True)
class ContrastPrecision:
    """The sampling distribution of the contrast's estimate and t statistic in one planned design."""

    variance: float      # Var(B − A)
    df: float            # Satterthwaite's ν of its estimated variance (0: not estimable)

    @property
    def se(self) -> float:
        return float(np.sqrt(self.variance))


@dataclass(frozen=True)
class Strata:
    """The strata of one planned design: what the REML fit of its scores depends on."""

    n_obs: int
    dims: np.ndarray        # d_S: dimension of each stratum less the fixed effects in it
    loadings: np.ndarray    # K (strata × terms): ξ = K σ²
    contrast: np.ndarray    # w: Var(B − A) = w'σ²


class ContrastModel:
    """The lattice of strata of a design structure, evaluated at any counts and variance components."""

    def __init__(self, structure: DesignStructure):
        self.structure = structure
        random_terms = [t.term for t in structure.terms]
        self.fixed_terms = [frozenset(), frozenset({structure.factor})]
        lattice = set(random_terms) | set(self.fixed_terms)
        while True:
            grown = lattice | {a & b for a, b in itertools.combinations(lattice, 2)}
            if grown == lattice:
                break
            lattice = grown
        self.strata = sorted(lattice, key=lambda s: (len(s), sorted(s)))
        # one fixed-effect dimension (intercept, system difference) in each of the two fixed strata
        self.fixed_dims = np.array([1.0 if s in self.fixed_terms else 0.0 for s in self.strata])
        self.below = [[j for j, other in enumerate(self.strata) if other < s] for s in self.strata]
        # K_SG is nonzero where the random term G contains the stratum's term S
        self.contains = np.array([[t.term >= s for t in structure.terms] for s in self.strata], dtype=float)
        self.factor_stratum = self.strata.index(frozenset({structure.factor}))
        self.names = [t.name for t in structure.terms]

    def design_strata(self, counts: Mapping[str, int]) -> Strata:
        structure = self.structure
        n = structure.n_obs(counts)
        replication = np.array([n / structure.levels_of(t.term, counts) for t in structure.terms])
        dims = np.zeros(len(self.strata))
        for i, s in enumerate(self.strata):
            dims[i] = structure.levels_of(s, counts) - dims[self.below[i]].sum()
        k = self.contains * replication[None, :]
        return Strata(n, dims - self.fixed_dims, k, 4.0 / n * k[self.factor_stratum])

    def precision(self, counts: Mapping[str, int], variances: Mapping[str, float]) -> ContrastPrecision:
        """Var(B − A) and its degrees of freedom at the facet counts ``counts``."""
        strata = self.design_strata(counts)
        sigma2 = np.array([float(variances[name]) for name in self.names])
        variance = float(strata.contrast @ sigma2)
        return ContrastPrecision(variance, satterthwaite_df(strata, sigma2[None, :])[0])


def satterthwaite_df(strata: Strata, sigma2: np.ndarray) -> np.ndarray:
    """ν = 2 Var² / (w' I⁻¹ w) with the expected REML information I = K' diag(d / 2ξ²) K, for each row of ``sigma2``.

    0 where Var is not estimable: w outside the span of the information, some
    component of Var(B − A) having no stratum to be estimated from.
    """
    used = strata.dims > 0.5
    k = strata.loadings[used]
    w = strata.contrast
    xi = sigma2 @ k.T                                                  # (rows, strata)
    information = np.einsum("sg,rs,sh->rgh", k, strata.dims[used] / (2.0 * xi**2), k)
    try:
        solution = np.linalg.solve(information, np.broadcast_to(w, xi.shape[:1] + w.shape)[..., None])[..., 0]
    except np.linalg.LinAlgError:
        solution = np.einsum("rgh,h->rg", np.linalg.pinv(information, rcond=1e-12), w)
    residual = np.linalg.norm(np.einsum("rgh,rh->rg", information, solution) - w, axis=1)
    spread = solution @ w
    variance = sigma2 @ w
    with np.errstate(divide="ignore"):
        df = np.where(spread > 0, 2.0 * variance**2 / spread, np.inf)
    return np.where(residual > 1e-8 * max(np.linalg.norm(w), 1e-300), 0.0, df)


def critical_value(alpha: float, df, reference: str):
    """The two-sided critical value of the normal, or of t with ``df`` (an array; ∞ is the normal)."""
    normal = float(ndtri(1.0 - alpha / 2.0))
    if reference == NORMAL_REFERENCE:
        return np.full(np.shape(df), normal)
    distinct, inverse = np.unique(np.asarray(df, dtype=float), return_inverse=True)   # often a handful of values
    finite = np.isfinite(distinct)
    q = np.full(distinct.shape, normal)
    q[finite] = stdtrit(distinct[finite], 1.0 - alpha / 2.0)
    return q[inverse].reshape(np.shape(df))


def exceedance(shift, q, df) -> np.ndarray:
    """P(Z + shift > q √(X/ν)) for Z ~ N(0, 1), X ~ χ²_ν independent (arrays broadcast; ν = ∞ is the normal limit).

    Integrated over log X on a fixed grid: stable where scipy's noncentral t
    distribution function returns NaN (large noncentrality, large ν).
    """
    shift, q, df = np.broadcast_arrays(*(np.asarray(v, dtype=float) for v in (shift, q, df)))
    result = np.empty(shift.shape)
    infinite = ~np.isfinite(df)
    result[infinite] = ndtr(shift[infinite] - q[infinite])
    finite = ~infinite
    if finite.any():
        nu = df[finite][:, None]
        y = _LOG_CHI2_GRID[None, :] * np.sqrt(2.0 / nu)                 # log(X/ν)
        log_x = np.log(nu) + y
        log_density = 0.5 * nu * log_x - 0.5 * np.exp(log_x) - 0.5 * nu * np.log(2.0) - gammaln(0.5 * nu)
        weights = np.exp(log_density - log_density.max(axis=1, keepdims=True))
        weights /= weights.sum(axis=1, keepdims=True)
        result[finite] = np.sum(weights * ndtr(shift[finite][:, None] - q[finite][:, None] * np.exp(0.5 * y)), axis=1)
    return result


def rejection_probability(effect: float, precision: ContrastPrecision, alpha: float, reference: str = T_REFERENCE) -> float:
    """P(|t| > q) for t ~ noncentral t(ν, effect/se): the power (or, at effect 0, the size) of the two-sided test.

    NaN where the design leaves the contrast's variance without degrees of freedom (ν = 0): no test exists.
    """
    if reference not in REFERENCES:
        raise BayesreproError(f"reference '{reference}' is unknown; choose one of: {', '.join(REFERENCES)}")
    if precision.df <= 0:
        return float("nan")
    q = critical_value(alpha, precision.df, reference)
    shift = effect / precision.se
    power = float(exceedance(shift, q, precision.df) + exceedance(-shift, q, precision.df))
    if not np.isfinite(power):
        raise BayesreproError(f"the power at effect {effect} and SE {precision.se} could not be computed")
    return power
