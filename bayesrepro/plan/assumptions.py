"""What a plan assumes: the design structure, the variance components, the effect, the default counts."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np

from ..errors import BayesreproError
from ..reliability import RESIDUAL
from .structure import REPLICATE, DesignStructure, build_structure

GAUSSIAN = "gaussian"
LINEAR_PROBABILITY = "linear-probability"    # 0/1 scores on the score scale (Miller's analysis)
BERNOULLI = "bernoulli"                      # 0/1 scores by the binary GLMM, latent scale
BINOMIAL = "binomial"                        # p(successes, trials) by the binary GLMM, latent scale
FAMILIES = (GAUSSIAN, LINEAR_PROBABILITY, BERNOULLI, BINOMIAL)
GLMM_FAMILIES = (BERNOULLI, BINOMIAL)


@dataclass(frozen=True)
class Assumptions:
    """The model a plan simulates from and evaluates in closed form.

    ``variances`` holds one variance per random term of ``structure`` (the
    formula's groupings and the residual); ``effect`` is the true B − A;
    ``counts`` the count of each facet used where a plan does not vary it.
    ``means`` (A and B) are needed by the linear-probability family only,
    whose residual follows the Bernoulli variances of the two systems. The
    binary GLMM families (bernoulli, binomial) hold latent-scale components
    (the residual is the link's, π²/3 for the logit), the effect on the
    link scale and ``intercept``, the linear predictor of A; each planned
    cell is scored ``counts["(replicate)"]`` times.
    """

    structure: DesignStructure
    variances: Mapping[str, float]
    effect: float
    counts: Mapping[str, int]
    family: str = GAUSSIAN
    means: tuple[float, float] | None = None
    source: str = "assumed"
    notes: tuple[str, ...] = field(default_factory=tuple)
    link: str = "logit"
    intercept: float = 0.0

    @property
    def glmm(self) -> bool:
        return self.family in GLMM_FAMILIES

    def __post_init__(self):
        names = [t.name for t in self.structure.terms]
        missing = [n for n in names if n not in self.variances]
        if missing:
            raise BayesreproError(f"no variance assumed for component '{missing[0]}'; components are: {', '.join(names)}")
        for name in names:
            value = float(self.variances[name])
            if not np.isfinite(value) or value < 0:
                raise BayesreproError(f"the variance of '{name}' must be a finite number of at least 0, not {value}")
        if not float(self.variances[RESIDUAL]) > 0:
            raise BayesreproError("the residual variance must be positive")
        if not np.isfinite(self.effect):
            raise BayesreproError(f"--effect must be a finite number, not {self.effect}")
        if self.family not in FAMILIES:
            raise BayesreproError(f"--family '{self.family}' is unknown; choose one of: {', '.join(FAMILIES)}")
        self.structure.check_counts(self.counts, "default counts")

    def with_effect(self, effect: float) -> "Assumptions":
        return replace(self, effect=float(effect))

    def design(self, overrides: Mapping[str, int] | None = None) -> dict[str, int]:
        """Counts of every facet (and the replicates): the defaults with ``overrides``."""
        counts = {**self.counts, **(overrides or {})}
        return self.structure.check_counts(counts)

    def components(self) -> list[dict]:
        return [{"name": t.name, "variance": float(self.variances[t.name])} for t in self.structure.terms]

    def model_variances(self, effect: float | None = None) -> dict[str, float]:
        """The components of the scores in the planned comparison.

        Gaussian and the binary GLMM: as assumed. Linear probability (0/1
        scores analysed on the score scale): the total variance of a score in system s is p_s(1 − p_s),
        so the residual takes up the difference between the two systems'
        mean Bernoulli variance under the effect and the summed components;
        for items × two systems this gives Miller's (2024) paired variance
        p_A(1 − p_A) + p_B(1 − p_B) − 2 Cov.
        """
        variances = {name: float(v) for name, v in self.variances.items()}
        if self.family != LINEAR_PROBABILITY:
            return variances
        if self.means is None:
            raise BayesreproError("the linear-probability family needs the mean score of system A")
        effect = self.effect if effect is None else effect
        p_a = self.means[0]
        p_b = p_a + effect
        if not (0 <= p_a <= 1 and 0 <= p_b <= 1):
            raise BayesreproError(f"--effect {effect} moves the rate of {self.structure.levels[1]} to {p_b:.3g}, outside [0, 1]")
        bernoulli = 0.5 * (p_a * (1 - p_a) + p_b * (1 - p_b))
        residual = bernoulli - (sum(variances.values()) - variances[RESIDUAL])
        if residual <= 0:
            raise BayesreproError(
                "the assumed components exceed the Bernoulli variance of the scores; lower them or the effect"
            )
        variances[RESIDUAL] = residual
        return variances


def assume(factor: str, levels: tuple[str, str], groups: Mapping[str, tuple[str, ...]],
           variances: Mapping[str, float], effect: float, counts: Mapping[str, int],
           nested: Mapping[str, tuple[str, ...]] | None = None, **options) -> Assumptions:
    """Assumptions written down directly, without pilot data.

    ``groups`` maps each random intercept's name to its columns, e.g.
    ``{"item": ("item",), "system:seed": ("system", "seed")}``; ``nested``
    says which facets are nested in which factors beyond what the groupings
    say (a facet that occurs only together with the compared factor is
    nested in it).
    """
    nested_by = {facet: frozenset(parents) for facet, parents in (nested or {}).items()}
    structure = build_structure(factor, tuple(levels), list(groups.items()), nested_by)
    counts = {REPLICATE: 1, **counts}
    return Assumptions(structure, dict(variances), float(effect), counts, **options)
