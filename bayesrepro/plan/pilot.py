"""Assumptions read off a pilot: the REML fit of the model, the pilot's contrast, its facets and their nesting."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import as_factor, read_table
from ..design import ModelFrame, build_model_frame, parse_formula
from ..design.cells import levels_of
from ..errors import BayesreproError
from ..frequentist.lmm import LmmFit, fit_model_frame
from .assumptions import BINOMIAL, Assumptions
from .structure import REPLICATE, build_structure


@dataclass(frozen=True)
class Contrast:
    factor: str
    level_b: str
    level_a: str

    @property
    def text(self) -> str:
        return f"{self.factor}={self.level_b} - {self.level_a}"


def parse_contrast(text: str) -> Contrast:
    """``"system=B-A"`` or ``"system=Post-Edit - Baseline"`` (levels separated by ' - ' where they hold '-')."""
    factor, sep, levels = str(text).partition("=")
    if not sep or not factor.strip():
        raise BayesreproError(f"--contrast '{text}' needs the form FACTOR=B-A, e.g. system=Marking-Baseline")
    if " - " in levels:
        parts = levels.split(" - ")
    else:
        parts = levels.split("-")
    parts = [p.strip() for p in parts]
    if len(parts) != 2 or not all(parts):
        raise BayesreproError(
            f"--contrast '{text}' needs two levels, B-A; write ' - ' between them where a level holds '-'"
        )
    if parts[0] == parts[1]:
        raise BayesreproError(f"--contrast '{text}' compares a level with itself; name two different levels")
    return Contrast(factor.strip(), parts[0], parts[1])


def check_formula_for_contrast(formula: str, factor: str) -> None:
    """Plans cover models whose fixed part is the compared factor alone, with at least one random intercept."""
    spec = parse_formula(formula)
    if spec.fixed_terms != (factor,) or not spec.intercept:
        raise BayesreproError(
            f"--formula: the fixed part must be the compared factor '{factor}' alone (with the intercept), "
            f"e.g. '{spec.response} ~ {factor} + (1|item)'; other fixed terms are not planned for"
        )
    if not spec.group_factors:
        raise BayesreproError("--formula has no (1|g) term; add the test items, e.g. (1|item)")


@dataclass(frozen=True)
class Pilot:
    """The pilot's REML fit and what a plan takes from it."""

    frame: ModelFrame
    fit: LmmFit
    contrast: Contrast
    estimate: float
    std_error: float
    assumptions: Assumptions


def analyse_pilot(formula: str, data, contrast: str | Contrast, effect: float | None = None, family: str = "gaussian",
                  where: str | None = None, drop_missing: bool = False) -> Pilot:
    """Fit ``formula`` by REML to the pilot and take the components, nesting and counts for a plan.

    The effect is ``effect`` where given, else the pilot's estimate of the contrast.
    """
    contrast = contrast if isinstance(contrast, Contrast) else parse_contrast(contrast)
    check_formula_for_contrast(formula, contrast.factor)
    rows = read_table(data, where=where)
    frame = build_model_frame(formula, rows, drop_missing=drop_missing)
    available = [str(v) for v in levels_of(frame.cells, contrast.factor)]
    for level in (contrast.level_b, contrast.level_a):
        if level not in available:
            raise BayesreproError(
                f"--contrast: '{level}' is not a level of '{contrast.factor}'; levels are: {', '.join(available)}"
            )
    if family == BINOMIAL and not np.all((frame.y == 0) | (frame.y == 1)):
        raise BayesreproError(f"--family binomial needs 0/1 scores in '{frame.response}'")
    fit = fit_model_frame(frame, "reml")
    weights = frame.design_rows(pd.DataFrame({contrast.factor: [contrast.level_a, contrast.level_b]}))
    difference = weights[1] - weights[0]
    estimate = float(difference @ fit.beta)
    std_error = float(np.sqrt(difference @ fit.covariance @ difference))
    structure, counts = facet_structure(frame, contrast.factor, (contrast.level_a, contrast.level_b))
    means = tuple(float(weights[k] @ fit.beta) for k in (0, 1))
    notes = [f"pilot: {frame.n_obs} scores; REML fit of {frame.formula}"]
    if not fit.converged:
        notes.append(f"the pilot's REML fit did not converge: {fit.message}")
    if fit.boundary:
        notes.append(f"pilot components estimated at zero: {', '.join(fit.boundary)}")
    assumptions = Assumptions(
        structure=structure,
        variances=dict(fit.variances),
        effect=estimate if effect is None else float(effect),
        counts=counts,
        family=family,
        means=means,
        source=f"REML fit of the pilot ({frame.n_obs} scores)",
        notes=tuple(notes),
    )
    return Pilot(frame, fit, contrast, estimate, std_error, assumptions)


def facet_structure(frame: ModelFrame, factor: str | None = None, levels: tuple[str, ...] = ()):
    """The design structure of the frame's random intercepts and the pilot's count of each facet.

    Counts are taken on the rows of the compared levels; a nested facet's
    count is its number of levels per level of its parents (the smallest), the
    replicates are the scores per cell of the factor and every facet (the smallest).
    """
    groups = [(g.name, g.columns) for g in frame.groups]
    structure = build_structure(factor, levels, groups, _nesting_in_data(frame.data, factor, groups))
    rows = frame.data[frame.data[factor].astype(str).isin(levels)] if factor else frame.data
    counts = {facet: _count_per_parent(rows, facet, structure.parents[facet]) for facet in structure.facets}
    cell = list(dict.fromkeys(([factor] if factor else []) + [c for _, columns in groups for c in columns]))
    counts[REPLICATE] = int(rows.groupby(cell, observed=True).size().min())
    return structure, counts


def _nesting_in_data(data: pd.DataFrame, factor: str, groups) -> dict[str, frozenset[str]]:
    """For each facet, the other factors whose level its label determines (seed ids unique to one system)."""
    columns = list(dict.fromkeys(c for _, cols in groups for c in cols if c != factor))
    factors = ([factor] if factor else []) + columns
    codes = {c: as_factor(data, c).codes for c in factors}
    nested = {}
    for facet in columns:
        parents = set()
        for other in factors:
            if other == facet:
                continue
            pairs = pd.DataFrame({"facet": codes[facet], "other": codes[other]}).drop_duplicates()
            one_parent = pairs["facet"].is_unique
            same_partition = one_parent and pairs["other"].is_unique
            if one_parent and not same_partition:
                parents.add(other)
        nested[facet] = frozenset(parents)
    return nested


def _count_per_parent(rows: pd.DataFrame, facet: str, parents: frozenset[str]) -> int:
    """Levels of ``facet`` per combination of its parents' levels (the smallest, where they differ)."""
    if not parents:
        return int(rows[facet].nunique())
    return int(rows.groupby(sorted(parents), observed=True)[facet].nunique().min())
