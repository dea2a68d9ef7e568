"""Simulated evaluation grids with known variance components, for checks, benchmarks and examples.

``binary_grid`` draws 0/1 scores (correct/incorrect) of several systems on
the same test items, each system trained with several seeds and prompted
with several templates, from the logit (or probit) model

    η = intercept + system effect + b_item + b_system:seed + b_prompt,

with normal level effects of the given standard deviations; the score is 1
with probability μ(η). Columns: ``item``, ``system``, ``seed`` (numbered
within each system), ``prompt``, ``correct``.

``simulate_crowd`` draws a crowd-annotation design: many items, each scored
by at least two distinct raters out of thousands, rater activity uniform or
skewed (a rater's share of the rows falls as a power of its rank, so a few
raters score thousands of items), and scores

    y = intercept + b_item + b_rater + ε   (or 0/1 with probability logistic(η) without ε).

``repeated_measures`` draws a sleepstudy-like design: every subject measured on days 0 … days − 1, with a
correlated random intercept and slope per subject (``(days|subject)``); ``binary_system_slopes`` 0/1 scores of
systems whose advantage varies across subjects (``(1 + system | subject) + (1 | item)``).
"""

from __future__ import annotations

from dataclasses import dataclass

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


@dataclass(frozen=True)
class CrowdTruth:
    """The variance components a crowd design was drawn from."""

    item_sd: float
    rater_sd: float
    residual_sd: float
    intercept: float


def simulate_crowd(rows: int, items: int, raters: int, skew: float = 1.0, item_sd: float = 1.0,
                   rater_sd: float = 0.5, residual_sd: float = 1.0, intercept: float = 0.0, binary: bool = False,
                   random_state=None) -> tuple[pd.DataFrame, CrowdTruth]:
    """A crowd design of ``rows`` scores: every item scored by at least two distinct raters.

    Each item gets two rows and the remaining rows fall on items uniformly at random; the rater of a row
    is drawn with probability proportional to rank^−``skew`` (0: uniform activity). A rater drawn twice
    for the same item is drawn again. Columns ``item``, ``rater``, ``score``.
    """
    if rows < 2 * items:
        raise ValueError("rows must be at least twice the items: every item is scored by two raters")
    rng = np.random.default_rng(random_state)
    item = np.concatenate([np.repeat(np.arange(items), 2), rng.integers(0, items, rows - 2 * items)])
    item.sort()
    weights = np.arange(1, raters + 1, dtype=float) ** -float(skew)
    cumulative = np.cumsum(weights / weights.sum())
    rater = np.minimum(np.searchsorted(cumulative, rng.random(rows)), raters - 1)
    for _ in range(100):
        repeated = _repeated_pairs(item, rater)
        if not repeated.any():
            break
        rater[repeated] = np.minimum(np.searchsorted(cumulative, rng.random(int(repeated.sum()))), raters - 1)
    else:
        repeated = _repeated_pairs(item, rater)
        rater[repeated] = rng.integers(0, raters, int(repeated.sum()))   # the few left: any rater
    eta = intercept + rng.normal(0.0, item_sd, items)[item] + rng.normal(0.0, rater_sd, raters)[rater]
    if binary:
        score = (rng.random(rows) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int8)
    else:
        score = eta + rng.normal(0.0, residual_sd, rows)
    order = rng.permutation(rows)
    table = pd.DataFrame({"item": np.char.add("i", item[order].astype(str)),
                          "rater": np.char.add("r", rater[order].astype(str)), "score": score[order]})
    return table, CrowdTruth(item_sd, rater_sd, 0.0 if binary else residual_sd, intercept)


def _repeated_pairs(item: np.ndarray, rater: np.ndarray) -> np.ndarray:
    """Rows whose (item, rater) pair occurred in an earlier row."""
    keys = item.astype(np.int64) * (int(rater.max()) + 1) + rater
    _, first = np.unique(keys, return_index=True)
    repeated = np.ones(len(keys), dtype=bool)
    repeated[first] = False
    return repeated


@dataclass(frozen=True)
class SlopeTruth:
    """The parameters a repeated-measures design was drawn from."""

    intercept_sd: float = 25.0
    slope_sd: float = 6.0
    correlation: float = 0.3
    residual_sd: float = 25.0
    intercept: float = 250.0
    slope: float = 10.0


def repeated_measures(subjects: int = 18, days: int = 10, truth: SlopeTruth = SlopeTruth(),
                      random_state=None) -> pd.DataFrame:
    """Scores ``y = intercept + slope·day + b0_subject + b1_subject·day + ε``, (b0, b1) bivariate normal with the
    SDs and correlation of ``truth``. Columns ``subject``, ``day``, ``y``."""
    rng = np.random.default_rng(random_state)
    sd = np.array([truth.intercept_sd, truth.slope_sd])
    covariance = np.outer(sd, sd) * np.array([[1.0, truth.correlation], [truth.correlation, 1.0]])
    effects = rng.multivariate_normal(np.zeros(2), covariance, subjects)
    subject = np.repeat(np.arange(subjects), days)
    day = np.tile(np.arange(days, dtype=float), subjects)
    y = (truth.intercept + effects[subject, 0] + (truth.slope + effects[subject, 1]) * day
         + rng.normal(0.0, truth.residual_sd, subject.size))
    return pd.DataFrame({"subject": np.char.add("s", subject.astype(str)), "day": day, "y": y})


def binary_system_slopes(subjects: int = 12, items: int = 20, systems: dict[str, float] | None = None,
                         subject_sd: float = 1.0, slope_sd: float = 0.6, correlation: float = 0.3,
                         item_sd: float = 0.8, intercept: float = 0.2, random_state=None) -> pd.DataFrame:
    """0/1 scores of every system on every item for every subject, from ``y ~ system + (1 + system | subject) +
    (1 | item)`` (logit): per subject an intercept and one slope per system after the first (treatment coding,
    as the formula's random term), SDs ``subject_sd`` and ``slope_sd``, every pair correlated by
    ``correlation``. ``systems`` maps each system to its effect (default "a": 0, "b": 0.5). Columns
    ``subject``, ``item``, ``system``, ``y``."""
    systems = {"a": 0.0, "b": 0.5} if systems is None else dict(systems)
    rng = np.random.default_rng(random_state)
    k = len(systems)
    sd = np.array([subject_sd] + [slope_sd] * (k - 1))
    covariance = np.outer(sd, sd) * (correlation + (1.0 - correlation) * np.eye(k))
    effects = rng.multivariate_normal(np.zeros(k), covariance, subjects)
    subject, item, system = (a.ravel() for a in np.meshgrid(np.arange(subjects), np.arange(items), np.arange(k),
                                                            indexing="ij"))
    slope = np.where(system > 0, effects[subject, np.maximum(system, 1)], 0.0)
    eta = (intercept + np.array(list(systems.values()))[system] + effects[subject, 0] + slope
           + rng.normal(0.0, item_sd, items)[item])
    return pd.DataFrame({
        "subject": np.char.add("s", subject.astype(str)),
        "item": np.char.add("i", item.astype(str)),
        "system": np.array(list(systems))[system],
        "y": (rng.random(len(eta)) < get_link("logit").inverse(eta)).astype(np.int8),
    })
