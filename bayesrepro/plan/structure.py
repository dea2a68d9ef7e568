"""The structure of a planned evaluation: the compared factor, the facets, how they nest, the random terms.

A planned design is balanced: every combination of the compared factor's two
levels (A and B) and the facets' levels is scored ``replicates`` times. A
facet is *crossed* with the compared factor (the same test items are scored
for both systems) or *nested* in it (each system has its own seeds); a nested
facet's count is a count per level of its parent (``seed=5`` with seeds
nested in systems means five seeds for each system, ten trained models).

Each random term of the model varies over a set of factors, its *term*: the
columns of its grouping, closed under nesting (``(1|seed)`` with seeds nested
in systems varies over {system, seed}). A term containing the compared factor
differs between the two systems and adds to the variance of the contrast; a
term without it is shared by both and cancels.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import reduce
from typing import Mapping

import numpy as np

from ..errors import BayesreproError
from ..reliability import RESIDUAL

# The replicate scores of one cell: a pseudo-factor nested in every other, counted by ``replicates``.
REPLICATE = "(replicate)"
# Key of a cost per scored observation.
OBSERVATION = "observation"


@dataclass(frozen=True)
class RandomTerm:
    name: str                 # the formula's grouping ("system:replication") or "Residual"
    term: frozenset[str]      # factors it varies over, closed under nesting


@dataclass(frozen=True)
class DesignStructure:
    """What stays the same across planned sizes: factors, nesting, random terms."""

    factor: str | None                        # the compared fixed factor (None: a reliability design)
    levels: tuple[str, ...]                   # (A, B): the contrast is B − A
    facets: tuple[str, ...]                   # the other factors, formula order
    parents: Mapping[str, frozenset[str]]     # facet → the factors it is nested in
    terms: tuple[RandomTerm, ...]             # the formula's groupings, then the residual

    @property
    def factors(self) -> tuple[str, ...]:
        """Every factor in canonical order: the compared factor, the facets, the replicate."""
        return ((self.factor,) if self.factor else ()) + (*self.facets, REPLICATE)

    def closure(self, factors) -> frozenset[str]:
        """``factors`` with every factor they are nested in."""
        closed = set(factors)
        while True:
            grown = closed | {p for f in closed if f in self.parents for p in self.parents[f]}
            if grown == closed:
                return frozenset(closed)
            closed = grown

    def nested_facets(self) -> list[str]:
        return [f for f in self.facets if self.parents[f]]

    def check_counts(self, counts: Mapping[str, int], option: str = "counts") -> dict[str, int]:
        """Counts of every facet (and the replicate), validated."""
        unknown = sorted(set(counts) - set(self.facets) - {REPLICATE})
        if unknown:
            raise BayesreproError(f"{option}: '{unknown[0]}' is not a facet of the model; facets are: {', '.join(self.facets)}")
        missing = [f for f in self.facets if f not in counts]
        if missing:
            raise BayesreproError(f"{option}: no count for facet '{missing[0]}'")
        checked = {}
        for name in (*self.facets, REPLICATE):
            value = counts.get(name, 1)
            if int(value) != value or value < 1:
                raise BayesreproError(f"{option}: the count of '{name}' must be a whole number of at least 1, not {value}")
            checked[name] = int(value)
        return checked

    def sizes(self, counts: Mapping[str, int]) -> dict[str, int]:
        """Levels of each factor per level of its parents (the compared factor: its levels, 2 for a contrast)."""
        sizes = {self.factor: len(self.levels)} if self.factor else {}
        return {**sizes, **{f: int(counts[f]) for f in self.facets}, REPLICATE: int(counts.get(REPLICATE, 1))}

    def levels_of(self, term, counts: Mapping[str, int]) -> int:
        """Distinct levels of a set of factors in the whole design (nested ones counted within their parents)."""
        sizes = self.sizes(counts)
        return int(reduce(lambda a, f: a * sizes[f], self.closure(term), 1))

    def n_obs(self, counts: Mapping[str, int]) -> int:
        return self.levels_of(self.factors, counts)

    def untestable_facets(self, counts: Mapping[str, int]) -> list[str]:
        """Facets whose single level leaves Var(B − A) without degrees of freedom (one seed per system, say)."""
        return [f for f in self.facets if counts[f] == 1
                and any(self.factor in t.term and f in t.term for t in self.terms[:-1])]

    def describe_nesting(self) -> list[str]:
        """How each nested facet is counted, in words."""
        lines = []
        for facet in self.nested_facets():
            parents = " x ".join(sorted(self.parents[facet], key=self.factors.index))
            lines.append(f"{facet} is nested in {parents}: its count is the number of {facet} levels per {parents} level")
        return lines

    def to_dict(self) -> dict:
        return {
            "factor": self.factor,
            "levels": list(self.levels),
            "facets": [{"name": f, "nested_in": sorted(self.parents[f])} for f in self.facets],
            "terms": [{"name": t.name, "varies_over": sorted(t.term - {REPLICATE})} for t in self.terms],
        }


def build_structure(factor: str | None, levels: tuple[str, ...], groups: list[tuple[str, tuple[str, ...]]],
                    nested_by_data: Mapping[str, frozenset[str]]) -> DesignStructure:
    """The structure of a model with random intercepts ``groups`` (name, columns) comparing ``levels`` of ``factor``.

    A facet is nested in the compared factor when every grouping that holds
    it holds the compared factor too (``(1|system:replication)``) or when its
    labels never occur with two levels of it; ``nested_by_data`` gives, for
    each facet, the other factors whose levels its labels determine.
    """
    facets: list[str] = []
    for _, columns in groups:
        facets += [c for c in columns if c != factor and c not in facets]
    for name, columns in groups:
        if columns == (factor,):
            raise BayesreproError(
                f"(1|{factor}) makes the compared factor random; a contrast of its levels needs it as a fixed effect only"
            )
    parents = {}
    for facet in facets:
        holders = [columns for _, columns in groups if facet in columns]
        found = set(nested_by_data.get(facet, frozenset())) & (set(facets) | ({factor} if factor else set()))
        if factor and all(factor in columns for columns in holders):
            found.add(factor)
        parents[facet] = frozenset(found - {facet})
    structure = DesignStructure(factor, levels, tuple(facets), parents, ())
    terms = [RandomTerm(name, structure.closure(columns)) for name, columns in groups]
    terms.append(RandomTerm(RESIDUAL, frozenset(structure.factors)))
    return DesignStructure(factor, levels, tuple(facets), parents, tuple(terms))


def term_digits(structure: DesignStructure, term: frozenset[str], counts: Mapping[str, int]) -> dict[str, np.ndarray]:
    """For every level of ``term`` (mixed-radix order over the canonical factors), its index in each factor."""
    sizes = structure.sizes(counts)
    ordered = [f for f in structure.factors if f in term]
    grids = np.indices([sizes[f] for f in ordered]).reshape(len(ordered), -1) if ordered else np.zeros((0, 1), int)
    return {f: grids[k] for k, f in enumerate(ordered)}
