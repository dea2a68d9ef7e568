"""Simulated evaluation grids with known variance components, for checks, benchmarks and examples.

``binary_grid`` draws 0/1 scores (correct/incorrect) of several systems on
the same test items, each system trained with several seeds and prompted
with several templates, from the logit (or probit) model

    η = intercept + system effect + b_item + b_system:seed + b_prompt,

with normal level effects of the given standard deviations; the score is 1
with probability μ(η). Columns: ``item``, ``system``, ``seed`` (numbered
within each system), ``prompt``, ``correct``.

``crowd_design`` draws a sparse crossed annotation design: every item scored
by a few distinct raters, the raters chosen with uniform or skewed activity
(a few raters score thousands of items, as real crowds do), and the score

    y = intercept + b_item + b_rater + ε

with normal effects of the given standard deviations. Columns: ``item``,
``rater``, ``score``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .links import get_link


def binary_grid(items: int = 2000, systems: dict[str, float] | None = None, seeds: int = 5, prompts: int = 4,
                item_sd: float = 1.5, seed_sd: float = 0.2, prompt_sd: float = 0.3, intercept: float = 0.5,
                link: str = "logit", random_state=None) -> pd.DataFrame:
    """One simulated binary benchmark: every item scored by every seed of every system with every prompt.

    ``systems`` maps each system's name to its effect on the link scale (default three systems,
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
    correct = (rng.random(len(eta)) < get_link(link).inverse(eta)).astype(np.int8)
    width = len(str(items))
    return pd.DataFrame({
        "item": pd.Categorical([f"q{i:0{width}d}" for i in range(items)])[item],
        "system": pd.Categorical(list(systems))[system],
        "seed": seed + 1,
        "prompt": pd.Categorical([f"p{k + 1}" for k in range(prompts)])[prompt],
        "correct": correct,
    })


ACTIVITIES = ("uniform", "skewed")


def crowd_design(items: int = 20_000, raters: int = 8_000, per_item: int = 2, activity: str = "skewed",
                 item_sd: float = 1.0, rater_sd: float = 0.5, residual_sd: float = 1.0, intercept: float = 0.0,
                 skew: float = 1.0, random_state=None) -> pd.DataFrame:
    """``items × per_item`` rows: each item scored by ``per_item`` distinct raters out of ``raters``.

    With ``activity="skewed"`` rater r (from 0) is chosen with probability proportional to 1/(r + 1)^skew
    (Zipf), with ``"uniform"`` with equal probability; every rater scores at least one item when there are
    as many items as raters.
    """
    if activity not in ACTIVITIES:
        raise ValueError(f"activity must be one of {ACTIVITIES}, not {activity!r}")
    if not 1 <= per_item <= raters:
        raise ValueError(f"per_item must lie between 1 and raters ({raters}), not {per_item}")
    rng = np.random.default_rng(random_state)
    weights = 1.0 / np.arange(1, raters + 1) ** skew if activity == "skewed" else np.ones(raters)
    cumulative = np.cumsum(weights / weights.sum())
    chosen = np.empty((items, per_item), dtype=np.int64)
    for k in range(per_item):
        draw = np.minimum(np.searchsorted(cumulative, rng.random(items)), raters - 1)
        if k == 0:   # every rater scores at least one item (where there are enough items)
            first = min(items, raters)
            draw[rng.permutation(items)[:first]] = rng.permutation(raters)[:first]
        clash = (chosen[:, :k] == draw[:, None]).any(axis=1)
        while clash.any():   # a rater scores an item once: redraw the clashes
            draw[clash] = np.minimum(np.searchsorted(cumulative, rng.random(int(clash.sum()))), raters - 1)
            clash = (chosen[:, :k] == draw[:, None]).any(axis=1)
        chosen[:, k] = draw
    item = np.repeat(np.arange(items), per_item)
    rater = chosen.ravel()
    score = (intercept + rng.normal(0.0, item_sd, items)[item] + rng.normal(0.0, rater_sd, raters)[rater]
             + rng.normal(0.0, residual_sd, len(item)))
    return pd.DataFrame({"item": [f"i{i}" for i in item], "rater": [f"r{r}" for r in rater], "score": score})
