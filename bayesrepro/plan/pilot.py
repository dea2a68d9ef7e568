"""Assumptions read off a pilot: the fit of the model, the pilot's contrast, its facets and their nesting.

Everything is taken from the model frame's grouped sums (which levels of each
grouping occur in which fixed cell, which levels of two groupings occur
together), never from rows: a pilot read by DuckDB or Spark (``--engine``)
is planned from the same statistics as one in memory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import read_table
from ..design import FormulaSpec, ModelFrame, build_model_frame, parse_formula, resolve_family
from ..design.cells import levels_of
from ..design.random_terms import quote_name
from ..errors import BayesreproError
from ..frequentist.fitting import component_variances, fit_frame
from .assumptions import GAUSSIAN, LINEAR_PROBABILITY, Assumptions
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


def check_formula_for_contrast(formula: str | FormulaSpec, factor: str) -> None:
    """Plans cover models whose fixed part is the compared factor alone, with at least one random intercept."""
    spec = formula if isinstance(formula, FormulaSpec) else parse_formula(formula)
    if spec.fixed_terms != (quote_name(factor),) or not spec.intercept:
        raise BayesreproError(
            f"--formula: the fixed part must be the compared factor '{factor}' alone (with the intercept), "
            f"e.g. '{spec.response} ~ {factor} + (1|item)'; other fixed terms are not planned for"
        )
    if not spec.group_factors:
        raise BayesreproError("--formula has no (1|g) term; add the test items, e.g. (1|item)")


def check_contrast_levels(frame: ModelFrame, contrast: Contrast) -> None:
    if contrast.factor not in frame.cells.columns:
        raise BayesreproError(f"--contrast: '{contrast.factor}' is not a fixed effect of {frame.formula!r}")
    available = [str(v) for v in levels_of(frame.cells, contrast.factor)]
    for level in (contrast.level_b, contrast.level_a):
        if level not in available:
            raise BayesreproError(
                f"--contrast: '{level}' is not a level of '{contrast.factor}'; levels are: {', '.join(available)}"
            )


@dataclass(frozen=True)
class Pilot:
    """The pilot's fit and what a plan takes from it."""

    frame: ModelFrame
    fit: object                  # LmmFit (REML) or GlmmFit (ML, latent scale)
    contrast: Contrast
    estimate: float              # B − A on the scale of the planned test (link scale for the GLMM)
    std_error: float
    assumptions: Assumptions


def analyse_pilot(formula: str, data, contrast: str | Contrast, effect: float | None = None, family: str = "auto",
                  link: str | None = None, where: str | None = None, drop_missing: bool = False) -> Pilot:
    """Fit ``formula`` to the pilot and take the components, nesting and counts for a plan.

    ``data`` is anything ``build_model_frame`` reads, or a model frame built by
    a producer. Gaussian scores are fitted by REML; 0/1 scores (``family``
    auto or bernoulli) and p(successes, trials) by the binary GLMM (ML,
    latent scale); ``family="gaussian"`` on 0/1 scores plans them as a
    linear probability model. The effect is ``effect`` where given (on the
    link scale for the GLMM), else the pilot's estimate of the contrast.
    """
    contrast = contrast if isinstance(contrast, Contrast) else parse_contrast(contrast)
    check_formula_for_contrast(data.spec if isinstance(data, ModelFrame) else formula, contrast.factor)
    frame = data if isinstance(data, ModelFrame) else build_model_frame(formula, read_table(data, where=where),
                                                                        drop_missing=drop_missing)
    check_contrast_levels(frame, contrast)
    resolved = resolve_family(frame, family, link)
    weights = frame.design_rows(pd.DataFrame({contrast.factor: [contrast.level_a, contrast.level_b]}))
    difference = weights[1] - weights[0]
    structure, counts = facet_structure(frame, contrast.factor, (contrast.level_a, contrast.level_b))
    notes = [f"pilot: {frame.n_obs} scores"]
    options = {}
    fit = fit_frame(frame, resolved, "reml")
    variances = component_variances(fit)
    if resolved.binary:
        if resolved.name == "binomial":           # p(successes, trials): a cell's trials, not its rows
            counts[REPLICATE] = int(max(1, frame.binomial().trials.min()))
        plan_family, source = resolved.name, f"ML fit (Laplace) of the binary GLMM to the pilot ({frame.n_obs} scores)"
        options = {"link": resolved.link, "intercept": float(weights[0] @ fit.beta)}
        notes.append(f"{resolved.name} GLMM with {resolved.link} link: components and effect on the latent scale; "
                     f"power by simulating {'0/1 scores' if resolved.name == 'bernoulli' else 'binomial cells'} "
                     f"from the fit and refitting the GLMM")
    else:
        binary = frame.is_binary()
        plan_family = LINEAR_PROBABILITY if binary else GAUSSIAN
        source = f"REML fit of the pilot ({frame.n_obs} scores)"
        options = {"means": tuple(float(weights[k] @ fit.beta) for k in (0, 1))}
        if binary:
            notes.append("0/1 scores planned as a linear probability model (--family gaussian): closed form on the "
                         "score scale, residual from the Bernoulli variances of the two systems")
    notes += [resolved.note] if resolved.note else []
    if not fit.converged:
        notes.append(f"the pilot's fit did not converge: {fit.message}")
    if fit.boundary:
        notes.append(f"pilot components estimated at zero: {', '.join(fit.boundary)}")
    estimate = float(difference @ fit.beta)
    std_error = float(np.sqrt(difference @ fit.covariance @ difference))
    assumptions = Assumptions(structure=structure, variances=variances,
                              effect=estimate if effect is None else float(effect), counts=counts,
                              family=plan_family, source=source, notes=tuple(notes), **options)
    return Pilot(frame, fit, contrast, estimate, std_error, assumptions)


def facet_structure(frame: ModelFrame, factor: str | None = None, levels: tuple[str, ...] = ()):
    """The design structure of the frame's random intercepts and the pilot's count of each facet.

    Counts are taken on the compared levels' scores: a nested facet's count
    is its number of levels per level of its parent (the smallest), a crossed
    one's its number of levels; the replicates are the scores per cell of the
    compared factor and every grouping (the smallest count of the finest cells
    the grouped sums hold: exact for a balanced pilot).
    """
    groups = [(g.name, g.columns) for g in frame.groups]
    pilot = _GroupedPilot(frame, factor, levels)
    structure = build_structure(factor, levels, groups, pilot.nesting())
    counts = {}
    for facet in sorted(structure.facets, key=lambda f: pilot.own(f) is None):
        counts[facet] = pilot.count(facet, structure, counts)
    counts[REPLICATE] = pilot.replicates()
    return structure, counts


class _GroupedPilot:
    """What the grouped sums say about the facets: which levels occur in which fixed cell and with which others."""

    def __init__(self, frame: ModelFrame, factor: str | None, levels: tuple[str, ...]):
        self.frame, self.factor = frame, factor
        self.sums = frame.sums
        self.groups = {g.name: k for k, g in enumerate(frame.groups)}
        cells = frame.cells
        self.cell_level = cells[factor].astype(str).to_numpy() if factor else np.zeros(len(cells), dtype=object)
        self.compared = np.isin(self.cell_level, levels) if factor else np.ones(len(cells), dtype=bool)

    def replicates(self) -> int:
        """The fewest scores in a (compared cell, grouping level) or a pair of grouping levels of the compared cells."""
        fewest = [self.sums.cell_n[self.compared].min()]
        used = []
        for k, sums in enumerate(self.sums.factors):
            keep = self.compared[sums.cell]
            fewest.append(sums.n[keep].min())
            used.append(np.unique(sums.level[keep]))
        for (i, j), pairs in self.sums.pairs.items():
            keep = np.isin(pairs.first, used[i]) & np.isin(pairs.second, used[j])
            fewest.append(pairs.n[keep].min())
        return max(1, int(min(fewest)))

    def own(self, facet: str) -> int | None:
        """The index of the grouping (1|facet), if the formula has it."""
        return next((k for k, g in enumerate(self.frame.groups) if g.columns == (facet,)), None)

    def _cells_of(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(level, fixed cell) of every observed combination of grouping k with a compared cell."""
        sums = self.sums.factors[k]
        keep = self.compared[sums.cell]
        return sums.level[keep], sums.cell[keep]

    def _pairs(self, k: int, h: int) -> pd.DataFrame:
        first, second = (k, h) if k < h else (h, k)
        pairs = self.sums.pairs[(first, second)]
        table = pd.DataFrame({"a": pairs.first, "b": pairs.second})
        return table if k < h else table.rename(columns={"a": "b", "b": "a"})

    def nesting(self) -> dict[str, frozenset[str]]:
        """For each facet with a grouping of its own, the factors its levels determine (seeds unique to one system).

        A facet without a grouping of its own (``replication`` of
        ``(1|system:replication)``) is nested where the formula says so.
        """
        nested = {}
        for g in self.frame.groups:
            if len(g.columns) != 1 or g.columns[0] == self.factor:
                continue
            k = self.groups[g.name]
            parents = set()
            if self.factor:
                sums = self.sums.factors[k]
                table = pd.DataFrame({"a": sums.level, "b": self.cell_level[sums.cell]})
                if _determines(table):
                    parents.add(self.factor)
            for other in self.frame.groups:
                if other is g or len(other.columns) != 1 or other.columns[0] == self.factor:
                    continue
                if _determines(self._pairs(k, self.groups[other.name])):
                    parents.add(other.columns[0])
            nested[g.columns[0]] = frozenset(parents)
        return nested

    def count(self, facet: str, structure, known: dict[str, int]) -> int:
        own = self.own(facet)
        parents = structure.parents[facet]
        if own is not None:
            level, cell = self._cells_of(own)
            if not parents:
                return int(len(np.unique(level)))
            if parents == {self.factor}:
                table = pd.DataFrame({"a": level, "b": self.cell_level[cell]}).drop_duplicates()
                return int(table.groupby("b").size().min())
            if len(parents) == 1 and self.own(next(iter(parents))) is not None:
                table = self._pairs(own, self.own(next(iter(parents)))).drop_duplicates()
                return int(table.groupby("b").size().min())
        holders = [g for g in self.frame.groups if facet in g.columns]
        smallest = min(holders, key=lambda g: len(g.columns))
        others = structure.closure(smallest.columns) - {facet, self.factor}
        if any(c not in known for c in others):
            raise BayesreproError(
                f"cannot count the levels of '{facet}' from the formula's groupings; add (1|{facet}) to the formula")
        level, cell = self._cells_of(self.groups[smallest.name])
        per_level = structure.levels_of(smallest.columns, {**dict.fromkeys(structure.facets, 1), **known, facet: 1})
        if self.factor in structure.closure(smallest.columns):
            # levels of the grouping within each compared level (the smallest), then per level of the other columns
            table = pd.DataFrame({"a": level, "b": self.cell_level[cell]}).drop_duplicates()
            return max(1, int(table.groupby("b").size().min() * len(structure.levels) // per_level))
        return max(1, int(round(len(np.unique(level)) / per_level)))


def _determines(table: pd.DataFrame) -> bool:
    """Each level of a occurs with one level of b, and b is not just a relabelling of a."""
    pairs = table.drop_duplicates()
    one_parent = pairs["a"].is_unique
    return bool(one_parent and not pairs["b"].is_unique)
