"""Figures of a plan: power curves per facet with their plateau, and the cost frontier.

As in ``bayesrepro.plots``, every function returns a ``matplotlib.figure.Figure``
built without pyplot (any backend, headless machines); ``fig.savefig`` writes it.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np

from .allocation import Allocation
from .assumptions import Assumptions
from .planned_test import AUTO, PlannedTest
from .power import PowerPlan

# The count standing in for "unlimited" when the plateau of a power curve is drawn.
UNLIMITED = 10**9


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


def power_curves(assumptions: Assumptions, facet: str, counts: Sequence[int], by: Mapping[str, Sequence[int]] | None = None,
                 alpha: float = 0.05, simulated: PowerPlan | None = None, test: str = AUTO, title: str | None = None):
    """Closed-form power of ``test`` against the count of ``facet``, one curve per setting of ``by`` (e.g. seeds per
    system).

    The dashed line of each colour is the power with unlimited levels of
    ``facet``: the plateau that more of this facet cannot pass while the other
    facets stay as they are. Simulated powers of ``simulated`` (a plan with the
    same assumptions) are drawn as points with ±2 Monte-Carlo SE. Binary
    scores modelled by the GLMM have no closed form: only their simulated
    points are drawn, joined by lines.
    """
    planned = PlannedTest(assumptions.structure)
    variances = assumptions.model_variances()
    grid = np.unique(np.geomspace(max(1, min(counts)), max(counts), 60).round().astype(int))
    settings = [{}]
    if by:
        (other, values), = by.items()
        settings = [{other: int(v)} for v in values]
    figure, ax = _figure(7.0, 4.2)
    for k, setting in enumerate(settings):
        colour = f"C{k}"
        label = ", ".join(f"{name} = {value}" for name, value in setting.items()) or "power"

        def power(n):
            return planned.power(assumptions.effect, assumptions.design({**setting, facet: int(n)}), variances, alpha,
                                 test)[0]

        if not assumptions.glmm:
            ax.plot(grid, [power(n) for n in grid], color=colour, label=label)
            plateau = power(UNLIMITED)
            ax.axhline(plateau, color=colour, ls="--", lw=0.8)
            ax.text(grid[0], plateau, f" limit with unlimited {facet}: {plateau:.2f}", color=colour, va="bottom",
                    fontsize=7)
        if simulated is not None:
            rows = [r for r in simulated.rows if all(r.get(name) == value for name, value in setting.items()) and facet in r]
            if rows and "mc_se" in rows[0] and any(r["mc_se"] > 0 for r in rows):
                ax.errorbar([r[facet] for r in rows], [r["power"] for r in rows], yerr=[2 * r["mc_se"] for r in rows],
                            fmt="o-" if assumptions.glmm else "o", color=colour, mfc="white", capsize=2,
                            label=label if assumptions.glmm else None)
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"{facet} ({'per ' + ' x '.join(sorted(assumptions.structure.parents[facet])) if assumptions.structure.parents.get(facet) else 'total'})")
    ax.set_ylabel(f"power at alpha = {alpha}")
    ax.axhline(0.8, color="grey", lw=0.6, ls=":")
    ax.legend(fontsize=7, loc="lower right")
    s = assumptions.structure
    source = "simulation of the binary GLMM" if assumptions.glmm else "closed form; points: simulation"
    ax.set_title(title or f"Power to detect {s.levels[1]} - {s.levels[0]} = {assumptions.effect:.3g} ({test} test, "
                          f"{source})", fontsize=9)
    return figure


def cost_frontier(allocation: Allocation, target: float | None = None, title: str | None = None):
    """The best power (or φ) reachable at each cost, with the chosen allocation marked."""
    points = allocation.frontier
    figure, ax = _figure(7.0, 4.2)
    if points:
        ax.step([p["cost"] for p in points], [p["value"] for p in points], where="post", color="C0", marker="o", ms=3,
                label="best design at each cost")
    if allocation.counts is not None:
        counts = ", ".join(f"{k} {v}" for k, v in allocation.counts.items() if not k.startswith("("))
        ax.plot([allocation.cost], [allocation.value], marker="*", ms=14, color="C3", ls="none",
                label=f"chosen: {counts} (cost {allocation.cost:.4g})")
    if target is not None:
        ax.axhline(target, color="grey", lw=0.8, ls="--", label=f"target {target}")
    ax.set_xscale("log")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("cost")
    ax.set_ylabel(allocation.criterion)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title or f"Cost frontier ({allocation.search.split(' (')[0].split(',')[0]})", fontsize=9)
    return figure
