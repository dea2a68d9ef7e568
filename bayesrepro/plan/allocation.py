"""The cheapest allocation of items, seeds and other facets that reaches a target, or the best one within a budget.

Costs are linear in the numbers of levels: a cost per level of a facet
(``item=1``: one test item), per combination of several factors
(``system:seed=200``: one trained model per system and seed) or per scored
observation (``observation=0.01``). A nested facet's levels are counted
within their parents (five seeds per system in two systems are ten levels).

The criterion is the closed-form power of the planned test of the contrast
(``planned_test``; a design that leaves no test, one seed per system, is
passed over) or the D-study's φ (Brennan's absolute coefficient); above the
test's level both grow with every count, and so does the cost. The search
fixes the facet with the most levels (the items, usually) last: for every
combination of the other allocated facets' counts it finds by bisection the
smallest count of that facet reaching the target (or the largest within the
budget), which is exact because both sides are monotone there; for a
target, combinations whose cheapest design already costs more than the best
found are not evaluated. Where the other facets' combinations exceed
``EXHAUSTIVE_LIMIT``, a greedy ascent adds levels to the facet with the best
gain per unit cost, then a local search moves single levels between facets
while that lowers the cost (or raises the criterion); that answer is good but
not guaranteed optimal, and the result says which search was used.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Callable, Mapping

import numpy as np

from ..errors import BayesreproError
from ..reliability import d_study
from .assumptions import Assumptions
from .planned_test import AUTO, PlannedTest
from .structure import OBSERVATION, REPLICATE, DesignStructure

EXHAUSTIVE_LIMIT = 20_000
DEFAULT_MAX_WIDEST = 1_000_000
DEFAULT_MAX = 50
FRONTIER_BUDGETS = 20
FRONTIER_EXHAUSTIVE_LIMIT = 200  # combinations searched exactly at each budget of the frontier


@dataclass(frozen=True)
class CostModel:
    """Σ_k c_k × (levels of the factors in key k), plus a cost per scored observation."""

    costs: Mapping[str, float]   # key: a facet, 'a:b' for combinations, or 'observation'

    def cost(self, structure: DesignStructure, counts: Mapping[str, int]) -> float:
        total = 0.0
        for key, unit in self.costs.items():
            if key == OBSERVATION:
                total += unit * structure.n_obs(counts)
            else:
                total += unit * structure.levels_of(key.split(":"), counts)
        return total

    def facets(self, structure: DesignStructure) -> list[str]:
        named = {part for key in self.costs if key != OBSERVATION for part in key.split(":")}
        return [f for f in structure.facets if f in named]


def parse_costs(text: str, structure: DesignStructure) -> CostModel:
    """``"item=1,seed=200,system:seed=5,observation=0.01"``, every name checked against the design."""
    known = set(structure.facets) | ({structure.factor} if structure.factor else set())
    costs = {}
    for part in str(text).split(","):
        key, sep, value = part.partition("=")
        key = key.strip()
        if not sep or not key:
            raise BayesreproError(f"--cost '{part.strip()}' needs the form FACET=COST, e.g. item=1,seed=200")
        try:
            unit = float(value)
        except ValueError:
            raise BayesreproError(f"--cost {key}={value.strip()}: the cost must be a number") from None
        if not math.isfinite(unit) or unit < 0:
            raise BayesreproError(f"--cost {key}: the cost must be a finite number of at least 0, not {value.strip()}")
        if key != OBSERVATION:
            unknown = [p for p in key.split(":") if p not in known]
            if unknown:
                raise BayesreproError(
                    f"--cost: '{unknown[0]}' is not a facet of the model; facets are: {', '.join(structure.facets)}"
                    f" (or '{OBSERVATION}' for a cost per score)"
                )
        if key in costs:
            raise BayesreproError(f"--cost names '{key}' twice")
        costs[key] = unit
    return CostModel(costs)


@dataclass(frozen=True)
class Criterion:
    name: str                                  # "power" or "phi"
    evaluate: Callable[[Mapping[str, int]], float]
    excluded: frozenset[str] = frozenset()     # facets it does not depend on (φ: the object of measurement)


def power_criterion(assumptions: Assumptions, alpha: float, test: str = AUTO) -> Criterion:
    """The closed-form power of ``test`` (``planned_test``); −∞ for a design that leaves no test (one seed per
    system), so the search passes over it."""
    planned = PlannedTest(assumptions.structure)
    variances = assumptions.model_variances()
    structure = assumptions.structure

    def power(counts):
        if structure.untestable_facets(counts):
            return -math.inf
        value, _ = planned.power(assumptions.effect, counts, variances, alpha, test)
        if not np.isfinite(value):
            raise BayesreproError(f"the power at {dict(counts)} is not a number; this is a bug")
        return value

    return Criterion("power", power)


def phi_criterion(variances: Mapping[str, float], object: str, structure: DesignStructure) -> Criterion:
    """Brennan's Φ of an object's score averaged over the counts of the other facets (``reliability.d_study``)."""
    facets = [f for f in structure.facets if f != object]
    return Criterion("phi", lambda counts: float(d_study(variances, object, {f: counts[f] for f in facets})["phi"]),
                     frozenset({object}))


@dataclass
class Allocation:
    counts: dict[str, int] | None     # None when no allocation reaches the target
    cost: float | None
    value: float | None               # the criterion at ``counts``
    criterion: str
    goal: str                         # "target 0.8" / "budget 5000"
    search: str
    allocated: list[str]
    frontier: list[dict] = field(default_factory=list)   # cheapest designs for a range of budgets
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"counts": self.counts, "cost": self.cost, self.criterion: self.value, "criterion": self.criterion,
                "goal": self.goal, "search": self.search, "allocated": self.allocated, "frontier": self.frontier,
                "notes": self.notes}

    def __str__(self) -> str:
        if self.counts is None:
            head = f"no allocation of {', '.join(self.allocated)} within the bounds reaches the {self.goal}"
        else:
            counts = ", ".join(f"{k} = {v}" for k, v in self.counts.items() if k != REPLICATE)
            head = f"{self.goal}: {counts}; cost {self.cost:.6g}; {self.criterion} {self.value:.4f}"
        return "\n".join([head, f"search: {self.search}"] + [f"note: {n}" for n in self.notes])


def allocate(structure: DesignStructure, defaults: Mapping[str, int], costs: CostModel, criterion: Criterion, *,
             target: float | None = None, budget: float | None = None, fixed: Mapping[str, int] | None = None,
             maximum: Mapping[str, int] | None = None, frontier: bool = True) -> Allocation:
    """The cheapest counts reaching ``target`` of the criterion, or the best criterion with cost ≤ ``budget``."""
    if (target is None) == (budget is None):
        raise BayesreproError("give either a target (--target-power / --target-phi) or --budget, not both")
    if target is not None and not 0 < target < 1:
        raise BayesreproError(f"the target must lie strictly between 0 and 1, not {target}")
    if budget is not None and not budget > 0:
        raise BayesreproError(f"--budget must be positive, not {budget}")
    fixed = dict(fixed or {})
    allocated = [f for f in costs.facets(structure) if f not in fixed and f not in criterion.excluded]
    if not allocated:
        raise BayesreproError("--cost names no facet left to allocate (facets fixed by --vary or not priced)")
    base = structure.check_counts({**defaults, **fixed})
    bounds = _bounds(allocated, base, maximum or {})
    widest = max(allocated, key=lambda f: (bounds[f][1], base[f]))
    others = [f for f in allocated if f != widest]
    search = _Search(structure, base, costs, criterion, widest, others, bounds)
    space = search.space
    if space <= EXHAUSTIVE_LIMIT:
        method = (f"exhaustive over {space} combination(s) of {', '.join(others) or 'no other facet'}, "
                  f"bisection on {widest} (exact: criterion and cost grow with every count)")
        best = search.exhaustive(target, budget)
    else:
        method = (f"greedy ascent by gain per cost, then local moves of single levels ({space:.3g} combinations are "
                  f"too many to try; lower --max to search exactly): not guaranteed optimal")
        best = search.greedy(target, budget)
    goal = f"target {criterion.name} {target}" if target is not None else f"budget {budget:g}"
    result = Allocation(None, None, None, criterion.name, goal, method, allocated)
    if best is not None:
        result.cost, result.value, result.counts = best[0], best[1], dict(best[2])
    if frontier:
        result.frontier = search.frontier(result.cost or budget)
    hit = [f for f in allocated if result.counts and result.counts[f] == bounds[f][1]]
    if hit:
        result.notes.append(f"{', '.join(hit)} at the upper bound of the search; raise it with --max")
    return result


def _bounds(allocated, base, maximum) -> dict[str, tuple[int, int]]:
    for name, value in maximum.items():
        if name not in base or name == REPLICATE:
            raise BayesreproError(f"--max: '{name}' is not a facet of the model")
        if int(value) != value or value < 1:
            raise BayesreproError(f"--max {name}: the bound must be a whole number of at least 1, not {value}")
    widest = max(allocated, key=lambda f: base[f])
    return {f: (1, int(maximum.get(f, DEFAULT_MAX_WIDEST if f == widest else DEFAULT_MAX))) for f in allocated}


class _Search:
    def __init__(self, structure, base, costs, criterion, widest, others, bounds):
        self.structure, self.base, self.costs, self.criterion = structure, base, costs, criterion
        self.widest, self.others, self.bounds = widest, others, bounds
        self.space = math.prod(bounds[f][1] - bounds[f][0] + 1 for f in others)

    def combinations(self):
        """Every combination of the other facets' counts, generated one at a time (the space can be huge)."""
        ranges = (range(self.bounds[f][0], self.bounds[f][1] + 1) for f in self.others)
        return (dict(zip(self.others, values)) for values in itertools.product(*ranges))

    def design(self, combination, n) -> dict:
        return {**self.base, **combination, self.widest: int(n)}

    def cost(self, counts) -> float:
        return self.costs.cost(self.structure, counts)

    def exhaustive(self, target, budget):
        best = None
        for combination in self.combinations():
            found = self._complete(combination, target, budget, None if best is None else best[0])
            if found is not None and (best is None or _better(found, best, target is not None)):
                best = found
        return best

    def _complete(self, combination, target, budget, ceiling=None):
        """(cost, value, counts) with the widest facet's count chosen by bisection, or None.

        For a target, designs dearer than ``ceiling`` (the cheapest found so
        far) cannot win and are not evaluated: cost grows with the count.
        """
        low, high = self.bounds[self.widest]
        if target is not None:
            if ceiling is not None:
                if self.cost(self.design(combination, low)) > ceiling + 1e-9:
                    return None
                high = _first_true(low, high, lambda m: self.cost(self.design(combination, m)) > ceiling + 1e-9) - 1
            if self.criterion.evaluate(self.design(combination, high)) < target:
                return None
            n = _first_true(low, high, lambda m: self.criterion.evaluate(self.design(combination, m)) >= target)
        else:
            if self.cost(self.design(combination, low)) > budget:
                return None
            n = _first_true(low, high, lambda m: self.cost(self.design(combination, m)) > budget) - 1
        counts = self.design(combination, n)
        return self.cost(counts), self.criterion.evaluate(counts), counts

    def greedy(self, target, budget):
        facets = [*self.others, self.widest]
        counts = {**self.base, **{f: self.bounds[f][0] for f in facets}}
        value, cost = self.criterion.evaluate(counts), self.cost(counts)
        if budget is not None and cost > budget:
            return None
        while target is None or value < target:
            step = None
            for f in facets:
                trial = {**counts, f: min(counts[f] + max(1, counts[f] // 20), self.bounds[f][1])}
                if trial[f] == counts[f]:
                    continue
                trial_cost, trial_value = self.cost(trial), self.criterion.evaluate(trial)
                if budget is not None and trial_cost > budget:
                    continue
                gain = (trial_value - value) / max(trial_cost - cost, 1e-12)
                if step is None or gain > step[0]:
                    step = (gain, trial, trial_cost, trial_value)
            if step is None:
                break
            _, counts, cost, value = step
        if target is not None and value < target:
            return None
        return self._polish(counts, target, budget, facets)

    def _polish(self, counts, target, budget, facets):
        """Single-level moves between facets while they lower the cost at the target (or raise the criterion)."""
        best = (self.cost(counts), self.criterion.evaluate(counts), counts)
        improved = True
        while improved:
            improved = False
            for down, up in itertools.permutations(facets + [None], 2):
                trial = dict(best[2])
                if down is not None:
                    trial[down] -= 1
                if up is not None:
                    trial[up] += 1
                if any(not self.bounds[f][0] <= trial[f] <= self.bounds[f][1] for f in facets):
                    continue
                candidate = (self.cost(trial), self.criterion.evaluate(trial), trial)
                feasible = candidate[1] >= target if target is not None else candidate[0] <= budget
                if feasible and _better(candidate, best, target is not None):
                    best, improved = candidate, True
        return best

    def frontier(self, scale):
        """The best criterion for budgets from the cheapest design to twice ``scale`` (the Pareto frontier)."""
        lowest = self.cost({**self.base, **{f: self.bounds[f][0] for f in [*self.others, self.widest]}})
        top = 2.0 * scale if scale else 100.0 * max(lowest, 1.0)
        points = []
        for budget in np.geomspace(max(lowest, 1e-9), max(top, lowest * 1.01), FRONTIER_BUDGETS):
            found = self.exhaustive(None, budget) if self.space <= FRONTIER_EXHAUSTIVE_LIMIT else self.greedy(None, budget)
            if found is not None and (not points or found[1] > points[-1]["value"]):
                points.append({"cost": found[0], "value": found[1], "counts": {k: v for k, v in found[2].items() if k != REPLICATE}})
        return points


def _better(candidate, best, minimise_cost: bool) -> bool:
    cost, value = candidate[0], candidate[1]
    if minimise_cost:
        return cost < best[0] - 1e-9 or (abs(cost - best[0]) <= 1e-9 and value > best[1])
    return value > best[1] + 1e-12 or (abs(value - best[1]) <= 1e-12 and cost < best[0])


def _first_true(low: int, high: int, predicate) -> int:
    """The smallest n in [low, high] with predicate(n), for a predicate that stays true once true (high + 1 if none)."""
    if predicate(low):
        return low
    if not predicate(high):
        return high + 1
    while high - low > 1:
        middle = (low + high) // 2
        if predicate(middle):
            high = middle
        else:
            low = middle
    return high
