"""Power by simulation: data sets drawn from the assumed model in each planned design, refitted and tested.

Each Gaussian data set is drawn as its sufficient statistics
(``statistics``), never as rows; the fixed Gram parts of a design are built
once per worker and the refit starts at the assumed relative SDs. Binary
scores are drawn as the binomial cells of the GLMM (``binary``). Replicate
r of design d draws from the generator seeded by (seed, d, r), so results do
not depend on how the replicates are shared among worker processes.
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
from .binary import binary_test, simulate_binary_chunk
from .closed_form import ContrastModel
from .planned_test import AUTO, check_test_name, resolve_test
from .refit import TESTS
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
    """A test by name (see ``planned_test.TESTS``) or any object with name, description and __call__(stats, start,
    strata)."""
    if isinstance(test, str):
        return check_test_name(test)
    if not (callable(test) and hasattr(test, "name") and hasattr(test, "description")):
        raise BayesreproError("a test must have a name, a description and be callable as test(stats, start, strata)")
    return test


def design_test(test, assumptions: Assumptions, counts: Mapping[str, int]):
    """The test object run in one design (``auto`` resolved by the design's counts)."""
    test = check_test(test)
    return TESTS[resolve_test(test, assumptions.structure, counts)] if isinstance(test, str) else test


def simulate_power(assumptions: Assumptions, designs: Sequence[Mapping[str, int]], simulations: int = 500,
                   alpha: float = 0.05, seed: int = 0, test=AUTO, workers: int | None = None) -> list[SimulatedPower]:
    """The rejection rate of ``test`` at ``alpha`` over ``simulations`` data sets in each design (counts per facet).

    Gaussian scores are drawn as sufficient statistics and refitted by REML
    (or ML for the LRT); binary scores as the cells of the binary GLMM
    (``binary``), refitted by ML.
    """
    designs = [assumptions.design(d) for d in designs]
    if assumptions.glmm:
        if not isinstance(test, str):
            raise BayesreproError("a test object applies to Gaussian scores; binary scores take wald or lrt")
        chunk = simulate_binary_chunk
        tests = [binary_test(check_test(test))] * len(designs)
    elif assumptions.family == GAUSSIAN:
        chunk = _simulate_chunk
        tests = [design_test(test, assumptions, counts) for counts in designs]
    else:
        raise BayesreproError(
            "0/1 scores planned as a linear probability model have a closed form only (--simulations 0); "
            "--family auto or bernoulli simulates them from the binary GLMM")
    tasks = [(assumptions, counts, test_, seed, index, first, min(first + CHUNK, simulations))
             for index, (counts, test_) in enumerate(zip(designs, tests)) for first in range(0, simulations, CHUNK)]
    workers = min(workers or os.cpu_count() or 1, len(tasks))
    if workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            results = list(pool.map(chunk, tasks))
    else:
        results = [chunk(task) for task in tasks]
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
    strata = ContrastModel(assumptions.structure).design_strata(counts)
    p_values = np.empty(last - first)
    not_converged = 0
    with numerical_work():
        for k, replicate in enumerate(range(first, last)):
            rng = np.random.default_rng([seed, index, replicate])
            outcome = test(simulator.draw(rng), start, strata)
            p_values[k] = outcome.p
            not_converged += not outcome.converged
    return p_values, not_converged
