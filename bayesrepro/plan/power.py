"""Power of the test of the contrast for each planned size: closed form, and simulation where asked."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import pandas as pd

from ..errors import BayesreproError
from .assumptions import LINEAR_PROBABILITY, Assumptions
from .binary import binary_test, latent_residual_note
from .planned_test import AUTO, LRT, PlannedTest, carried_by_few_levels, check_test_name, resolve_test
from .refit import TESTS
from .simulation import simulate_power
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
               seed: int = 0, test: str = AUTO, workers: int | None = None) -> PowerPlan:
    """Power at every combination of the counts in ``vary`` (e.g. ``{"item": [100, 400], "seed": [3, 10]}``).

    Facets not varied keep the assumptions' counts. ``test`` is the test
    whose power is planned (``planned_test``: wald, kenward-roger, lrt, or
    auto, which takes Kenward–Roger where fewer than 50 levels carry the
    contrast, as ``glrt`` does); each row names the one it used. Each row
    holds the closed form of that test's power on the balanced design, the
    boundary of the components included (``power_closed_form``; for the LRT,
    its Wald counterpart) and its actual level under no effect (``size``),
    and with ``simulations`` > 0 the simulated rejection rate (``power``,
    ``mc_se``). Without simulations ``power`` is the closed form. Binary
    scores modelled by the GLMM have no closed form: they are simulated
    (``binary``).
    """
    check_alpha(alpha)
    check_test_name(test)
    if int(simulations) != simulations or simulations < 0:
        raise BayesreproError(f"--simulations must be a whole number of at least 0, not {simulations}")
    structure = assumptions.structure
    designs = [assumptions.design(d) for d in design_grid(vary)]
    for counts in designs:
        facets = structure.untestable_facets(counts)
        if facets:
            where = f"--vary {facets[0]}=1" if facets[0] in vary else \
                f"the pilot's count of {facets[0]} (1, used where --vary does not set it)"
            raise BayesreproError(
                f"{where}: with one level of {facets[0]} the variance of {structure.factor} "
                f"{structure.levels[1]} - {structure.levels[0]} has no degrees of freedom and no test exists; "
                f"plan at least 2 with --vary {facets[0]}=N")
    rows = []
    for counts in designs:
        row = {name: counts[name] for name in vary}
        if counts[REPLICATE] > 1 and REPLICATE not in vary:
            row["replicates"] = counts[REPLICATE]
        row["observations"] = structure.n_obs(counts)
        rows.append(row)
    notes = [f"{name} not varied: {count}" for name, count in designs[0].items()
             if name not in vary and name != REPLICATE] if designs else []
    if assumptions.glmm:
        method = _binary_rows(assumptions, designs, rows, notes, simulations, alpha, seed, test)
    else:
        method = _closed_form_rows(assumptions, designs, rows, notes, alpha, test)
        if simulations:
            method = (f"simulation: {simulations} data sets per design drawn from the assumed model as sufficient "
                      f"statistics (no rows), each refitted with the package's engine from the assumed components and "
                      f"tested; alpha {alpha}, seed {seed}. Alongside, the {method}")
    if simulations:
        simulated = simulate_power(assumptions, designs, simulations, alpha, seed, test, workers)
        for row, result in zip(rows, simulated):
            row.update(power=result.power, mc_se=result.mc_se, not_converged=result.not_converged)
    else:
        for row in rows:
            row.update(power=row["power_closed_form"], mc_se=0.0)
    return PowerPlan(assumptions, alpha, rows, method, notes)


def _closed_form_rows(assumptions, designs, rows, notes, alpha, test) -> str:
    """The closed-form columns of every row; returns the description of the method."""
    structure = assumptions.structure
    planned = PlannedTest(structure)
    variances = assumptions.model_variances()
    null_variances = assumptions.model_variances(effect=0.0)
    approximate = False
    for counts, row in zip(designs, rows):
        name = resolve_test(test, structure, counts)
        precision = planned.precision(counts, variances)
        power, exact = planned.power(assumptions.effect, counts, variances, alpha, name)
        size, _ = planned.power(0.0, counts, null_variances, alpha, name)
        approximate |= not exact
        row.update(test=name, se=precision.se, df=precision.df, power_closed_form=power, size=size)
    if approximate:
        notes.append("a smaller model of this design is not saturated: its closed form is the noncentral t with "
                     "Satterthwaite's df, which ignores components estimated at zero")
    used = sorted({row["test"] for row in rows})
    method = ("closed form (balanced design): Var(B - A) from the variance components, the power of "
              f"{' / '.join(TESTS[name].description for name in used)} integrated over the exact distribution of "
              "the REML components, those estimated at zero included; size: its level under no effect")
    if LRT in used:
        method += " (the LRT's closed form is that of the Wald z test, its large-sample equivalent)"
    if test == AUTO:
        method += "; test auto: Kenward-Roger where fewer than 50 levels carry the contrast (as glrt), else Wald z"
    if assumptions.family == LINEAR_PROBABILITY:
        method += ("; 0/1 scores as a linear probability model: residual from the Bernoulli variances of the two "
                   "systems (Miller 2024 for items x two systems)")
    return method


def _binary_rows(assumptions, designs, rows, notes, simulations, alpha, seed, test) -> str:
    """The columns of binary scores (simulation only); returns the description of the method."""
    if not simulations:
        raise BayesreproError(
            "--simulations 0: binary scores modelled by the GLMM have no closed form; simulate them (--simulations N), "
            "or plan them in closed form as a linear probability model with --family gaussian")
    chosen = binary_test(test)
    for row in rows:
        row["test"] = chosen.name
    notes.append(latent_residual_note(assumptions))
    if any(carried_by_few_levels(assumptions.structure, counts) for counts in designs):
        notes.append("fewer than 50 levels carry the contrast: the normal or chi2 reference of the binary test "
                     "rejects more often than alpha there (glrt calibrates it by the bootstrap); these powers are "
                     "those of the uncalibrated test")
    return (f"simulation: {simulations} sets of binomial cells per design ({assumptions.counts[REPLICATE]} "
            f"trial(s) per cell) drawn from the {assumptions.family} GLMM with {assumptions.link} link, each refitted "
            f"by ML; {chosen.description}; alpha {alpha}, seed {seed}")


def check_alpha(alpha: float) -> float:
    if not 0 < alpha < 1:
        raise BayesreproError(f"--alpha must lie strictly between 0 and 1, not {alpha}")
    return alpha
