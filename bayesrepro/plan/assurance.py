"""Bayesian assurance: the chance that the planned evaluation's posterior interval of B − A excludes 0 (or a ROPE).

Power fixes the components and the effect at point estimates; a small pilot
knows them poorly. Assurance (O'Hagan, Stevens & Campbell 2005) averages the
probability of a conclusive result over the pilot's posterior: for each
posterior draw of the variance components and of the effect, the planned
design's contrast is estimated with the closed-form standard error of that
draw (``closed_form``), and its posterior given the planned data is taken
as normal around the estimate with that standard error (a flat prior on the
effect, the components known at the draw's values). The 1 − α interval
excludes the region [−r, r] when the estimate lies beyond r + z·se on either
side, which has probability Φ((δ − r)/se − z) + Φ((−δ − r)/se − z) given the
draw. The normal approximation ignores the planned analysis's own
uncertainty about the components, so it is optimistic where a nested facet
has very few levels; the frequentist t-based power is the check there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
from scipy.special import ndtr, ndtri

from ..errors import BayesreproError
from .closed_form import ContrastModel
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
    model = ContrastModel(structure)
    se = np.array([model.precision(counts, {n: draws[n][k] for n in names}).se for k in range(len(effect))])
    z = float(ndtri(1.0 - alpha / 2.0))
    power = ndtr((effect - rope) / se - z) + ndtr((-effect - rope) / se - z)
    return Assurance(float(power.mean()), float(power.std(ddof=1) / np.sqrt(len(power))), len(power), rope, power)


def pilot_posterior(pilot, **settings) -> tuple[dict[str, np.ndarray], np.ndarray]:
    """Posterior draws of every variance component and of B − A from ``fit_bayes`` on the pilot's frame."""
    import pandas as pd

    from ..bayes import fit_bayes
    from ..bayes.posterior import variance_draws

    fit = fit_bayes(pilot.frame, **settings)
    fixed = fit.draws["fixed"]
    weights = pilot.frame.design_rows(pd.DataFrame({pilot.contrast.factor: [pilot.contrast.level_a,
                                                                             pilot.contrast.level_b]}))
    coefficients = fixed.reshape(-1, fixed.shape[-1])
    effect = coefficients @ (weights[1] - weights[0])
    variances = {name: value.ravel() for name, value in variance_draws(fit.draws).items()}
    return variances, effect
