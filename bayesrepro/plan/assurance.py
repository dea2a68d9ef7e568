"""Bayesian assurance: the chance that the planned evaluation's posterior interval of B − A excludes 0 (or a ROPE).

Power fixes the components and the effect at point estimates; a small pilot
knows them poorly. Assurance (O'Hagan, Stevens & Campbell 2005) averages the
probability of a conclusive result over the pilot's posterior. For each
posterior draw of the variance components and of the effect, the planned
design's contrast estimate δ̂ is normal around the draw's effect δ with the
closed-form variance V of that draw (``closed_form``), and its estimated
variance V̂ is V χ²_ν/ν with the draw's Satterthwaite ν. Under flat priors on
the effect and the log-variances, the planned posterior of B − A is then the
t distribution δ̂ + √V̂ t_ν (the posterior of a mean whose variance is
estimated on ν degrees of freedom), and its central 1 − α interval excludes
[−r, r] when δ̂ − q√V̂ > r or δ̂ + q√V̂ < −r, q = t_{ν, 1−α/2}. Given the draw
that has probability

    P(Z + (δ − r)/√V > q S) + P(Z − (δ + r)/√V > q S),   S = √(χ²_ν/ν),

which ``closed_form.exceedance`` computes. A few seeds per system leave ν
small and the interval wide, so assurance counts the small-sample penalty
that a normal interval with known variances would miss. The components
estimated at zero are not truncated here (a posterior draw is never zero).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ..errors import BayesreproError
from .closed_form import ContrastModel, critical_value, exceedance, satterthwaite_df
from .structure import DesignStructure


@dataclass(frozen=True)
class Assurance:
    value: float
    mc_se: float
    draws: int
    rope: float
    power_per_draw: np.ndarray

    def to_dict(self) -> dict:
        return {"assurance": self.value, "mc_se": self.mc_se, "draws": self.draws, "rope": self.rope}


def assurance(structure: DesignStructure, variance_draws: Mapping[str, np.ndarray], effect_draws: np.ndarray,
              counts: Mapping[str, int], alpha: float = 0.05, rope: float = 0.0) -> Assurance:
    """Average over posterior draws of P(the planned 1 − α interval of B − A lies outside [−rope, rope])."""
    if not rope >= 0:
        raise BayesreproError(f"--rope must be a half-width of at least 0, not {rope}")
    effect = np.asarray(effect_draws, dtype=float).ravel()
    draws = {name: np.asarray(value, dtype=float).ravel() for name, value in variance_draws.items()}
    names = [t.name for t in structure.terms]
    missing = [n for n in names if n not in draws]
    if missing:
        raise BayesreproError(f"no posterior draws of component '{missing[0]}'")
    if any(len(draws[n]) != len(effect) for n in names):
        raise BayesreproError("the draws of the components and of the effect must be equally many")
    strata = ContrastModel(structure).design_strata(counts)
    sigma2 = np.column_stack([draws[n] for n in names])
    se = np.sqrt(sigma2 @ strata.contrast)
    df = satterthwaite_df(strata, sigma2)
    if np.any(df <= 0):
        raise BayesreproError("the planned design leaves the contrast's variance without degrees of freedom")
    q = critical_value(alpha, df, "t")
    power = exceedance((effect - rope) / se, q, df) + exceedance(-(effect + rope) / se, q, df)
    if not np.all(np.isfinite(power)):
        raise BayesreproError("the assurance of a posterior draw is not a number; this is a bug")
    return Assurance(float(power.mean()), float(power.std(ddof=1) / np.sqrt(len(power))), len(power), rope, power)


@dataclass(frozen=True)
class PilotPosterior:
    variances: dict[str, np.ndarray]     # draws of every component, by name
    effect: np.ndarray                   # draws of B − A
    diagnostics: object                  # bayes.diagnostics.Diagnostics of the run


def pilot_posterior(pilot, sampling=None, **settings) -> PilotPosterior:
    """Posterior draws of every variance component and of B − A from ``fit_bayes`` on the pilot's frame.

    ``sampling`` (a ``bayes.sampling.SamplingSettings``) or keyword settings
    go to ``fit_bayes``; an unconverged run is refused there unless the
    settings allow it.
    """
    import pandas as pd

    from ..bayes import fit_bayes
    from ..bayes.posterior import variance_draws

    fit = fit_bayes(pilot.frame, family="gaussian", sampling=sampling, **settings)
    fixed = fit.draws["fixed"]
    weights = pilot.frame.design_rows(pd.DataFrame({pilot.contrast.factor: [pilot.contrast.level_a,
                                                                             pilot.contrast.level_b]}))
    coefficients = fixed.reshape(-1, fixed.shape[-1])
    effect = coefficients @ (weights[1] - weights[0])
    variances = {name: value.ravel() for name, value in variance_draws(fit.draws).items()}
    return PilotPosterior(variances, effect, fit.diagnostics)
