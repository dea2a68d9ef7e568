"""Chance-corrected agreement: Krippendorff's α, Cohen's κ and Scott's π.

All three have the form 1 − D_o / D_e (observed over expected disagreement)
with a disagreement δ² between two values: δ² = [c ≠ k] for nominal data and
δ² = (c − k)² for interval data. They differ in D_e:

* Krippendorff's α (coincidence-matrix formulation, Krippendorff 2011): any
  number of raters, missing ratings allowed. In a unit with m_u ≥ 2 values
  every ordered pair of values from different ratings adds 1/(m_u − 1) to the
  coincidence matrix o_ck; n_c = Σ_k o_ck and n = Σ_c n_c. Then
  D_o = Σ o_ck δ²_ck / n and D_e = Σ n_c n_k δ²_ck / (n (n − 1)).
  Units with a single value are not pairable and are ignored.
* Cohen's κ (two raters): D_e pairs the two raters' own marginal
  distributions; with interval δ² it is the quadratically weighted κ.
* Scott's π (two raters): D_e uses the pooled marginal distribution of both
  raters (sampling pairs with replacement); α equals π up to the small-sample
  factor (n − 1)/n on D_e.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from ..data import level_labels, require_columns, row_reference
from ..readers import parse_numbers
from ..errors import BayesreproError

LEVELS = ("nominal", "interval")


@dataclass(frozen=True)
class AgreementResult:
    krippendorff_alpha: float
    cohen_kappa: float | None
    scott_pi: float | None
    n_items: int
    n_raters: int
    n_ratings: int
    level: str
    note: str

    def to_dict(self) -> dict:
        return asdict(self)


def krippendorff_alpha(ratings, level: str = "nominal") -> float:
    """α for a units × raters array; NaN (or None) marks a missing rating."""
    table = _ratings_table(ratings)
    units = np.repeat(np.arange(table.shape[0]), table.shape[1])
    return _alpha_long(units, table.ravel(), level)


def cohen_kappa(rater_a, rater_b, level: str = "nominal") -> float:
    """Cohen's κ for two raters (units rated by both); quadratic weights for ``level='interval'``."""
    joint, values = _joint_table(rater_a, rater_b)
    delta = _delta(values, level)
    observed = np.sum(joint * delta)
    expected = joint.sum(axis=1) @ delta @ joint.sum(axis=0)
    return _one_minus_ratio(observed, expected, "Cohen's kappa")


def scott_pi(rater_a, rater_b, level: str = "nominal") -> float:
    """Scott's π for two raters (units rated by both)."""
    joint, values = _joint_table(rater_a, rater_b)
    delta = _delta(values, level)
    pooled = (joint.sum(axis=1) + joint.sum(axis=0)) / 2
    return _one_minus_ratio(np.sum(joint * delta), pooled @ delta @ pooled, "Scott's pi")


def agreement(frame: pd.DataFrame, item: str | Sequence[str], rater: str, score: str,
              level: str = "nominal") -> AgreementResult:
    """All coefficients from long data: one row per rating.

    ``item`` names the column(s) whose combination is the unit of analysis.
    Each rater rates each unit at most once (a repeated rating is refused).
    κ and π are reported only for exactly two raters; otherwise they are None
    and ``note`` says why.
    """
    items = [item] if isinstance(item, str) else list(item)
    if not items:
        raise BayesreproError("--item needs at least one column that identifies the rated unit")
    require_columns(frame, items, "item column")
    require_columns(frame, [rater], "rater column")
    require_columns(frame, [score], "score column")
    _check_level(level)
    if rater in items:
        raise BayesreproError(f"--rater '{rater}' is also an --item column; the unit and the rater must differ")
    values = _ratings(frame, score)
    present = ~np.isnan(values)
    notes = []
    if not present.all():
        notes.append(f"{int((~present).sum())} rating(s) with a missing score treated as not given")
    rows = frame.loc[present]
    unit_codes = rows.groupby(items, observed=True, sort=False).ngroup().to_numpy()
    rater_codes, rater_names = pd.factorize(level_labels(rows[rater]))
    n_raters = len(rater_names)
    if n_raters < 2:
        raise BayesreproError(
            f"rater column '{rater}' has {n_raters} rater(s); agreement needs at least 2"
        )
    _refuse_repeated_ratings(frame, items, rater)
    scores = values[present]
    alpha = _alpha_long(unit_codes, scores, level)

    kappa = pi = None
    if n_raters != 2:
        notes.append(f"Cohen's kappa and Scott's pi are defined for exactly 2 raters, not {n_raters}")
    else:
        pairs = pd.DataFrame({"unit": unit_codes, "rater": rater_codes, "score": scores})
        wide = pairs.pivot(index="unit", columns="rater", values="score")
        kappa = cohen_kappa(wide[0], wide[1], level)
        pi = scott_pi(wide[0], wide[1], level)
    return AgreementResult(
        krippendorff_alpha=alpha, cohen_kappa=kappa, scott_pi=pi,
        n_items=int(len(np.unique(unit_codes))), n_raters=n_raters, n_ratings=int(len(scores)),
        level=level, note="; ".join(notes),
    )


def _refuse_repeated_ratings(frame: pd.DataFrame, items: list[str], rater: str) -> None:
    """One rating per (unit, rater): a repeated one would be counted as another rater's."""
    keys = pd.DataFrame({column: level_labels(frame[column]) for column in [*items, rater]})
    repeated = keys.duplicated(keep=False) & keys.notna().all(axis=1)
    if repeated.any():
        first = keys[repeated].iloc[0]
        unit = ", ".join(f"{column} {first[column]!r}" for column in items)
        raise BayesreproError(
            f"rater {first[rater]!r} rated the unit ({unit}) {int((keys == first).all(axis=1).sum())} times; "
            "each rater may rate each unit once: add the column that tells the ratings apart (an occasion) to --item"
        )


def _ratings(frame: pd.DataFrame, score: str) -> np.ndarray:
    """The ratings as numbers (NaN where not given), refusing text and infinite values."""
    values = frame[score]
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
    else:
        numbers, text = parse_numbers(values.astype(object))
        if text.any():
            row = int(np.argmax(text))
            raise BayesreproError(
                f"score column '{score}' is not numeric: {row_reference(frame.index, row)} holds {values.iloc[row]!r}; "
                "code the ratings as numbers"
            )
    if np.isinf(numbers).any():
        raise BayesreproError(f"score column '{score}' has infinite values; code the ratings as finite numbers")
    return numbers


def _alpha_long(units: np.ndarray, values: np.ndarray, level: str) -> float:
    _check_level(level)
    keep = ~pd.isna(values)
    units, values = np.asarray(units)[keep], np.asarray(values)[keep]
    unit_codes, _ = pd.factorize(units)
    value_codes, distinct = pd.factorize(values, sort=True)
    counts = np.zeros((unit_codes.max() + 1 if len(unit_codes) else 0, len(distinct)))
    np.add.at(counts, (unit_codes, value_codes), 1.0)
    m = counts.sum(axis=1)
    counts, m = counts[m >= 2], m[m >= 2]
    if counts.shape[0] == 0:
        raise BayesreproError("no unit has two or more ratings, so there is nothing to agree on")
    weighted = counts / (m - 1)[:, None]
    coincidence = counts.T @ weighted - np.diag(weighted.sum(axis=0))
    n_c = coincidence.sum(axis=1)
    n = n_c.sum()
    delta = _delta(np.asarray(distinct), level)
    observed = np.sum(coincidence * delta) / n
    expected = n_c @ delta @ n_c / (n * (n - 1))
    return _one_minus_ratio(observed, expected, "Krippendorff's alpha")


def _delta(values: np.ndarray, level: str) -> np.ndarray:
    _check_level(level)
    if level == "nominal":
        return 1.0 - np.eye(len(values))
    try:
        numbers = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise BayesreproError("interval agreement needs numeric ratings; use level 'nominal'") from None
    return (numbers[:, None] - numbers[None, :]) ** 2


def _joint_table(rater_a, rater_b):
    a = np.asarray(rater_a, dtype=object)
    b = np.asarray(rater_b, dtype=object)
    if a.shape != b.shape or a.ndim != 1:
        raise BayesreproError("the two raters' ratings must be 1-D and list the same units in the same order")
    both = ~(pd.isna(a) | pd.isna(b))
    if both.sum() < 1:
        raise BayesreproError("no unit is rated by both raters")
    codes, values = pd.factorize(np.concatenate([a[both], b[both]]), sort=True)
    k = int(both.sum())
    joint = np.zeros((len(values), len(values)))
    np.add.at(joint, (codes[:k], codes[k:]), 1.0 / k)
    return joint, np.asarray(values)


def _ratings_table(ratings) -> np.ndarray:
    table = np.asarray(ratings, dtype=object)
    if table.ndim != 2 or table.shape[1] < 2:
        raise BayesreproError(
            f"ratings must be a units x raters table with at least 2 raters, not shape {table.shape}"
        )
    return table


def _one_minus_ratio(observed: float, expected: float, name: str) -> float:
    if expected <= 0:
        raise BayesreproError(f"{name} is undefined: all ratings take the same value (no expected disagreement)")
    return float(1.0 - observed / expected)


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise BayesreproError(f"level (--level) must be one of {', '.join(LEVELS)}, not {level!r}")
