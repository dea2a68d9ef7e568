"""Power of the test of the contrast for each planned size: closed form, and simulation where asked."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from ..errors import BayesreproError
from .assumptions import GAUSSIAN, Assumptions
from .closed_form import NORMAL_REFERENCE, T_REFERENCE, ContrastModel, rejection_probability
from .refit import DEFAULT_TEST
from .simulation import check_test, simulate_power
from .structure import REPLICATE


@dataclass
class PowerPlan:
    """One row per planned design: counts, the contrast's SE and df, power by simulation and in closed form."""

    assumptions: Assumptions
    alpha: float
    rows: list[dict]
    method: str
    notes: list[str] = field(default_factory=list)

    def table(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows)

    def to_dict(self) -> dict:
        a = self.assumptions
        return {
            "assumed": {
                "components": a.components(),
                "effect": a.effect,
                "family": a.family,
                "contrast": f"{a.structure.factor}={a.structure.levels[1]} - {a.structure.levels[0]}",
                "alpha": self.alpha,
                "source": a.source,
                "structure": a.structure.to_dict(),
                "nesting": a.structure.describe_nesting(),
            },
            "rows": self.rows,
            "method": self.method,
            "notes": list(a.notes) + self.notes,
        }

    def __str__(self) -> str:
        a = self.assumptions
        s = a.structure
        lines = [f"Power of the test of {s.factor} = {s.levels[1]} - {s.levels[0]} (effect {a.effect:.4g}, "
                 f"alpha {self.alpha}); components from the {a.source}:"]
        lines += [f"  {c['name']}: {c['variance']:.6g}" for c in a.components()]
        lines += [f"  {line}" for line in s.describe_nesting()]
        shown = self.table().drop(columns=["observations"], errors="ignore")
        lines += ["", shown.to_string(index=False, float_format=lambda v: f"{v:.4g}"), "", self.method]
        lines += [f"note: {note}" for note in list(a.notes) + self.notes]
        return "\n".join(lines)


def design_grid(vary: Mapping[str, Sequence[int]]) -> list[dict[str, int]]:
    """Every combination of the varied counts, in the order given."""
    names = list(vary)
    return [dict(zip(names, values)) for values in itertools.product(*(vary[n] for n in names))]


def plan_power(assumptions: Assumptions, vary: Mapping[str, Sequence[int]], simulations: int = 500, alpha: float = 0.05,
               seed: int = 0, test=DEFAULT_TEST, workers: int | None = None) -> PowerPlan:
    """Power at every combination of the counts in ``vary`` (e.g. ``{"item": [100, 400], "seed": [3, 10]}``).

    Facets not varied keep the assumptions' counts. Each row holds the
    closed-form power of the t test with the design's Satterthwaite df
    (``power_t``), the closed form of the simulated test's reference
    (``power_closed_form``; for the normal-reference Wald and χ² tests,
    P(|T_ν| > z) with its actual size under no effect in ``size``), and with
    ``simulations`` > 0 the simulated rejection rate (``power``, ``mc_se``).
    Without simulations ``power`` is the t test's closed form.
    """
    check_alpha(alpha)
    test = check_test(test)
    if int(simulations) != simulations or simulations < 0:
        raise BayesreproError(f"--simulations must be a whole number of at least 0, not {simulations}")
    designs = [assumptions.design(d) for d in design_grid(vary)]
    model = ContrastModel(assumptions.structure)
    variances = assumptions.model_variances()
    null_variances = assumptions.model_variances(effect=0.0)
    rows = []
    for counts in designs:
        precision = model.precision(counts, variances)
        null_precision = model.precision(counts, null_variances)
        row = {name: counts[name] for name in vary}
        if counts[REPLICATE] > 1 and REPLICATE not in vary:
            row["replicates"] = counts[REPLICATE]
        row["observations"] = assumptions.structure.n_obs(counts)
        row["se"] = precision.se
        row["df"] = precision.df
        row["power_t"] = rejection_probability(assumptions.effect, precision, alpha, T_REFERENCE)
        row["power_closed_form"] = rejection_probability(assumptions.effect, precision, alpha, NORMAL_REFERENCE)
        row["size"] = rejection_probability(0.0, null_precision, alpha, NORMAL_REFERENCE)
        rows.append(row)
    notes = [f"{name} not varied: {count}" for name, count in designs[0].items()
             if name not in vary and name != REPLICATE] if designs else []
    if any(row["df"] == 0 for row in rows):
        notes.append("df 0: a component of the contrast's variance has no level to be estimated from "
                     "(one level per system of a nested facet); power is undefined there")
    if simulations:
        simulated = simulate_power(assumptions, designs, simulations, alpha, seed, test, workers)
        for row, result in zip(rows, simulated):
            row["power"] = result.power
            row["mc_se"] = result.mc_se
            row["not_converged"] = result.not_converged
        method = (f"simulation: {simulations} data sets per design drawn from the assumed model as sufficient statistics "
                  f"(no rows), each refitted with the package's engine from the assumed components; "
                  f"{test.description}, alpha {alpha}, seed {seed}. Closed form alongside (balanced design): "
                  f"power_t for the t test with Satterthwaite's df, power_closed_form for the simulated test's "
                  f"normal reference, size its actual level under no effect")
    else:
        for row in rows:
            row["power"] = row["power_t"]
            row["mc_se"] = 0.0
        method = ("closed form (balanced design): Var(B - A) from the variance components, t reference with "
                  "Satterthwaite's df of the design (power_t = power); power_closed_form and size for the "
                  "normal-reference Wald test the package prints")
    if assumptions.family != GAUSSIAN:
        method += ("; binomial family: 0/1 scores on the score scale, residual from the Bernoulli variances "
                   "of the two systems (Miller 2024 for items x two systems)")
    return PowerPlan(assumptions, alpha, rows, method, notes)


def check_alpha(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise BayesreproError(f"--alpha must lie strictly between 0 and 1, not {alpha}")
    return alpha
