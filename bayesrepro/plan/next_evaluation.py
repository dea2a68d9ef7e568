"""The planning section of ``compare`` and ``report``: these data as the pilot of the next evaluation.

The closest pair of levels of the compared factor (the smallest difference of
estimated means) is the comparison most in need of more data; its estimate is
taken as the true effect and the REML components as the truth. The object of
measurement (the test items) is scaled by 0.5 to 8 times the pilot's count,
and the first other facet with several levels (seeds, say) by 1, 2 and 4
times; each design gets the closed-form power of the test the package would
run on it (``plan_power``, test ``auto``). ``bayesrepro plan`` simulates it,
searches the cheapest allocation and averages over the posterior.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..errors import BayesreproError
from .pilot import Contrast, analyse_pilot
from .power import plan_power

PLANNED_SCALES = (0.5, 1, 2, 4, 8)   # the next evaluation's counts of the object, as multiples of the pilot's
FACET_SCALES = (1, 2, 4)
SLOPE_PLANNING_REASON = ("the closed-form power is written for random intercepts; a design with random slopes is "
                         "not planned here (bayesrepro plan gives the D-study of its phi)")


@dataclass
class NextEvaluation:
    contrast: Contrast | None
    estimate: float | None
    std_error: float | None
    table: pd.DataFrame | None          # counts, df, se, test, power per planned design
    reason: str | None = None           # why nothing is planned
    pilot: object = None                # the plan.Pilot, for figures

    def to_dict(self) -> dict:
        if self.table is None:
            return {"planned": False, "reason": self.reason}
        return {"planned": True, "contrast": self.contrast.text, "effect": self.estimate, "std_error": self.std_error,
                "method": "closed form of plan_power (test auto), these data as the pilot",
                "rows": self.table.to_dict(orient="records")}

    def __str__(self) -> str:
        if self.table is None:
            return f"Planning the next evaluation: not planned here ({self.reason})"
        c = self.contrast
        return "\n".join([
            f"Planning the next evaluation of the closest pair, {c.factor} {c.level_b} - {c.level_a} = "
            f"{self.estimate:.4g} (SE {self.std_error:.3g}) taken as true; closed-form power of the test the package "
            f"would run (bayesrepro plan simulates it and finds the cheapest allocation):",
            "  " + self.table.to_string(index=False, float_format=lambda v: f"{v:.4g}").replace("\n", "\n  "),
        ])


def next_evaluation(formula: str, data, factor: str, means: pd.DataFrame, object: str, binary: bool,
                    drop_missing: bool = False) -> NextEvaluation:
    """Power of the closest pair of ``factor``'s levels (``means``: one row per level, column ``estimate``)."""
    if binary:
        return NextEvaluation(None, None, None, None, "0/1 scores are planned by simulating the binary GLMM, "
                                                      "which takes minutes: run bayesrepro plan with --simulations N")
    estimates = means.set_index(factor)["estimate"]
    pairs = [(a, b) for i, a in enumerate(estimates.index) for b in estimates.index[i + 1:]]
    if not pairs:
        return NextEvaluation(None, None, None, None, f"'{factor}' has one level")
    a, b = min(pairs, key=lambda pair: abs(estimates[pair[1]] - estimates[pair[0]]))
    contrast = Contrast(factor, str(b), str(a))
    try:
        pilot = analyse_pilot(formula, data, contrast, family="gaussian", drop_missing=drop_missing)
    except BayesreproError as error:
        return NextEvaluation(contrast, None, None, None, str(error))
    assumptions = pilot.assumptions
    if object not in assumptions.structure.facets:
        object = max(assumptions.structure.facets, key=lambda f: assumptions.counts[f])
    pilot_items = assumptions.counts[object]
    vary = {object: sorted({max(2, round(k * pilot_items)) for k in PLANNED_SCALES})}
    facets = [f for f in assumptions.structure.facets if f != object and assumptions.counts.get(f, 1) > 1]
    if facets:
        vary[facets[0]] = sorted({k * assumptions.counts[facets[0]] for k in FACET_SCALES})
    table = plan_power(assumptions, vary, simulations=0).table()
    shown = table[[c for c in [*vary, "test", "df", "se", "power"] if c in table]]
    return NextEvaluation(contrast, pilot.estimate, pilot.std_error, shown, pilot=pilot)
