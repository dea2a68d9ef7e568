"""The D-study with costs: φ of the object's averaged score and the cost of each design, for the designs asked for.

``reliability.d_study`` gives Brennan's Φ when an object's score is averaged
over n levels of every other facet; a cost model (``allocation.CostModel``)
prices the same counts, so each row says what a gain in φ costs. Along a
chosen allocation, ``along_each_facet`` varies one allocated facet at a time
while the others keep their counts: the table shows which facet buys φ
cheapest from there.
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..reliability import d_study
from .allocation import CostModel
from .structure import REPLICATE, DesignStructure

STEPS = (1, 2, 3, 5, 10, 20, 50)


def d_study_rows(variances: Mapping[str, float], object: str, structure: DesignStructure,
                 designs: Sequence[Mapping[str, int]], costs: CostModel | None = None) -> list[dict]:
    """One row per design: the counts of the facets other than the object, Φ, Eρ² and (with ``costs``) the cost."""
    facets = [f for f in structure.facets if f != object]
    rows = []
    for counts in designs:
        result = d_study(variances, object, {f: counts[f] for f in facets})
        row = {f: int(counts[f]) for f in facets}
        row.update(phi=float(result["phi"]), e_rho2=float(result["e_rho2"]))
        if costs is not None:
            row["cost"] = costs.cost(structure, {**counts, REPLICATE: counts.get(REPLICATE, 1)})
        rows.append(row)
    return rows


def along_each_facet(counts: Mapping[str, int], facets: Sequence[str], maximum: Mapping[str, int]) -> list[dict]:
    """Designs that change one of ``facets`` over ``STEPS`` (and its count in ``counts``), the others held."""
    designs = []
    for facet in facets:
        values = sorted({*[v for v in STEPS if v <= maximum.get(facet, max(STEPS))], int(counts[facet])})
        designs += [{**counts, facet: value} for value in values]
    return designs
