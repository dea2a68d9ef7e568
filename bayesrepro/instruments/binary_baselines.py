"""The field's usual error bars for 0/1 scores, to set beside the mixed model (Miller 2024, "Adding Error Bars
to Evals: A Statistical Approach to Language Model Evaluations", arXiv:2411.00640).

For every system, over all its rows (items × runs: seeds, prompts, samples):

- accuracy with the Wilson score interval, every row taken as an independent
  Bernoulli trial: the naive interval;
- the standard error of the accuracy clustered by item (Miller's clustered
  standard error): SE² = Σ_items (Σ_rows of the item (s − s̄))² / n²,
  which counts the correlation of the rows that share an item, and a normal
  interval with it.

For every pair of systems scored on the same items:

- the paired difference (Miller's paired analysis): the mean over items of the per-item
  difference of mean scores, SE = sd(differences)/√items, z test and interval;
- the unpaired difference with the two clustered SEs, SE = √(SE_a² + SE_b²);
- McNemar's exact test (the binomial test of the discordant items), which needs
  exactly one score per item and system: with several runs per item it is not
  computed, and the table says so (select one run with --where).

Each of these treats the items as the only source of variation: none accounts
for runs (seeds, prompts) that vary between systems and matter beyond the
items. That is what the GLMM adds (``frequentist.analyses.compare_binary_levels``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy.special import bdtr, ndtr, ndtri

from ..data import as_factor, check_score, require_columns
from ..errors import BayesreproError


@dataclass
class BinaryBaselines:
    """Per-system accuracies with naive and clustered intervals, and pairwise differences."""

    score: str
    item: str
    system: str
    level: float
    systems: pd.DataFrame
    pairs: pd.DataFrame
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"score": self.score, "item": self.item, "system": self.system, "level": self.level,
                "systems": self.systems.to_dict(orient="records"), "pairs": self.pairs.to_dict(orient="records"),
                "notes": list(self.notes)}

    def __str__(self) -> str:
        percent = f"{100 * self.level:g} %"
        lines = [f"Accuracy of '{self.score}' per {self.system} (Wilson: rows independent; clustered: by {self.item}), "
                 f"{percent} intervals:", _indent(self.systems)]
        if len(self.pairs):
            lines += [f"Differences between {self.system}s on the same {self.item}s (paired: per-{self.item} "
                      f"differences; unpaired: clustered SEs; McNemar: exact, one score per {self.item}):",
                      _indent(self.pairs)]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def wilson_interval(successes, trials, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Wilson's score interval for a binomial proportion (Wilson 1927)."""
    successes, trials = np.asarray(successes, dtype=float), np.asarray(trials, dtype=float)
    z = ndtri(0.5 + level / 2.0)
    p = successes / trials
    centre = (p + z * z / (2 * trials)) / (1 + z * z / trials)
    half = z / (1 + z * z / trials) * np.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials))
    return centre - half, centre + half


def clustered_standard_error(scores, clusters) -> float:
    """Standard error of the mean of ``scores`` with the rows of each cluster correlated (Miller's CRSE)."""
    scores = np.asarray(scores, dtype=float)
    codes = pd.factorize(np.asarray(clusters))[0]
    sums = np.bincount(codes, weights=scores - scores.mean())
    return float(np.sqrt(sums @ sums) / len(scores))


def paired_difference(a, b, level: float = 0.95) -> dict:
    """Mean of the per-item differences a − b (aligned arrays of per-item mean scores), with SE, interval, z test."""
    differences = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = len(differences)
    estimate = float(differences.mean())
    se = float(differences.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")
    return {"estimate": estimate, "std_error": se, **_normal_interval(estimate, se, level), "n_items": n}


def mcnemar_test(a, b) -> dict:
    """McNemar's exact test of paired 0/1 scores: the discordant items as a binomial with p = 1/2 under H0."""
    a, b = np.asarray(a).astype(bool), np.asarray(b).astype(bool)
    a_only, b_only = int(np.sum(a & ~b)), int(np.sum(~a & b))
    discordant = a_only + b_only
    p = 1.0 if discordant == 0 else min(1.0, 2.0 * float(bdtr(min(a_only, b_only), discordant, 0.5)))
    return {"a_only": a_only, "b_only": b_only, "p": p}


def binary_baselines(data: pd.DataFrame, score: str, item: str, system: str, level: float = 0.95) -> BinaryBaselines:
    """The usual error bars of every system's accuracy and of every pairwise difference."""
    if not 0.0 < level < 1.0:
        raise BayesreproError(f"--level must lie between 0 and 1, not {level}")
    require_columns(data, [score, item, system], "column")
    scores = check_score(data, score)
    if not np.all((scores == 0) | (scores == 1)):
        bad = data[score].iloc[int(np.argmax((scores != 0) & (scores != 1)))]
        raise BayesreproError(f"score column '{score}' must hold 0/1 scores for these error bars, not {bad!r}")
    rows = pd.DataFrame({"item": np.asarray(as_factor(data, item).astype(str)),
                         "system": np.asarray(as_factor(data, system).astype(str)), "score": scores})
    per_system = {name: part for name, part in rows.groupby("system", sort=True)}
    systems = pd.DataFrame([_system_row(name, part, level) for name, part in per_system.items()])
    notes: list[str] = []
    pairs = pd.DataFrame([_pair_row(a, b, per_system[a], per_system[b], level, notes)
                          for a, b in itertools.combinations(per_system, 2)])
    return BinaryBaselines(score, item, system, level, systems, pairs, list(dict.fromkeys(notes)))


def _system_row(name: str, part: pd.DataFrame, level: float) -> dict:
    n, successes = len(part), float(part["score"].sum())
    accuracy = successes / n
    low, high = wilson_interval(successes, n, level)
    se = clustered_standard_error(part["score"], part["item"])
    interval = _normal_interval(accuracy, se, level)
    return {"system": name, "rows": n, "items": part["item"].nunique(), "accuracy": accuracy,
            "wilson_low": float(low), "wilson_high": float(high), "clustered_se": se,
            "clustered_low": interval["low"], "clustered_high": interval["high"]}


def _pair_row(a: str, b: str, rows_a: pd.DataFrame, rows_b: pd.DataFrame, level: float, notes: list[str]) -> dict:
    means_a, means_b = rows_a.groupby("item")["score"].mean(), rows_b.groupby("item")["score"].mean()
    shared = means_a.index.intersection(means_b.index)
    if len(shared) < 2:
        raise BayesreproError(f"systems {a} and {b} share {len(shared)} item(s) of --item; paired differences need at "
                              "least 2 items both systems scored: is --item the column of test items?")
    if len(shared) < len(means_a.index.union(means_b.index)):
        notes.append(f"paired differences and McNemar use only the items both systems scored ({len(shared)} for {a} - {b})")
    paired = paired_difference(means_a[shared], means_b[shared], level)
    accuracy_a, accuracy_b = rows_a["score"].mean(), rows_b["score"].mean()
    unpaired_se = float(np.hypot(clustered_standard_error(rows_a["score"], rows_a["item"]),
                                 clustered_standard_error(rows_b["score"], rows_b["item"])))
    unpaired = _normal_interval(accuracy_a - accuracy_b, unpaired_se, level)
    row = {"contrast": f"{a} - {b}", "paired_difference": paired["estimate"], "paired_se": paired["std_error"],
           "paired_low": paired["low"], "paired_high": paired["high"], "paired_p": paired["p"],
           "unpaired_se": unpaired_se, "unpaired_p": unpaired["p"]}
    runs = max(rows_a.groupby("item").size().max(), rows_b.groupby("item").size().max())
    if runs == 1:
        test = mcnemar_test(rows_a.set_index("item").loc[shared, "score"], rows_b.set_index("item").loc[shared, "score"])
        row.update(mcnemar_a_only=test["a_only"], mcnemar_b_only=test["b_only"], mcnemar_p=test["p"])
    else:
        row.update(mcnemar_a_only=None, mcnemar_b_only=None, mcnemar_p=None)
        notes.append(f"McNemar's test needs one score per item and system; the data have up to {runs}: "
                     "select one run of each system with --where to compute it")
    return row


def _normal_interval(estimate: float, se: float, level: float) -> dict:
    z = ndtri(0.5 + level / 2.0)
    p = float(2.0 * ndtr(-abs(estimate / se))) if se > 0 else float("nan")
    return {"low": estimate - z * se, "high": estimate + z * se, "p": p}


def _indent(table: pd.DataFrame) -> str:
    text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}", na_rep="-")
    return "\n".join("  " + line for line in text.splitlines())
