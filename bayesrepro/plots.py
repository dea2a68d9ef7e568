"""The papers' figures, frequentist and Bayesian on the same axes.

Every function returns a ``matplotlib.figure.Figure`` built without pyplot
(no global state, any backend, safe on headless machines); notebooks display
it, ``fig.savefig`` writes it. Frequentist marks are filled squares with
their interval, Bayesian marks open circles with theirs. Names and levels
from the data are drawn as written: a ``$`` in a level starts no mathtext.
"""

from __future__ import annotations

import functools
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from .compare import CONTRAST_COLUMNS
from .errors import BayesreproError
from .reliability import KOO_LI_BANDS, d_study

FREQ = {"color": "#1f4e79", "marker": "s", "label": "REML / Wald"}
BAYES = {"color": "#c0392b", "marker": "o", "label": "posterior"}
BAND_COLOURS = {"poor": "#f4cccc", "moderate": "#fce5cd", "good": "#d9ead3", "excellent": "#b6d7a8"}


def _literal_text(function):
    """Build the figure with mathtext off, so that user strings are drawn literally and never fail to parse."""
    @functools.wraps(function)
    def build(*args, **kwargs):
        import matplotlib

        with matplotlib.rc_context({"text.parse_math": False}):
            return function(*args, **kwargs)
    return build


def _level(prob: float) -> str:
    return f"{100 * prob:g} %"


def _figure(width: float, height: float):
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), layout="constrained")
    return figure, figure.add_subplot()


@_literal_text
def vca_bars(result, title: str | None = None):
    """Percent of the total variance per component: REML bars with bootstrap intervals, posterior medians with intervals."""
    rows = result.estimates[result.estimates["quantity"] == "percent"]
    figure, ax = _figure(7.5, 0.55 * len(rows) + 1.6)
    y = np.arange(len(rows))[::-1]
    ax.barh(y + 0.18, rows["reml"], height=0.34, color=FREQ["color"], alpha=0.75,
            label=f"{result.method} ({_level(result.prob)} bootstrap interval)")
    ax.errorbar(rows["reml"], y + 0.18, xerr=_spread(rows, "reml", "boot_low", "boot_high"), fmt="none",
                ecolor="black", capsize=3, lw=1)
    ax.barh(y - 0.18, rows["median"], height=0.34, color=BAYES["color"], alpha=0.6,
            label=f"posterior median ({_level(result.prob)} interval)")
    ax.errorbar(rows["median"], y - 0.18, xerr=_spread(rows, "median", "low", "high"), fmt="none",
                ecolor="black", capsize=3, lw=1)
    ax.set_yticks(y, rows["component"])
    ax.set_xlabel("percent of total variance")
    ax.set_xlim(0, min(100, max(rows["high"].max(), rows["boot_high"].max()) * 1.05 + 1))
    ax.legend(loc="lower right", fontsize=8)
    ax.set_title(title or f"Variance components: {result.formula}", fontsize=9)
    return figure


@_literal_text
def component_bars(percent: pd.Series, title: str):
    """Percent of the total variance per component (a Series indexed by component), one bar each."""
    figure, ax = _figure(7.0, 0.45 * len(percent) + 1.4)
    y = np.arange(len(percent))[::-1]
    ax.barh(y, percent.to_numpy(dtype=float), color=FREQ["color"], alpha=0.75)
    ax.set_yticks(y, [str(name) for name in percent.index])
    ax.set_xlabel("percent of total variance")
    ax.set_xlim(0, 100)
    ax.set_title(title, fontsize=9)
    return figure


@_literal_text
def phi_posterior(draws, reml: float | None = None, interval: tuple[float, float] | None = None,
                  object: str | None = None, title: str | None = None, prob: float = 0.95, method: str = "REML"):
    """Posterior density of φ over the Koo & Li bands (shaded), with the frequentist estimate (``method``) and its
    ``prob`` intervals."""
    draws = np.asarray(draws, dtype=float).ravel()
    if draws.size < 2:
        raise BayesreproError("phi_posterior needs posterior draws of phi (an array with more than one value)")
    figure, ax = _figure(7.0, 3.4)
    for label, low, high in KOO_LI_BANDS:
        ax.axvspan(low, high, color=BAND_COLOURS[label], zorder=0)
        share = np.mean((draws >= low) & (draws < high)) if high < 1 else np.mean(draws >= low)
        ax.text((low + high) / 2, 0.97, f"{label}\nP = {share:.2f}", transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=8)
    ax.hist(draws, bins=60, range=(0, 1), density=True, color=BAYES["color"], alpha=0.7, label="posterior of phi")
    median, low, high = np.quantile(draws, [0.5, (1 - prob) / 2, (1 + prob) / 2])
    ax.axvline(median, color=BAYES["color"], lw=1.5)
    ax.hlines(0, low, high, color=BAYES["color"], lw=5,
              label=f"{_level(prob)} posterior interval [{low:.3f}, {high:.3f}]")
    if reml is not None:
        ax.axvline(reml, color=FREQ["color"], ls="--", lw=1.5, label=f"{method} {reml:.3f}")
        if interval is not None:
            ax.hlines(-0.04 * ax.get_ylim()[1], *interval, color=FREQ["color"], lw=5,
                      label=f"{_level(prob)} bootstrap interval [{interval[0]:.3f}, {interval[1]:.3f}]")
    ax.set_xlim(0, 1)
    ax.set_xlabel(f"phi ({object})" if object else "phi")
    ax.set_ylabel("density")
    ax.legend(loc="center left", fontsize=7)
    ax.set_title(title or "Reliability phi and the Koo & Li bands", fontsize=9)
    return figure


@_literal_text
def phi_figure(result, title: str | None = None):
    """``phi_posterior`` of a comparison result."""
    if result.object is None:
        raise BayesreproError("this comparison has no object of measurement; compare with reliability=True for phi")
    row = result.phi
    return phi_posterior(result.bayes.draws["phi"], row["reml"], (row["boot_low"], row["boot_high"]),
                         result.object, title, result.prob, result.method)


@_literal_text
def interaction_plot(means: pd.DataFrame, factor: str, by: str | None = None, score: str = "score",
                     title: str | None = None, prob: float = 0.95):
    """Estimated means per level of ``factor`` (one line each) across the levels of ``by``, both engines.

    ``means`` has the columns of ``SideBySide.means``: ``factor``, ``by``,
    ``estimate``/``low``/``high`` (Wald, 95 %) and ``post_median``/``post_low``/``post_high`` (``prob``).
    """
    for column in [factor] + ([by] if by else []) + ["estimate", "low", "high", "post_median", "post_low", "post_high"]:
        if column not in means.columns:
            raise BayesreproError(f"interaction_plot needs column '{column}' in the table of means")
    x_axis = by or factor
    name = interval_reference(means)
    x_levels = list(dict.fromkeys(means[x_axis].astype(str)))
    lines = list(dict.fromkeys(means[factor].astype(str))) if by else [None]
    figure, ax = _figure(7.0, 4.0)
    colours = [f"C{k}" for k in range(len(lines))]
    width = 0.3 / max(1, len(lines))
    for k, (line, colour) in enumerate(zip(lines, colours)):
        part = means if line is None else means[means[factor].astype(str) == line]
        x = np.array([x_levels.index(v) for v in part[x_axis].astype(str)], dtype=float)
        shift = (k - (len(lines) - 1) / 2) * 2.2 * width
        ax.errorbar(x + shift - width / 2, part["estimate"], yerr=_spread(part, "estimate", "low", "high"),
                    color=colour, marker="s", capsize=2, label=f"{line} ({name})" if line else name)
        ax.errorbar(x + shift + width / 2, part["post_median"], yerr=_spread(part, "post_median", "post_low", "post_high"),
                    color=colour, marker="o", mfc="white", ls=":", capsize=2,
                    label=f"{line} (posterior)" if line else "posterior")
    ax.set_xticks(range(len(x_levels)), x_levels)
    ax.set_xlabel(x_axis)
    ax.set_ylabel(f"estimated mean {score}")
    ax.legend(fontsize=7, ncol=2)
    intervals = f"{name} 95 % and posterior {_level(prob)} intervals"
    ax.set_title(title or (f"{factor} x {by}: estimated means, {intervals}" if by
                           else f"estimated means by {factor}, {intervals}"), fontsize=9)
    return figure


@_literal_text
def d_study_curves(variances: Mapping[str, float | np.ndarray], object: str, facet: str,
                   n: Sequence[int] = (1, 2, 3, 5, 10, 15, 20), fixed: Mapping[str, Sequence[int]] | None = None,
                   posterior: Mapping[str, np.ndarray] | None = None, title: str | None = None,
                   prob: float = 0.95, method: str = "REML"):
    """φ of scores averaged over n levels of ``facet`` (thesis Fig. 3.3), one curve per setting of ``fixed``.

    ``variances`` are the frequentist estimates (lines, labelled ``method``); ``posterior`` optional draws of
    the same components (medians dotted, central ``prob`` bands shaded). ``fixed`` maps
    another facet to the level counts to draw a curve for each, e.g.
    ``{"occasion": [1, 3]}``.
    """
    n = [int(v) for v in n]
    settings = [{}]
    if fixed:
        (other, counts), = fixed.items()
        settings = [{other: int(c)} for c in counts]
    figure, ax = _figure(7.0, 4.0)
    for k, setting in enumerate(settings):
        label = ", ".join(f"{key} = {value}" for key, value in setting.items())
        values = [float(d_study(variances, object, {facet: m, **setting})["phi"]) for m in n]
        ax.plot(n, values, color=f"C{k}", marker="s", label=f"{method}{' (' + label + ')' if label else ''}")
        if posterior is not None:
            draws = np.array([np.asarray(d_study(posterior, object, {facet: m, **setting})["phi"]).ravel() for m in n])
            low, median, high = np.quantile(draws, [(1 - prob) / 2, 0.5, (1 + prob) / 2], axis=1)
            ax.plot(n, median, color=f"C{k}", ls=":", marker="o", mfc="white",
                    label=f"posterior median{' (' + label + ')' if label else ''}")
            ax.fill_between(n, low, high, color=f"C{k}", alpha=0.15)
    for label, low, _ in KOO_LI_BANDS[1:]:
        ax.axhline(low, color="grey", lw=0.6, ls="--")
        ax.text(n[-1], low, f" {label}", va="bottom", ha="right", fontsize=7, color="grey")
    ax.set_ylim(0, 1)
    ax.set_xlabel(f"number of levels of {facet} averaged over")
    ax.set_ylabel(f"phi ({object})")
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title or f"D-study: reliability of the mean over n {facet} levels", fontsize=9)
    return figure


def interval_reference(table: pd.DataFrame) -> str:
    """The name of the reference of a table's frequentist intervals: its ``reference`` column without the fit."""
    if "reference" not in table:
        return "Wald"
    return " / ".join(dict.fromkeys(str(r).removesuffix(" (REML)") for r in table["reference"]))


@_literal_text
def forest_plot(contrasts: pd.DataFrame, title: str | None = None, prob: float = 0.95):
    """Every contrast on one axis: Wald estimate and interval next to posterior median and interval."""
    for column in ("contrast", "estimate", "low", "high", "post_median", "post_low", "post_high"):
        if column not in contrasts.columns:
            raise BayesreproError(f"forest_plot needs column '{column}' in the table of contrasts")
    extra = [c for c in contrasts.columns if c not in CONTRAST_COLUMNS]
    labels = [" | ".join([str(row["contrast"])] + [f"{c} = {row[c]}" for c in extra]) for _, row in contrasts.iterrows()]
    figure, ax = _figure(7.5, 0.42 * len(contrasts) + 1.4)
    y = np.arange(len(contrasts))[::-1]
    ax.errorbar(contrasts["estimate"], y + 0.15, xerr=_spread(contrasts, "estimate", "low", "high"), fmt=FREQ["marker"],
                color=FREQ["color"], capsize=3, label=f"{interval_reference(contrasts)} 95 % interval")
    ax.errorbar(contrasts["post_median"], y - 0.15, xerr=_spread(contrasts, "post_median", "post_low", "post_high"),
                fmt=BAYES["marker"], mfc="white", color=BAYES["color"], capsize=3,
                label=f"{_level(prob)} posterior interval")
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_xlabel("difference of estimated means")
    ax.legend(fontsize=7, loc="best")
    ax.set_title(title or "Contrasts: frequentist and Bayesian", fontsize=9)
    return figure


def _spread(table: pd.DataFrame, centre: str, low: str, high: str) -> np.ndarray:
    """Asymmetric error-bar lengths, never negative (a median can sit on an interval end)."""
    c = table[centre].to_numpy(float)
    return np.vstack([np.clip(c - table[low].to_numpy(float), 0, None), np.clip(table[high].to_numpy(float) - c, 0, None)])


# Up to this many levels a caterpillar panel names each one; beyond, levels are ranked without names.
NAMED_LEVELS = 40


@_literal_text
def caterpillar(table: pd.DataFrame, title: str | None = None, prob: float = 0.95):
    """Each level's effect and interval, levels sorted by estimate: one panel per grouping factor and term.

    ``table`` has the columns of ``Fit.level_effects``: ``group``, ``term``, ``level``, ``estimate``, ``low`` and
    ``high``. Panels of many levels draw them as a ranked band without names.
    """
    for column in ("group", "term", "level", "estimate", "low", "high"):
        if column not in table.columns:
            raise BayesreproError(f"caterpillar needs column '{column}' in the table of level effects")
    panels = list(table.groupby(["group", "term"], sort=False))
    if not panels:
        raise BayesreproError("caterpillar needs at least one level effect")
    heights = [0.16 * len(rows) + 0.9 if len(rows) <= NAMED_LEVELS else 3.0 for _, rows in panels]
    from matplotlib.figure import Figure

    figure = Figure(figsize=(7.5, sum(heights) + 0.6), layout="constrained")
    axes = figure.subplots(len(panels), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, ((group, term), rows) in zip(axes, panels):
        rows = rows.sort_values("estimate")
        rank = np.arange(len(rows))
        named = len(rows) <= NAMED_LEVELS
        if named:
            ax.errorbar(rows["estimate"], rank, xerr=_spread(rows, "estimate", "low", "high"), fmt=FREQ["marker"],
                        color=FREQ["color"], ms=3, capsize=2, lw=0.8)
            ax.set_yticks(rank, [str(level) for level in rows["level"]], fontsize=7)
        else:
            ax.fill_betweenx(rank, rows["low"], rows["high"], color=FREQ["color"], alpha=0.25, lw=0)
            ax.plot(rows["estimate"], rank, color=FREQ["color"], lw=1)
            ax.set_ylabel(f"{len(rows):,} levels, ranked", fontsize=8)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_title(f"{group}: {term}", fontsize=9, loc="left")
    axes[-1].set_xlabel(f"level effect with its {_level(prob)} interval")
    if title:
        figure.suptitle(title, fontsize=10)
    return figure
