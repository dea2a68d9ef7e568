"""Posterior summaries of every level's random effects, a block of levels at a time.

Every Bayesian path keeps, or can draw, one joint posterior draw of the level effects per posterior draw: Bambi's
model and the sampled factors of the fast paths hold them as variables (``1|g``), the fast Gaussian path draws the
integrated factor's effects from their exact Gaussian conditional (``effects.DominantEffects``), the binary fast
path from their exact one-dimensional conditional (``binary_effects``), the non-centred random-slope density
records them (``re|g``: level × column), the collapsed one draws them from their exact Gaussian conditional
(``collapsed_effects``). ``Draws.level_blocks`` hands them over a block of levels at a time, so a factor of 10^5
levels never holds draws × levels: quantiles, R-hat and bulk ESS are taken per block.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import pandas as pd

from ..errors import BayesreproError
from .convergence import ess_bulk_columns, r_hat_columns
from .draws import LEVEL_BLOCK_VALUES
from .posterior import check_probability
from .sampling import CROSSED_GIBBS

INTERCEPT = "(Intercept)"  # lme4's name of an intercept column
COLUMNS = ["group", "term", "level", "estimate", "sd", "low", "high", "r_hat", "ess_bulk"]


@dataclass(frozen=True)
class EffectSource:
    """The effects of one term column of one grouping factor: its levels, and its draws a block at a time
    (yields level indices and draws (chain, draw, levels))."""

    group: str
    term: str
    levels: list[str]
    blocks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]


def lme4_term(column: str) -> str:
    """A term column named as lme4 names it: "(Intercept)" for the intercept, slopes as they are."""
    return INTERCEPT if column == "Intercept" else column


def effect_sources(fit, group: str | None = None) -> list[EffectSource]:
    """Every term column's effects of ``fit`` (a ``fit.BayesFit``), or of the grouping factor ``group`` alone."""
    frame, draws = fit.frame, fit.draws
    names = list(dict.fromkeys(frame.group_names))
    if group is not None and group not in names:
        raise BayesreproError(f"--group '{group}' is not a grouping factor of the formula; choose one of: "
                              f"{', '.join(names)}")
    if fit.terms:
        sources = []
        for term, layout in zip(frame.spec.random_terms, fit.terms):
            if group is None or term.group == group:
                sources += _term_sources(draws, term.group, layout)
        return sources
    sources = []
    for factor in frame.groups:
        if group is not None and factor.name != group:
            continue
        name = f"1|{factor.name}"
        if not draws.has_levels(name):
            raise BayesreproError(_missing_reason(fit))
        labels = [str(v) for v in draws.labels(name)] if name in draws.dims else [str(v) for v in factor.levels]
        sources.append(EffectSource(factor.name, INTERCEPT, labels,
                                    lambda name=name: draws.level_blocks(name, LEVEL_BLOCK_VALUES)))
    return sources


def _term_sources(draws, group: str, layout) -> list[EffectSource]:
    """One source per column of a random-effect term (``term_model.TermLayout``), read from ``re|<term>``
    (chain, draw, level, column)."""
    from .slope_density import effect_variable

    name = effect_variable(layout.group)
    if not draws.has_levels(name):
        raise BayesreproError(f"this posterior holds no draws of the effects of term '{layout.group}'")
    labels = [str(v) for v in layout.levels]

    def column_blocks(c):
        for levels, values in draws.level_blocks(name, LEVEL_BLOCK_VALUES):
            yield levels, values[..., c]

    return [EffectSource(group, lme4_term(column), labels, lambda c=c: column_blocks(c))
            for c, column in enumerate(layout.columns)]


def _missing_reason(fit) -> str:
    if fit.backend == CROSSED_GIBBS and fit.family != "gaussian":
        return ("level effects are not kept by the crossed Gibbs sampler; refit with --backend fast (NUTS, which "
                "samples them: hours with thousands of levels)")
    if fit.backend == CROSSED_GIBBS:
        return ("level effects are not kept by the crossed Gibbs sampler; refit with --max-memory large enough for "
                "the fast path, or --backend bambi")
    return "this posterior holds no level effects: it was sampled with effects=False; sample again with effects=True"


def level_effect_table(fit, group: str | None = None, prob: float = 0.95) -> pd.DataFrame:
    """One row per level and term column: posterior median (``estimate``), SD, central ``prob`` interval
    (``low``, ``high``), R-hat and bulk ESS, computed a block of levels at a time."""
    prob = check_probability(prob)
    frames = []
    for source in effect_sources(fit, group):
        for levels, values in source.blocks():
            frames.append(_summary(source, levels, values, prob))
    if not frames:
        return pd.DataFrame(columns=COLUMNS)
    table = pd.concat(frames, ignore_index=True)
    order = {(s.group, s.term): k for k, s in enumerate(effect_sources(fit, group))}
    table["_source"] = [order[key] for key in zip(table["group"], table["term"])]
    table = table.sort_values(["_source", "_index"], kind="stable").drop(columns=["_source", "_index"])
    return table.reset_index(drop=True)


def _summary(source: EffectSource, levels: np.ndarray, values: np.ndarray, prob: float) -> pd.DataFrame:
    flat = values.reshape(-1, values.shape[-1])
    low, median, high = np.quantile(flat, [(1 - prob) / 2, 0.5, (1 + prob) / 2], axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        r_hat, ess = r_hat_columns(values), ess_bulk_columns(values)
    return pd.DataFrame({
        "group": source.group, "term": source.term, "level": [source.levels[i] for i in levels],
        "estimate": median, "sd": flat.std(axis=0, ddof=1), "low": low, "high": high, "r_hat": r_hat,
        "ess_bulk": ess, "_index": levels,
    })


def level_effect_draws(fit, group: str, term: str = INTERCEPT) -> tuple[np.ndarray, list[str]]:
    """Draws (chains × draws, levels) of one term column's effects of ``group``, and the level labels."""
    sources = effect_sources(fit, group)
    source = next((s for s in sources if s.term == term), None)
    if source is None:
        raise BayesreproError(f"--term '{term}' is not a term of grouping factor '{group}'; its terms are: "
                              f"{', '.join(s.term for s in sources)}")
    out = None
    for levels, values in source.blocks():
        if out is None:
            out = np.empty((values.shape[0] * values.shape[1], len(source.levels)))
        out[:, levels] = values.reshape(-1, values.shape[-1])
    return out, list(source.levels)
