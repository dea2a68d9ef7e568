"""Expected best score under a budget of B trained configurations.

Given one score per configuration of a meta-parameter grid (n scores), the
best of B configurations drawn at random (with replacement) is a random
variable. Two estimates of it are offered side by side:

* closed form (Dodge et al., 2019, "expected validation performance"): with
  the scores sorted, v_(1) <= ... <= v_(n), the best of B draws from their
  empirical distribution has P(max <= v_(i)) = (i/n)^B, hence
  E[max] = sum_i v_(i) ((i/n)^B − ((i−1)/n)^B); the same distribution gives
  its standard deviation and exact quantiles;
* bootstrap (the thesis's Algorithm 3.1): draw B scores with replacement R
  times, take the best of each draw; report the mean and a percentile interval.

Both can only ever return observed scores: the best of any resample is at
most the best score in the grid. The probability that a best-of-B draw *is*
the grid's best, 1 − (1 − 1/n)^B, reaches 0.63 at B = n: from moderate
budgets on, the best end of every interval is pinned at the sample best and
the interval shrinks onto it as B approaches n. The intervals describe draws
from this grid, not the best score a larger search could find.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
import pandas as pd

from .. import limits
from ..data import check_score, require_columns
from ..levels import level_labels
from ..errors import BayesreproError
from .resampling import MAX_RESAMPLED_CELLS, check_resamples, check_seed

BOUNDARY_NOTE = (
    "The best of B resampled configurations can never be better than the best configuration observed; "
    "the chance that it equals that best, 1 - (1 - 1/n)^B, reaches 0.63 at B = n (n configurations), "
    "so the interval's best end is pinned at the sample best and the interval shrinks onto it "
    "as B approaches n (column best_end_at_sample_best). "
    "The intervals describe draws from this grid, not what a larger search would find."
)


@dataclass(frozen=True)
class ExpectedMaxResult:
    """Expected best score per budget; ``table`` has one row per budget."""

    table: pd.DataFrame
    n_configurations: int
    higher_is_better: bool
    level: float
    n_resamples: int
    seed: int | None
    note: str = BOUNDARY_NOTE

    def to_dict(self) -> dict:
        return {
            "n_configurations": self.n_configurations,
            "higher_is_better": self.higher_is_better,
            "level": self.level,
            "n_resamples": self.n_resamples,
            "seed": self.seed,
            "note": self.note,
            "budgets": self.table.to_dict(orient="records"),
        }


def expected_max_closed_form(scores, budgets) -> np.ndarray:
    """E[max of B draws with replacement from ``scores``] for each B (Dodge et al., 2019)."""
    values = np.sort(_scores(scores))
    budgets = _budgets(budgets)
    cdf = _max_cdf(len(values), budgets)
    return np.diff(cdf, axis=1, prepend=0.0) @ values


def expected_max(scores, budgets=None, *, higher_is_better: bool = True, level: float = 0.95,
                 n_resamples: int = 2000, seed: int | None = None,
                 progress: Callable[[float], None] | None = None) -> ExpectedMaxResult:
    """Closed-form and bootstrap (Algorithm 3.1) estimates of the best of B, per budget B.

    For ``higher_is_better=False`` (error rates such as TER) "best" is the
    minimum; scores are negated internally and the table is in the original
    units (``lower``/``upper`` are still the interval's ends).
    """
    values = _scores(scores)
    n = len(values)
    budgets = _budgets(default_budgets(n) if budgets is None else budgets)
    if not 0 < level < 1:
        raise BayesreproError(f"--level must lie strictly between 0 and 1, not {level!r}")
    draws_per_resample = sum(int(b) for b in budgets)
    if draws_per_resample > MAX_RESAMPLED_CELLS:
        raise BayesreproError(
            f"--budgets add up to {draws_per_resample:,} draws per resample, more than the {MAX_RESAMPLED_CELLS:,} "
            "that finish in a few minutes; a budget larger than the number of configurations adds little"
        )
    check_resamples(n_resamples, draws_per_resample)
    check_seed(seed)
    sign = 1.0 if higher_is_better else -1.0
    oriented = np.sort(sign * values)
    cdf = _max_cdf(n, budgets)
    pmf = np.diff(cdf, axis=1, prepend=0.0)
    mean = pmf @ oriented
    sd = np.sqrt(np.maximum(pmf @ oriented**2 - mean**2, 0.0))
    tail = (1 - level) / 2
    q_low = _quantile_of_max(oriented, cdf, tail)
    q_high = _quantile_of_max(oriented, cdf, 1 - tail)

    rng = np.random.default_rng(seed)
    boot_mean, boot_low, boot_high = [], [], []
    done, work = 0, float(budgets.sum())
    for budget in budgets:
        maxima = _bootstrap_maxima(oriented, int(budget), n_resamples, rng)
        done += budget
        if progress is not None:
            progress(done / work)
        boot_mean.append(maxima.mean())
        boot_low.append(np.quantile(maxima, tail))
        boot_high.append(np.quantile(maxima, 1 - tail))
    boot_low, boot_high = np.array(boot_low), np.array(boot_high)

    def ends(low, high):  # back to the original units, lower end first
        return (low, high) if higher_is_better else (-high, -low)

    cf_lower, cf_upper = ends(q_low, q_high)
    bs_lower, bs_upper = ends(boot_low, boot_high)
    table = pd.DataFrame({
        "budget": budgets,
        "closed_form_mean": sign * mean,
        "closed_form_sd": sd,
        "closed_form_lower": cf_lower,
        "closed_form_upper": cf_upper,
        "bootstrap_mean": sign * np.array(boot_mean),
        "bootstrap_lower": bs_lower,
        "bootstrap_upper": bs_upper,
        "p_sample_best": 1 - (1 - 1 / n) ** budgets.astype(float),
        "best_end_at_sample_best": boot_high == oriented[-1],
    })
    return ExpectedMaxResult(table, n, higher_is_better, level, n_resamples, seed)


def default_budgets(n: int) -> np.ndarray:
    """Roughly log-spaced budgets from 1 to n."""
    return np.unique(np.round(np.geomspace(1, n, num=min(n, 25))).astype(int))


def configuration_scores(frame: pd.DataFrame, configuration: Sequence[str], score: str,
                         aggregate: str = "mean") -> pd.Series:
    """One score per configuration: the rows of each configuration aggregated (mean over items)."""
    configuration = list(configuration)
    if not configuration:
        raise BayesreproError("--config needs at least one column that identifies a configuration")
    require_columns(frame, configuration, "configuration column")
    if score in configuration:
        raise BayesreproError(
            f"--config names the score column '{score}'; configurations are identified by meta-parameter columns, "
            "not by the score they reach"
        )
    repeated = [c for i, c in enumerate(configuration) if c in configuration[:i]]
    if repeated:
        raise BayesreproError(f"--config names the column '{repeated[0]}' twice")
    if aggregate not in ("mean", "median"):
        raise BayesreproError(f"aggregate must be 'mean' or 'median', not {aggregate!r}")
    values = pd.Series(check_score(frame, score), index=frame.index, name=score)
    keys = [level_labels(frame[c]) for c in configuration]
    return getattr(values.groupby(keys, sort=True), aggregate)()


def plot_expected_max(result: ExpectedMaxResult, ax=None, label: str | None = None):
    """Expected best score against budget with both intervals; returns the Figure."""
    import matplotlib

    if ax is None:
        matplotlib.use("Agg", force=False)
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
    else:
        fig = ax.figure
    t = result.table
    name = f"{label}: " if label else ""
    ax.plot(t["budget"], t["closed_form_mean"], marker="o", ms=3, label=f"{name}closed form")
    ax.fill_between(t["budget"], t["closed_form_lower"], t["closed_form_upper"], alpha=0.2,
                    label=f"{name}{result.level:.0%} range of the best of B")
    ax.plot(t["budget"], t["bootstrap_mean"], ls="--", label=f"{name}bootstrap (Alg. 3.1)")
    ax.set_xscale("log")
    ax.set_xlabel("budget B (configurations trained)")
    ax.set_ylabel("best score among B" + ("" if result.higher_is_better else " (lower is better)"))
    ax.axvline(result.n_configurations, color="grey", lw=0.8, ls=":")
    ax.legend(fontsize=8)
    return fig


def _scores(scores) -> np.ndarray:
    try:
        values = np.asarray(scores, dtype=float).ravel()
    except (TypeError, ValueError):
        raise BayesreproError("scores must be numbers, one per configuration") from None
    if values.size < 2:
        raise BayesreproError(f"need at least 2 configuration scores, got {values.size}")
    if not np.all(np.isfinite(values)):
        raise BayesreproError("scores have missing or infinite values; remove those configurations")
    return values


def _budgets(budgets) -> np.ndarray:
    array = np.atleast_1d(np.asarray(budgets, dtype=object))
    if array.size == 0:
        raise BayesreproError(limits.BUDGETS.refusal(budgets))
    for budget in array:
        if isinstance(budget, str):
            raise BayesreproError(limits.BUDGETS.refusal(budget))
        limits.BUDGETS.check(budget)
    return array.astype(int)


def _max_cdf(n: int, budgets: np.ndarray) -> np.ndarray:
    """(n_budgets, n): P(max of B draws <= v_(i)) = (i/n)^B."""
    return (np.arange(1, n + 1) / n)[None, :] ** budgets[:, None].astype(float)


def _quantile_of_max(sorted_values, cdf, q) -> np.ndarray:
    # smallest order statistic whose CDF reaches q (rounding guard for q^(1/B))
    idx = np.argmax(cdf >= q - 1e-12, axis=1)
    return sorted_values[idx]


def _bootstrap_maxima(values, budget, n_resamples, rng) -> np.ndarray:
    maxima = np.empty(n_resamples)
    step = max(1, 2_000_000 // budget)
    for start in range(0, n_resamples, step):
        size = min(step, n_resamples - start)
        maxima[start:start + size] = values[rng.integers(0, len(values), size=(size, budget))].max(axis=1)
    return maxima
