"""Which reference distribution a likelihood-ratio test is read against, and why.

The χ² reference of the GLRT (and the 50:50 χ²₀:χ²₁ mixture for one variance
component) is asymptotic in the number of levels of the grouping factor
that carries the tested effect. With a few seeds per system, the seeds are
the replication unit of the system contrast and the χ² rejects true nulls
about twice as often as it promises; the mixture, in turn, misses real seed
variance. The calibrated references:

- ``kenward-roger`` / ``satterthwaite``: F test of the fixed effects H1 adds,
  on the REML fit of H1, with small-sample denominator degrees of freedom
  (``ddf``); H0 and H1 must share their random intercepts;
- ``bootstrap``: the LRT statistic against its parametric-bootstrap null
  distribution (``bootstrap_test``); any nested pair;
- ``exact-rlrt``: the restricted LRT of one variance component against its
  exact simulated null (``rlrt``); H0 and H1 must share their fixed effects.

The rule of ``auto`` (the default):

A grouping factor of H1 *carries* the tested effect when at least
``CARRY_SHARE`` (10 %) of the variation of the tested terms lies between its
levels: for fixed effects, the sum of squares of H1's fixed-effect columns
after removing H0's fixed effects, split into between and within the levels
of the factor (seeds nested in systems carry the system contrast entirely;
items crossed with the systems carry none of it), and a factor over which
H1 has a random slope of a tested variable (its effect varies between the
levels); for a variance component, the tested factor itself. When a carrier has fewer than ``FEW_LEVELS`` (50)
levels, the test is calibrated: Kenward–Roger for fixed effects (the
bootstrap when the models also differ in random intercepts, or when the
dense algebra would be too large), the exact RLRT for one variance
component (the bootstrap for other differences). Otherwise the χ² (or the
mixture) is used. The limit of 50 comes from the simulations of
``benchmarks/small_sample_calibration.py``: with 10 seeds per system
(20 levels) the χ² still rejected 6.4 % of true nulls at 5 %.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..design import ModelFrame
from ..errors import BayesreproError
from .reml_derivatives import DENSE_LIMIT

AUTO = "auto"
CHI2 = "chi2"
KENWARD_ROGER = "kenward-roger"
SATTERTHWAITE = "satterthwaite"
BOOTSTRAP = "bootstrap"
EXACT_RLRT = "exact-rlrt"
REFERENCES = (AUTO, CHI2, KENWARD_ROGER, SATTERTHWAITE, BOOTSTRAP, EXACT_RLRT)
CALIBRATED = (KENWARD_ROGER, SATTERTHWAITE, BOOTSTRAP, EXACT_RLRT)
FEW_LEVELS = 50
CARRY_SHARE = 0.10


def check_reference(reference, option: str = "--reference") -> str:
    name = str(reference).strip().lower()
    if name not in REFERENCES:
        raise BayesreproError(f"{option} '{reference}' is not known; use one of: {', '.join(REFERENCES)}")
    return name


@dataclass(frozen=True)
class Carrier:
    """A grouping factor between whose levels the tested effect varies."""

    name: str
    n_levels: int
    share: float          # of the tested variation that lies between its levels
    slope: bool = False   # a random slope of a tested variable varies over its levels

    def describe(self) -> str:
        if self.slope:
            return f"'{self.name}' ({self.n_levels} levels, with a random slope of the tested effect)"
        return f"'{self.name}' ({self.n_levels} levels, {100 * self.share:.0f} % of the tested variation between them)"


@dataclass(frozen=True)
class TestKind:
    """What differs between H0 and H1."""

    fixed: bool                   # H1 adds fixed effects
    random: tuple[str, ...]       # grouping factors H1 adds

    @property
    def one_component(self) -> bool:
        return not self.fixed and len(self.random) == 1


def test_kind(frame0: ModelFrame, frame1: ModelFrame) -> TestKind:
    groups0 = {frozenset(g.columns) for g in frame0.groups}
    added = tuple(g.name for g in frame1.groups if frozenset(g.columns) not in groups0)
    return TestKind(frame1.n_fixed > frame0.n_fixed, added)


def carriers(frame0: ModelFrame, frame1: ModelFrame, x0_on_h1_cells: np.ndarray) -> list[Carrier]:
    """H1's grouping factors that carry the tested effect (see the module's rule), most levels last."""
    kind = test_kind(frame0, frame1)
    found = []
    if kind.fixed:
        found += _fixed_effect_carriers(frame1, x0_on_h1_cells)
        found += _slope_carriers(frame0, frame1)
    found += [Carrier(g.name, g.n_levels, 1.0) for g in frame1.groups if g.name in kind.random]
    return sorted(found, key=lambda c: c.n_levels)


def _fixed_effect_carriers(frame1: ModelFrame, x0_on_h1_cells: np.ndarray) -> list[Carrier]:
    """Factors with at least CARRY_SHARE of the tested columns' sum of squares (after H0's columns) between levels."""
    xtx = frame1.X.T @ frame1.X if frame1.spec.has_slopes else frame1.stats().xtx
    to_h1, *_ = np.linalg.lstsq(frame1.X_cells, x0_on_h1_cells, rcond=None)        # X0 = X1 T
    gram0 = to_h1.T @ xtx @ to_h1
    if gram0.size:
        residualise = np.eye(len(xtx)) - to_h1 @ np.linalg.pinv(gram0) @ to_h1.T @ xtx   # X̃ = X1 (I − T B)
    else:
        residualise = np.eye(len(xtx))
    total = float(np.trace(residualise.T @ xtx @ residualise))
    if total <= 0:
        return []
    found = []
    for counts, zx, group in _level_blocks(frame1):
        sums = zx @ residualise                                   # Z'X̃ per level
        between = float(np.sum(sums * sums / counts[:, None]))
        if between >= CARRY_SHARE * total:
            found.append(Carrier(group.name, group.n_levels, min(between / total, 1.0)))
    return found


def _slope_carriers(frame0: ModelFrame, frame1: ModelFrame) -> list[Carrier]:
    """Factors over which H1 has a random slope of a variable whose fixed effect H0 drops."""
    tested = set(frame1.spec.fixed_variables) - set(frame0.spec.fixed_variables)
    groups = {term.group for term in frame1.spec.random_terms if tested & set(term.slope_variables)}
    return [Carrier(g.name, g.n_levels, 1.0, slope=True) for g in frame1.groups if g.name in groups]


def _level_blocks(frame: ModelFrame):
    """(level counts, Z'X, grouping factor) of every factor of the frame."""
    if frame.spec.has_slopes:   # no grouped statistics: the sums over the rows of each level
        for group in frame.groups:
            counts = np.bincount(group.codes, minlength=group.n_levels).astype(float)
            zx = np.column_stack([np.bincount(group.codes, weights=column, minlength=group.n_levels)
                                  for column in frame.X.T])
            yield counts, zx, group
        return
    stats = frame.stats()
    offsets = np.concatenate([[0], np.cumsum(stats.rest_sizes)]).astype(int)
    for position, k in enumerate(stats.order):
        if position == 0:
            yield stats.dominant_counts, stats.dominant_zx, frame.groups[k]
        else:
            block = slice(offsets[position - 1], offsets[position])
            yield np.diag(stats.rest_gram)[block], stats.rest_zx[block], frame.groups[k]


@dataclass(frozen=True)
class Choice:
    method: str
    reason: str
    carriers: tuple[Carrier, ...] = ()      # the carriers with few levels behind the rule's choice


def choose(frame0: ModelFrame, frame1: ModelFrame, x0_on_h1_cells: np.ndarray, requested: str,
           binary: bool = False) -> Choice:
    """The reference to use: the one requested, or the rule's choice for ``auto``; refuses what cannot apply.

    ``binary`` models (GLMMs of 0/1 scores) have the χ² and the bootstrap only (``auto`` is not decided here).
    """
    kind = test_kind(frame0, frame1)
    if binary and requested not in (AUTO, CHI2, BOOTSTRAP):
        raise BayesreproError(
            f"--reference {requested} is available for Gaussian models; binary GLMMs are read against chi2 or bootstrap"
        )
    if requested in (KENWARD_ROGER, SATTERTHWAITE) and (kind.random or not kind.fixed):
        raise BayesreproError(
            f"--reference {requested} tests fixed effects of models with the same random intercepts, but H1 adds "
            f"{', '.join(kind.random)}; use --reference bootstrap (or exact-rlrt for one variance component)"
        )
    if requested == EXACT_RLRT and not kind.one_component:
        raise BayesreproError(
            "--reference exact-rlrt tests one variance component between models with the same fixed effects; "
            "use --reference bootstrap for this pair of models"
        )
    if requested != AUTO:
        return Choice(requested, "requested")
    few = [c for c in carriers(frame0, frame1, x0_on_h1_cells) if c.n_levels < FEW_LEVELS]
    if not few:
        return Choice(CHI2, f"no grouping factor with fewer than {FEW_LEVELS} levels carries the tested effect")
    reason = f"{few[0].describe()} carries the tested effect, fewer than {FEW_LEVELS} levels"
    if kind.one_component:
        return Choice(EXACT_RLRT, reason)
    if kind.fixed and not kind.random and dense_size(frame1) <= DENSE_LIMIT:
        return Choice(KENWARD_ROGER, reason, tuple(few))
    return Choice(BOOTSTRAP, reason, tuple(few))


def unless_carrier_at_zero(choice: Choice, reml1) -> Choice:
    """The rule's Kenward–Roger, or the bootstrap where H1's REML fit (``reml1``) puts a carrier's variance at zero."""
    zero = [c.name for c in choice.carriers if c.name in reml1.boundary]
    if choice.method != KENWARD_ROGER or not zero:
        return choice
    return Choice(BOOTSTRAP, f"{choice.reason}; REML puts the variance of '{zero[0]}' at zero, where Kenward-Roger's "
                             "F is conservative", choice.carriers)


def dense_size(frame: ModelFrame) -> int:
    """Rows of the dense matrices of Satterthwaite and Kenward–Roger: random-effect columns plus fixed effects."""
    if frame.spec.has_slopes:
        from .slope_ddf import slope_dense_size

        return slope_dense_size(frame)
    return sum(g.n_levels for g in frame.groups) + frame.n_fixed
