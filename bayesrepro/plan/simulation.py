"""Power by simulation: data sets drawn from the assumed model in each planned design, refitted and tested.

Each data set is drawn as its sufficient statistics (``statistics``), never
as rows; the fixed Gram parts of a design are built once per worker and the
refit starts at the assumed relative SDs. Replicate r of design d draws from
the generator seeded by (seed, d, r), so results do not depend on how the
replicates are shared among worker processes.
"""

from __future__ import annotations

import os
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from ..errors import BayesreproError
from ..reliability import RESIDUAL
from ..runtime import numerical_work
from .assumptions import GAUSSIAN, Assumptions
from .refit import DEFAULT_TEST, TESTS
from .statistics import ResponseSimulator, planned_statistics

# Relative SDs below this start the optimiser here instead: its Newton search needs a start inside the bounds.
SMALLEST_START = 1e-2
CHUNK = 50  # replicates per task handed to a worker


@dataclass(frozen=True)
class SimulatedPower:
    p_values: np.ndarray
    alpha: float
    not_converged: int

    @property
    def simulations(self) -> int:
        return len(self.p_values)

    @property
    def power(self) -> float:
        return float(np.mean(self.p_values < self.alpha))

    @property
    def mc_se(self) -> float:
        """Binomial standard error of the rejection rate."""
        return float(np.sqrt(self.power * (1 - self.power) / self.simulations))


def check_test(test):
    """A test by name ('wald', 'lrt') or any object with name, description and __call__(stats, start)."""
    if isinstance(test, str):
        if test not in TESTS:
            raise BayesreproError(f"--test '{test}' is unknown; choose one of: {', '.join(TESTS)}")
        return TESTS[test]
    if not (callable(test) and hasattr(test, "name") and hasattr(test, "description")):
        raise BayesreproError("a test must have a name, a description and be callable as test(stats, start)")
    return test


def simulate_power(assumptions: Assumptions, designs: Sequence[Mapping[str, int]], simulations: int = 500,
                   alpha: float = 0.05, seed: int = 0, test=DEFAULT_TEST, workers: int | None = None) -> list[SimulatedPower]:
    """The rejection rate of ``test`` at ``alpha`` over ``simulations`` data sets in each design (counts per facet)."""
    if assumptions.family != GAUSSIAN:
        raise BayesreproError(
            f"simulation for the {assumptions.family} family needs its engine; use the closed form (--simulations 0)"
        )
    test = check_test(test)
    designs = [assumptions.design(d) for d in designs]
    tasks = [(assumptions, counts, test, seed, index, first, min(first + CHUNK, simulations))
             for index, counts in enumerate(designs) for first in range(0, simulations, CHUNK)]
    workers = min(workers or os.cpu_count() or 1, len(tasks))
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(_simulate_chunk, tasks))
    else:
        results = [_simulate_chunk(task) for task in tasks]
    out = []
    for index in range(len(designs)):
        parts = [r for task, r in zip(tasks, results) if task[4] == index]
        p_values = np.concatenate([p for p, _ in parts])
        out.append(SimulatedPower(p_values, alpha, sum(n for _, n in parts)))
    return out


def _simulate_chunk(task) -> tuple[np.ndarray, int]:
    assumptions, counts, test, seed, index, first, last = task
    variances = assumptions.model_variances()
    template = planned_statistics(assumptions.structure, counts)
    sd = {name: np.sqrt(variances[name]) for name in template.group_names}
    residual_sd = np.sqrt(variances[RESIDUAL])
    simulator = ResponseSimulator(template, sd, residual_sd, np.array([0.0, assumptions.effect]))
    start = np.maximum([sd[name] / residual_sd for name in template.group_names], SMALLEST_START)
    p_values = np.empty(last - first)
    not_converged = 0
    with numerical_work():
        for k, replicate in enumerate(range(first, last)):
            rng = np.random.default_rng([seed, index, replicate])
            outcome = test(simulator.draw(rng), start)
            p_values[k] = outcome.p
            not_converged += not outcome.converged
    return p_values, not_converged
