"""Circularity test: do a model's predictions merely restate a defining rule?

A target that is *defined* from some input features (a score computed from
cut-offs on a lab value) lets a model reach high accuracy by learning the
definition. The test explains the model's predictions — not the target —
with generalized additive models (one smooth term per feature, statsmodels
``GLMGam`` with cubic B-splines, Gaussian family) over candidate feature
subsets and ranks them by the deviance explained, D² = 1 − deviance /
null deviance. Subsets within ``tie_tolerance`` of the best D² count as tied
and the least complex of them (fewest features, then highest D²) is the
candidate. Nullification check: once the candidate's smooths are in, the
other features' smooths add nothing — the GAM with every feature explains
at most ``tie_tolerance`` more deviance than the candidate's. Reported
alongside, for plots and reading: the range of each other feature's partial
effect in the full GAM relative to the range of the predictions (correlated
features can trade small wiggles, so the range is descriptive, not the test).

The verdict needs to know which features define the target (``defining``):
the model is flagged as circular when the candidate uses only defining
features, explains at least ``d2_threshold`` of the deviance and the other
features are nullified. Without ``defining`` the result reports the
candidate and leaves the verdict open.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from .. import limits
from ..errors import BayesreproError

MAX_SUBSETS = 1000
# An unpenalised GAM with k coefficients explains about (k − 1)/(n − 1) of the
# deviance of predictions unrelated to the features; at 10 rows per
# coefficient that is at most 0.1, below the margins the verdict rests on.
ROWS_PER_COEFFICIENT = 10


@dataclass(frozen=True)
class CircularityResult:
    ranking: pd.DataFrame           # subset, size, d2 — best first
    candidate: tuple[str, ...]
    candidate_d2: float
    full_d2: float
    effect_ranges: dict[str, float]  # range of each other feature's smooth in the full GAM / range of predictions
    nullified: bool
    circular: bool | None
    defining: tuple[str, ...]
    defining_d2: float | None        # D² of the GAM on the defining features alone

    def to_dict(self) -> dict:
        return {
            "candidate": list(self.candidate),
            "candidate_d2": self.candidate_d2,
            "full_d2": self.full_d2,
            "nullified": self.nullified,
            "effect_ranges": self.effect_ranges,
            "circular": self.circular,
            "defining": list(self.defining),
            "defining_d2": self.defining_d2,
            "ranking": [
                {"subset": list(row.subset), "size": int(row.size), "d2": float(row.d2)}
                for row in self.ranking.itertuples()
            ],
        }


def circularity_test(features: pd.DataFrame, predictions, *, defining: Sequence[str] = (),
                     max_size: int | None = None, df: int = 10, tie_tolerance: float = 0.01,
                     d2_threshold: float = 0.9) -> CircularityResult:
    """Rank feature subsets by how much of the predictions' deviance their GAM explains."""
    X, names = _features(features)
    y = _predictions(predictions, len(X))
    for j, name in enumerate(names):
        if np.array_equal(X[:, j], y):
            raise BayesreproError(f"feature '{name}' holds the predictions themselves; leave it out of the features")
    defining = tuple(defining)
    for name in defining:
        if name not in names:
            raise BayesreproError(f"defining feature '{name}' is not among the features: {', '.join(names)}")
    if isinstance(df, str):
        raise BayesreproError(limits.GAM_DF.refusal(df))
    df = limits.GAM_DF.check(df)
    if not 0 <= tie_tolerance < 1:
        raise BayesreproError(f"--tie-tolerance must lie in [0, 1), not {tie_tolerance!r}")
    if not 0 < d2_threshold <= 1:
        raise BayesreproError(f"--d2-threshold must lie in (0, 1], not {d2_threshold!r}")
    if max_size is None:
        max_size = len(names)
    if not 1 <= max_size <= len(names):
        raise BayesreproError(f"--max-size must lie between 1 and {len(names)}, not {max_size}")
    n_subsets = sum(math.comb(len(names), k) for k in range(1, max_size + 1))
    if n_subsets > MAX_SUBSETS:
        raise BayesreproError(
            f"{n_subsets:,} feature subsets are too many to fit (at most {MAX_SUBSETS:,}); lower --max-size "
            f"or pass fewer features"
        )
    dfs = [_smooth_df(X[:, j], names[j], df) for j in range(len(names))]
    _require_rows_per_coefficient(len(y), dfs, df)
    rows = []
    for subset in (s for k in range(1, max_size + 1) for s in itertools.combinations(range(len(names)), k)):
        fit, _ = _fit_gam(X, y, subset, dfs)
        rows.append((tuple(names[j] for j in subset), len(subset), _d2(fit)))
    ranking = (pd.DataFrame(rows, columns=["subset", "size", "d2"])
               .sort_values(["d2", "size"], ascending=[False, True], kind="stable")
               .reset_index(drop=True))
    tied = ranking[ranking["d2"] >= ranking["d2"].iloc[0] - tie_tolerance]
    best = tied.sort_values(["size", "d2"], ascending=[True, False], kind="stable").iloc[0]
    candidate = tuple(best["subset"])

    everything = tuple(range(len(names)))
    full_fit, smoother = _fit_gam(X, y, everything, dfs)
    spread = np.ptp(y)
    effect_ranges = {}
    for j, name in enumerate(names):
        if name in candidate:
            continue
        columns = smoother.mask[j]
        partial = smoother.basis[:, columns] @ np.asarray(full_fit.params)[1:][columns]
        effect_ranges[name] = float(np.ptp(partial) / spread)
    full_d2 = _d2(full_fit)
    nullified = full_d2 - float(best["d2"]) <= tie_tolerance
    circular = defining_d2 = None
    if defining:
        defining_d2 = _d2(_fit_gam(X, y, tuple(sorted(names.index(d) for d in set(defining))), dfs)[0])
        circular = bool(set(candidate) <= set(defining) and best["d2"] >= d2_threshold and nullified)
    return CircularityResult(ranking, candidate, float(best["d2"]), full_d2, effect_ranges,
                             bool(nullified), circular, defining, defining_d2)


def _fit_gam(X, y, subset, dfs):
    from statsmodels.gam.api import BSplines, GLMGam

    columns = list(subset)
    smoother = BSplines(X[:, columns], df=[dfs[j] for j in columns], degree=[3] * len(columns))
    from statsmodels.tools.sm_exceptions import PerfectSeparationError

    exog = np.ones((len(y), 1))
    with warnings.catch_warnings():
        # near-perfect fits of deterministic predictions trigger harmless
        # convergence chatter; a failed fit is caught below
        warnings.simplefilter("ignore")
        try:
            fit = GLMGam(y, exog=exog, smoother=smoother).fit()
        except PerfectSeparationError:
            # the smooths reproduce the predictions exactly; the unpenalized
            # Gaussian GAM is then the least-squares fit on the same basis
            fit = _exact_fit(np.hstack([exog, smoother.basis]), y)
        except (np.linalg.LinAlgError, ValueError) as exc:
            names = ", ".join(str(j) for j in columns)
            raise BayesreproError(f"the GAM on feature columns {names} could not be fitted: {exc}") from None
    return fit, smoother


@dataclass(frozen=True)
class _ExactFit:
    params: np.ndarray
    deviance: float
    null_deviance: float


def _exact_fit(design, y) -> _ExactFit:
    params = np.linalg.lstsq(design, y, rcond=None)[0]
    return _ExactFit(params, float(np.sum((y - design @ params) ** 2)), float(np.sum((y - y.mean()) ** 2)))


def _d2(fit) -> float:
    if fit.null_deviance <= 0:
        raise BayesreproError("the predictions are constant; there is nothing to explain")
    return float(1.0 - fit.deviance / fit.null_deviance)


def _require_rows_per_coefficient(n_rows: int, dfs: list[int], df: int) -> None:
    """Refuse GAMs that would fit noise: D² of unrelated predictions is about (coefficients − 1)/(rows − 1)."""
    coefficients = 1 + sum(d - 1 for d in dfs)
    if n_rows < ROWS_PER_COEFFICIENT * coefficients:
        raise BayesreproError(
            f"the GAM on all {len(dfs)} feature(s) has {coefficients} coefficients (df {df} per smooth) but there are "
            f"only {n_rows} rows; the test needs at least {ROWS_PER_COEFFICIENT} rows per coefficient "
            f"({ROWS_PER_COEFFICIENT * coefficients}), else D² comes near 1 from overfitting alone: lower --df, "
            "pass fewer --features or add rows"
        )


def _smooth_df(column: np.ndarray, name: str, df: int) -> int:
    distinct = len(np.unique(column))
    if distinct < 5:
        raise BayesreproError(
            f"feature '{name}' has {distinct} distinct values; smooth terms need at least 5 — "
            "leave categorical features out of the circularity test"
        )
    return int(min(df, distinct - 1))


def _features(features):
    if not isinstance(features, pd.DataFrame) or features.shape[1] == 0:
        raise BayesreproError("features must be a DataFrame with one column per candidate feature")
    names = [str(c) for c in features.columns]
    repeated = [n for i, n in enumerate(names) if n in names[:i]]
    if repeated:
        raise BayesreproError(f"feature '{repeated[0]}' is named more than once")
    bad = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if bad:
        raise BayesreproError(f"feature '{bad[0]}' is not numeric; the circularity test needs numeric features")
    X = features.to_numpy(dtype=float)
    if not np.all(np.isfinite(X)):
        column = names[int(np.argmax(~np.isfinite(X).all(axis=0)))]
        raise BayesreproError(f"feature '{column}' has missing or infinite values; remove those rows")
    return X, names


def _predictions(predictions, n):
    try:
        y = np.asarray(predictions, dtype=float).ravel()
    except (TypeError, ValueError):
        raise BayesreproError("the model's predictions must be numbers") from None
    if len(y) != n:
        raise BayesreproError(f"there are {len(y)} predictions for {n} rows of features")
    if not np.all(np.isfinite(y)):
        raise BayesreproError("the predictions have missing or infinite values")
    if np.ptp(y) == 0:
        raise BayesreproError("the predictions are constant; there is nothing to explain")
    return y
