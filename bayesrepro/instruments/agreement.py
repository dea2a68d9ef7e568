"""Chance-corrected agreement: Krippendorff's α, Cohen's κ and Scott's π.

All three have the form 1 − D_o / D_e (observed over expected disagreement)
with a distance δ²_ck between two values c and k. They differ in D_e:

* Krippendorff's α (coincidence-matrix formulation, Krippendorff 2011,
  "Computing Krippendorff's Alpha-Reliability"): any number of coders, missing
  values allowed. In a unit with m_u ≥ 2 values every ordered pair of values
  from different coders adds 1/(m_u − 1) to the coincidence matrix o_ck;
  n_c = Σ_k o_ck and n = Σ_c n_c. Then D_o = Σ o_ck δ²_ck / n and
  D_e = Σ n_c n_k δ²_ck / (n (n − 1)). Units with a single value are not
  pairable and contribute nothing. The four levels of measurement differ in δ²:
  nominal [c ≠ k]; ordinal (Σ_{g=c..k} n_g − (n_c + n_k)/2)² over the values
  sorted by rank; interval (c − k)²; ratio ((c − k)/(c + k))².
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
from scipy import sparse

from ..data import require_columns, row_reference
from ..levels import level_labels
from ..errors import BayesreproError
from ..readers import parse_numbers

LEVELS = ("nominal", "ordinal", "interval", "ratio")
# κ and π pair each rater with its own or the pooled marginals; the ordinal distance is defined by
# α's coincidence marginals and the ratio one is not in their usual use, so they are given for these two only
TWO_RATER_LEVELS = ("nominal", "interval")
# distance entries evaluated at once when D_e is summed over all pairs of values
_BLOCK = 1 << 20


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


@dataclass(frozen=True)
class _LongRatings:
    """Ratings that are given: one per (unit, coder), the unit and coder as integer codes."""
    units: np.ndarray
    coders: np.ndarray
    values: np.ndarray
    n_coders: int
    n_missing: int


def krippendorff_alpha(data, *, unit: str | Sequence[str] | None = None, coder: str | None = None,
                       value: str | None = None, level: str = "interval") -> float:
    """Krippendorff's alpha of coders who assigned values to units.

    Computed from the coincidence matrix (Krippendorff 2011, "Computing
    Krippendorff's Alpha-Reliability"): any number of coders, missing values
    allowed; a unit with fewer than two values is not pairable and contributes
    nothing.

    Parameters
    ----------
    data : pandas.DataFrame or array_like
        Either a DataFrame in long format, one row per value a coder assigned
        to a unit (give `unit`, `coder` and `value`), or a 2-D table with one
        row per unit and one column per coder (leave them out). A missing
        value (NaN or None) is a value not given.
    unit : str or sequence of str, optional
        The column(s) of `data` whose combination identifies the unit.
    coder : str, optional
        The column of `data` that identifies the coder. Each coder assigns
        each unit at most one value.
    value : str, optional
        The column of `data` with the value. Text is allowed for the nominal
        level only.
    level : {'interval', 'nominal', 'ordinal', 'ratio'}, default 'interval'
        Level of measurement, which sets the distance between two values:
        nominal ``[c != k]``, ordinal by the ranks of the sorted values
        weighted by their frequencies, interval ``(c - k)**2``, ratio
        ``((c - k) / (c + k))**2`` (values must not be negative).

    Returns
    -------
    float
        Alpha: 1 is perfect agreement, 0 agreement at chance level; it is
        negative when disagreement exceeds chance.

    Raises
    ------
    BayesreproError
        For an unknown level, a column that is not in `data`, text values at
        a level other than nominal, fewer than two coders, a coder who
        assigned a unit two values, no unit with two values, or values that
        are all the same.

    Examples
    --------
    >>> import pandas as pd
    >>> ratings = pd.DataFrame({"unit": [1, 1, 2, 2, 3, 3], "coder": ["a", "b"] * 3,
    ...                         "value": [1, 1, 2, 3, 3, 3]})
    >>> round(krippendorff_alpha(ratings, unit="unit", coder="coder", value="value",
    ...                          level="ordinal"), 3)
    0.778
    """
    _check_level(level)
    named = {"unit": unit, "coder": coder, "value": value}
    if isinstance(data, pd.DataFrame):
        absent = [name for name, column in named.items() if column is None]
        if absent:
            raise BayesreproError(
                f"krippendorff_alpha of a DataFrame needs {', '.join(f'{name}=' for name in absent)}: "
                "the column(s) of the unit, the coder and the value"
            )
        ratings = _long_ratings(data, unit, coder, value, level, roles=("unit", "coder", "value"))
        return _alpha(ratings.units, ratings.values, level)
    given = [name for name, column in named.items() if column is not None]
    if given:
        raise BayesreproError(
            f"{', '.join(f'{name}=' for name in given)} name(s) columns of a DataFrame, but data is a "
            f"{type(data).__name__}; pass a DataFrame, or a units x coders table without them"
        )
    table = _ratings_table(data, level)
    units = np.repeat(np.arange(table.shape[0]), table.shape[1])
    return _alpha(units, table.ravel(), level)


def cohen_kappa(rater_a, rater_b, level: str = "nominal") -> float:
    """Cohen's κ for two raters (units rated by both); quadratic weights for ``level='interval'``."""
    joint, distance = _joint_table(rater_a, rater_b, level, "Cohen's kappa")
    observed = np.sum(joint * distance)
    expected = joint.sum(axis=1) @ distance @ joint.sum(axis=0)
    return _one_minus_ratio(observed, expected, "Cohen's kappa")


def scott_pi(rater_a, rater_b, level: str = "nominal") -> float:
    """Scott's π for two raters (units rated by both)."""
    joint, distance = _joint_table(rater_a, rater_b, level, "Scott's pi")
    pooled = (joint.sum(axis=1) + joint.sum(axis=0)) / 2
    return _one_minus_ratio(np.sum(joint * distance), pooled @ distance @ pooled, "Scott's pi")


def agreement(frame: pd.DataFrame, item: str | Sequence[str], rater: str, score: str,
              level: str = "nominal") -> AgreementResult:
    """All coefficients from long data: one row per rating.

    ``item`` names the column(s) whose combination is the unit of analysis.
    Each rater rates each unit at most once (a repeated rating is refused).
    κ and π are reported only for exactly two raters and the nominal or
    interval level; otherwise they are None and ``note`` says why.
    """
    _check_level(level)
    ratings = _long_ratings(frame, item, rater, score, level, roles=("item", "rater", "score"))
    notes = []
    if ratings.n_missing:
        notes.append(f"{ratings.n_missing} rating(s) with a missing score treated as not given")
    alpha = _alpha(ratings.units, ratings.values, level)

    kappa = pi = None
    if ratings.n_coders != 2:
        notes.append(f"Cohen's kappa and Scott's pi are defined for exactly 2 raters, not {ratings.n_coders}")
    elif level not in TWO_RATER_LEVELS:
        notes.append(f"Cohen's kappa and Scott's pi are given for the levels {' and '.join(TWO_RATER_LEVELS)}, "
                     f"not {level}")
    else:
        pairs = pd.DataFrame({"unit": ratings.units, "rater": ratings.coders, "score": ratings.values})
        wide = pairs.pivot(index="unit", columns="rater", values="score")
        kappa = cohen_kappa(wide[0], wide[1], level)
        pi = scott_pi(wide[0], wide[1], level)
    return AgreementResult(
        krippendorff_alpha=alpha, cohen_kappa=kappa, scott_pi=pi,
        n_items=int(len(np.unique(ratings.units))), n_raters=ratings.n_coders, n_ratings=int(len(ratings.values)),
        level=level, note="; ".join(notes),
    )


def _long_ratings(frame: pd.DataFrame, unit, coder: str, value: str, level: str,
                  roles: tuple[str, str, str]) -> _LongRatings:
    """The given ratings of long data; ``roles`` are the caller's names of the unit, coder and value."""
    unit_role, coder_role, value_role = roles
    units = [unit] if isinstance(unit, str) else list(unit)
    if not units:
        raise BayesreproError(f"{unit_role} needs at least one column that identifies the rated unit")
    require_columns(frame, units, f"{unit_role} column")
    require_columns(frame, [coder], f"{coder_role} column")
    require_columns(frame, [value], f"{value_role} column")
    if coder in units:
        raise BayesreproError(
            f"{coder_role} column '{coder}' is also a {unit_role} column; the unit and the {coder_role} must differ"
        )
    for column, role in [*((column, unit_role) for column in units), (coder, coder_role)]:
        missing = int(frame[column].isna().sum())
        if missing:
            raise BayesreproError(
                f"{role} column '{column}' has {missing} missing value(s); drop those rows or fill them in"
            )
    values = _values(frame, value, level, value_role)
    present = ~pd.isna(values)
    rows = frame.loc[present]
    coder_codes, coder_names = pd.factorize(rows[coder])
    if len(coder_names) < 2:
        raise BayesreproError(
            f"{coder_role} column '{coder}' has {len(coder_names)} {coder_role}(s) with a value; "
            "agreement needs at least 2"
        )
    _refuse_repeated_ratings(frame, units, coder, roles)
    return _LongRatings(
        units=rows.groupby(units, observed=True, sort=False).ngroup().to_numpy(), coders=coder_codes,
        values=values[present], n_coders=len(coder_names), n_missing=int((~present).sum()),
    )


def _refuse_repeated_ratings(frame: pd.DataFrame, units: list[str], coder: str, roles: tuple[str, str, str]) -> None:
    """One rating per (unit, coder): a repeated one would be counted as another coder's."""
    keys = frame[[*units, coder]]
    repeated = keys.duplicated(keep=False).to_numpy()
    if repeated.any():
        first = keys.iloc[int(np.argmax(repeated))]
        times = int((keys == first).all(axis=1).sum())
        shown = keys[repeated].apply(level_labels).iloc[0]   # as the user wrote them, for the repeated rows only
        unit = ", ".join(f"{column} {shown[column]!r}" for column in units)
        raise BayesreproError(
            f"{roles[1]} {shown[coder]!r} rated the unit ({unit}) {times} times; "
            f"each {roles[1]} may rate each unit once: add the column that tells the ratings apart (an occasion) "
            f"to the {roles[0]} columns"
        )


def _values(frame: pd.DataFrame, column: str, level: str, role: str) -> np.ndarray:
    """The values (NaN or None where not given): numbers, or at the nominal level text labels if any is not a number."""
    values = frame[column]
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
    else:
        numbers, text = parse_numbers(values.astype(object))
        if text.any() and level == "nominal":
            return level_labels(values).to_numpy(dtype=object)
        if text.any():
            row = int(np.argmax(text))
            raise BayesreproError(
                f"{role} column '{column}' is not numeric: {row_reference(frame.index, row)} holds "
                f"{values.iloc[row]!r}; the {level} level needs numbers: code the values as numbers or use level nominal"
            )
    _refuse_for_level(numbers, level, f"{role} column '{column}'")
    return numbers


def _alpha(units: np.ndarray, values: np.ndarray, level: str) -> float:
    """α of values assigned to units (any integer-like unit ids; missing values dropped)."""
    keep = ~pd.isna(values)
    unit_codes, _ = pd.factorize(np.asarray(units)[keep])
    values = np.asarray(values)[keep]
    pairable = np.bincount(unit_codes)[unit_codes] >= 2
    if not pairable.any():
        raise BayesreproError("no unit has values from two or more coders, so there is nothing to agree on")
    unit_codes, _ = pd.factorize(unit_codes[pairable])
    value_codes, distinct = pd.factorize(values[pairable], sort=True)
    # counts[u, c]: how often unit u got value c; a unit's row, weighted by 1 / (m_u - 1) and paired with
    # itself, gives its coincidences (the pairs of a value with itself only fill the diagonal, where δ² = 0)
    counts = sparse.csr_matrix((np.ones(len(value_codes)), (unit_codes, value_codes)),
                               shape=(unit_codes.max() + 1, len(distinct)))
    per_unit = np.asarray(counts.sum(axis=1)).ravel()
    pairs = (counts.T @ sparse.diags(1.0 / (per_unit - 1)) @ counts).tocoo()
    n_c = np.asarray(counts.sum(axis=0)).ravel()
    distance = _distance(np.asarray(distinct), n_c, level)
    observed = np.sum(pairs.data * distance(pairs.row, pairs.col))
    others = np.arange(len(distinct))
    step = max(1, _BLOCK // len(distinct))
    expected = sum(n_c[start:start + step] @ distance(others[start:start + step, None], others[None, :]) @ n_c
                   for start in range(0, len(distinct), step))
    return _one_minus_ratio(observed * (n_c.sum() - 1), expected, "Krippendorff's alpha")


def _distance(values: np.ndarray, n_c: np.ndarray, level: str):
    """δ² between the values with indices i and j (arrays), for sorted distinct ``values`` of frequencies ``n_c``."""
    _check_level(level)
    if level == "nominal":
        return lambda i, j: (i != j).astype(float)
    numbers = np.asarray(values, dtype=float)
    if level == "interval":
        return lambda i, j: (numbers[i] - numbers[j]) ** 2
    if level == "ratio":
        def ratio(i, j):
            total = numbers[i] + numbers[j]
            return np.divide(numbers[i] - numbers[j], total, out=np.zeros(np.shape(total)), where=total != 0) ** 2
        return ratio
    below = np.concatenate([[0.0], np.cumsum(n_c)])   # below[c]: frequency of the values ranked before c

    def ordinal(i, j):
        low, high = np.minimum(i, j), np.maximum(i, j)
        return (below[high + 1] - below[low] - (n_c[i] + n_c[j]) / 2) ** 2
    return ordinal


def _refuse_for_level(numbers: np.ndarray, level: str, what: str) -> None:
    if np.isinf(numbers).any():
        raise BayesreproError(f"{what} has infinite values; code the values as finite numbers")
    if level == "ratio" and (numbers < 0).any():
        raise BayesreproError(
            f"{what} holds {np.nanmin(numbers)}, but the ratio level needs values of at least 0 "
            "(distances from a true zero); use level 'interval'"
        )


def _joint_table(rater_a, rater_b, level: str, name: str):
    """The two raters' joint distribution over the values both use, and the distance between those values."""
    _check_level(level)
    if level not in TWO_RATER_LEVELS:
        raise BayesreproError(f"{name} is given for the levels {' and '.join(TWO_RATER_LEVELS)}, not {level!r}")
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
    index = np.arange(len(values))
    return joint, _distance(np.asarray(values), joint.sum(axis=0) + joint.sum(axis=1), level)(index[:, None], index)


def _ratings_table(ratings, level: str) -> np.ndarray:
    table = np.asarray(ratings)
    if table.ndim != 2 or table.shape[1] < 2:
        raise BayesreproError(
            f"ratings must be a units x coders table with at least 2 coders, not shape {table.shape}"
        )
    if table.dtype.kind in "biuf":
        numbers = table.astype(float)
    elif level == "nominal":
        return table.astype(object)
    else:
        numbers = _table_numbers(table.astype(object), level)
    _refuse_for_level(numbers, level, "the ratings")
    return numbers


def _table_numbers(table: np.ndarray, level: str) -> np.ndarray:
    try:
        return np.where(pd.isna(table), np.nan, table).astype(float)
    except (TypeError, ValueError):
        raise BayesreproError(f"the ratings hold text, but the {level} level needs numbers; "
                              "code them as numbers or use level 'nominal'") from None


def _one_minus_ratio(observed: float, expected: float, name: str) -> float:
    if expected <= 0:
        raise BayesreproError(f"{name} is undefined: all values are the same (no expected disagreement)")
    return float(1.0 - observed / expected)


def _check_level(level: str) -> None:
    if level not in LEVELS:
        raise BayesreproError(f"level must be one of {', '.join(LEVELS)}, not {level!r}")
