"""The D-study with costs: φ of the object's averaged score and the cost of each design, for the designs asked for.

``reliability.d_study`` gives Brennan's Φ when an object's score is averaged
over n levels of every other facet; a cost model (``allocation.CostModel``)
prices the same counts, so each row says what a gain in φ costs. Along a
chosen allocation, ``along_each_facet`` varies one allocated facet at a time
while the others keep their counts: the table shows which facet buys φ
cheapest from there.

With random slopes a term's variance is σ²_G = mean over the pilot's rows of
z'Σ_G z (``covariance_structure.rows_variance``), and the D-study divides it
by the counts as an intercept's. That is exact for this quantity: for a
covariate setting z drawn as the pilot's rows are, two scores of one object
at z, each averaged over n fresh levels of the other facets, have covariance
z'Σ_object z and variance z'Σ_object z + Σ_G z'Σ_G z / n_G; averaged over the
settings these are σ²_object and σ²_object + Σ_G σ²_G / n_G, whose ratio is Φ
(the pooled within-setting correlation: fixed effects of z cancel within a
setting).
"""

from __future__ import annotations

from typing import Mapping, Sequence

from ..reliability import d_study
from .allocation import CostModel
from .structure import REPLICATE, DesignStructure

STEPS = (1, 2, 3, 5, 10, 20, 50)
SLOPE_DEFINITION = ("with random slopes, a term's variance is the variance its effects add to one observation, "
                    "averaged over the pilot's rows: mean of z'Sigma z over the rows, z the term's model-matrix row "
                    "(Johnson 2014, Methods Ecol. Evol. 5:944); the D-study divides it by the counts as an "
                    "intercept's, so phi at n levels is the pooled within-setting correlation of two scores of an "
                    "object at the same covariate setting, each averaged over n fresh levels of the other facets, "
                    "settings weighted as the pilot's rows")


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
