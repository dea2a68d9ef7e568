"""Simulated evaluation grids with known variance components, for checks, benchmarks and examples.

``binary_grid`` draws 0/1 scores (correct/incorrect) of several systems on
the same test items, each system trained with several seeds and prompted
with several templates, from the logit model

    η = intercept + system effect + b_item + b_system:seed + b_prompt,

with normal level effects of the given standard deviations; the score is 1
with probability 1 / (1 + exp(−η)). Columns: ``item``, ``system``, ``seed``
(numbered within each system), ``prompt``, ``correct``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.special import expit


def binary_grid(items: int = 2000, systems: dict[str, float] | None = None, seeds: int = 5, prompts: int = 4,
                item_sd: float = 1.5, seed_sd: float = 0.2, prompt_sd: float = 0.3, intercept: float = 0.5,
                random_state=None) -> pd.DataFrame:
    """One simulated binary benchmark: every item scored by every seed of every system with every prompt.

    ``systems`` maps each system's name to its effect on the logit scale (default three systems,
    0, 0.2 and 0.4). The rows are ``items × systems × seeds × prompts``.
    """
    systems = {"A": 0.0, "B": 0.2, "C": 0.4} if systems is None else dict(systems)
    rng = np.random.default_rng(random_state)
    n_systems = len(systems)
    item, system, seed, prompt = (a.ravel() for a in np.meshgrid(
        np.arange(items), np.arange(n_systems), np.arange(seeds), np.arange(prompts), indexing="ij"))
    eta = (intercept + np.array(list(systems.values()))[system]
           + rng.normal(0.0, item_sd, items)[item]
           + rng.normal(0.0, seed_sd, n_systems * seeds)[system * seeds + seed]
           + rng.normal(0.0, prompt_sd, prompts)[prompt])
    correct = (rng.random(len(eta)) < expit(eta)).astype(np.int8)
    width = len(str(items))
    return pd.DataFrame({
        "item": pd.Categorical([f"q{i:0{width}d}" for i in range(items)])[item],
        "system": pd.Categorical(list(systems))[system],
        "seed": seed + 1,
        "prompt": pd.Categorical([f"p{k + 1}" for k in range(prompts)])[prompt],
        "correct": correct,
    })
