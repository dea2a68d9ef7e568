"""Calibration: 90 % intervals of the level effects against the simulated effects.

A leaderboard: 12 systems crossed with 80 items, one score per pair; system effects N(0, 0.5²), item effects
N(0, 1²), drawn afresh for every dataset. Two families, each through its fast path: Gaussian scores (residual SD
0.8; the items' effects integrated out and drawn afterwards from their exact conditional) and 0/1 scores (logit
link; the items integrated out numerically and drawn from their exact conditional, the systems sampled). Every
dataset is fitted with the default priors; ``Posterior.level_effects(prob=0.9)`` gives the intervals, and the
share of the true effects inside them is reported per family and factor (12 × datasets system effects and
80 × datasets item effects each). The study writes ``studies/results/level_effect_calibration.json``, which
``tests/test_studies.py`` checks for freshness and against the nominal rate:

    python studies/level_effect_calibration.py [--datasets 100] [--processes 2]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the checkout's bayesrepro and studies

from studies.record import write_record  # noqa: E402

SYSTEMS, ITEMS = 12, 80
SD = {"system": 0.5, "item": 1.0, "Residual": 0.8}
FORMULAS = {"gaussian": "score ~ 1 + (1|system) + (1|item)", "binary": "correct ~ 1 + (1|system) + (1|item)"}
# what the figures depend on: the study, the Bayesian engine and the model frames it samples
SOURCES = ["studies/level_effect_calibration.py", "bayesrepro/bayes/*.py", "bayesrepro/design/*.py",
           "bayesrepro/api/posterior.py"]


def simulate(rng) -> tuple[pd.DataFrame, dict]:
    effects = {"system": rng.normal(0, SD["system"], SYSTEMS), "item": rng.normal(0, SD["item"], ITEMS)}
    system, item = np.repeat(np.arange(SYSTEMS), ITEMS), np.tile(np.arange(ITEMS), SYSTEMS)
    eta = effects["system"][system] + effects["item"][item]
    data = pd.DataFrame({"system": [f"s{k:02d}" for k in system], "item": [f"i{k:03d}" for k in item]})
    data["score"] = eta + rng.normal(0, SD["Residual"], len(data))
    data["correct"] = (rng.random(len(data)) < 1 / (1 + np.exp(-eta))).astype(int)
    truth = {group: dict(zip(sorted(set(data[group])), values)) for group, values in effects.items()}
    return data, truth


def one(index: int, seed: int) -> dict:
    import bayesrepro as br

    data, truth = simulate(np.random.default_rng([seed, index]))
    out = {}
    for family, formula in FORMULAS.items():
        posterior = br.Model(formula, data).sample(draws=500, tune=500, chains=2, seed=index,
                                                   allow_unconverged=True)
        table = posterior.level_effects(prob=0.9)
        for group in ("system", "item"):
            rows = table[table["group"] == group]
            true = np.array([truth[group][level] for level in rows["level"]])
            out[f"{family}/{group}"] = int(np.sum((rows["low"] <= true) & (true <= rows["high"])))
        out[f"{family}/converged"] = bool(posterior.converged)
    return out


def study(datasets: int, processes: int, seed: int = 20261128) -> dict:
    with ProcessPoolExecutor(processes) as pool:
        results = list(pool.map(partial(one, seed=seed), range(datasets)))
    levels = {"system": SYSTEMS, "item": ITEMS}
    coverage = {f"{family}/{group}": sum(r[f"{family}/{group}"] for r in results) / (n * datasets)
                for family in FORMULAS for group, n in levels.items()}
    converged = {family: sum(r[f"{family}/converged"] for r in results) / datasets for family in FORMULAS}
    return {"datasets": datasets, "coverage_90": coverage, "converged": converged,
            "design": {"systems": SYSTEMS, "items": ITEMS, "sd": SD, "formulas": FORMULAS}}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", type=int, default=100)
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args(argv)
    figures = study(args.datasets, args.processes)
    print(figures)
    write_record("level_effect_calibration", SOURCES, figures,
                 f"python studies/level_effect_calibration.py --datasets {args.datasets}")


if __name__ == "__main__":
    main()
