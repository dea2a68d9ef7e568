"""Predictions and simulated responses of a frequentist fit, on the response scale (probabilities for binary
scores).

``predict`` gives Xβ plus each row's random effects at their conditional modes (lme4's ``predict``); a level the
fit has not seen adds nothing (``allow.new.levels = TRUE``: its population value), and without random effects
it is Xβ alone (``re.form = NA``). ``simulate`` draws new random effects from the fitted covariances and new
responses given them (lme4's ``simulate`` with ``use.u = FALSE``).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..data import is_categorical
from ..errors import BayesreproError, first_line
from .level_effects import FittedEffects

BLOCK_VALUES = 2 ** 20     # simulated values computed at a time (small temporaries: no page faults)


def predict(frame, family, fit, effects: FittedEffects | None, data: pd.DataFrame | None) -> np.ndarray:
    """Predictions for ``data`` (None: the fitted rows); ``effects`` None leaves the random effects out."""
    beta = np.asarray(fit.beta, dtype=float)
    if data is None:
        rows = frame.require_rows("predicting the fitted rows")
        X, table = rows.X, rows.data
    else:
        if not isinstance(data, pd.DataFrame):
            raise BayesreproError(f"data to predict must be a pandas DataFrame, not {type(data).__name__}")
        _require_columns(frame.spec, data, effects is not None)
        X, table = _fixed_rows(frame, data), data
    eta = X @ beta
    if effects is not None:
        eta = eta + random_part(frame.spec, effects, table)
    return response_scale(family, eta)


def response_scale(family, eta: np.ndarray) -> np.ndarray:
    if not family.binary:
        return eta
    from ..links import get_link

    return get_link(family.link).inverse(eta)


def random_part(spec, effects: FittedEffects, table: pd.DataFrame) -> np.ndarray:
    """Σ over the terms of each row's model-matrix row times its level's effects; unseen levels add 0."""
    total = np.zeros(len(table))
    for term, (labels, matrix) in zip(effects.terms, _term_rows(spec, effects, table)):
        codes = term.levels.get_indexer(labels)
        seen = codes >= 0
        total[seen] += np.einsum("ij,ij->i", matrix[seen], term.estimate[codes[seen]])
    return total


def simulate(frame, family, fit, effects: FittedEffects, n: int, seed) -> np.ndarray:
    """``n`` responses of every fitted row, (rows × n), random effects drawn afresh from the fitted covariances."""
    rows = frame.require_rows("simulating responses")
    rng = np.random.default_rng(seed)
    parts = []                       # per term: every row's level code, its model-matrix row, the levels' effects
    for term, (labels, matrix) in zip(effects.terms, _term_rows(rows.spec, effects, rows.data)):
        codes, levels = pd.factorize(pd.Index(labels))
        draws = rng.standard_normal((len(levels), term.covariance.shape[0], n))
        b = np.einsum("cd,ldk->lck", _root(term.covariance), draws)        # b_l ~ N(0, Σ) for every draw k
        parts.append((codes, matrix, b))
    intercepts = [(codes, b[:, 0]) for codes, matrix, b in parts if matrix.shape[1] == 1 and np.all(matrix == 1.0)]
    slopes = [(codes, matrix, b) for codes, matrix, b in parts if not (matrix.shape[1] == 1 and np.all(matrix == 1.0))]
    intercepts = _merged_intercepts(intercepts, rows.n_obs)
    fixed = rows.X @ np.asarray(fit.beta, dtype=float)
    sd = None if family.binary else np.sqrt(fit.residual_variance)
    eta = np.empty((rows.n_obs, n))
    step = max(1, BLOCK_VALUES // n)
    for start in range(0, rows.n_obs, step):     # blocks of rows: the temporaries stay small (no page faults)
        block = slice(start, min(start + step, rows.n_obs))
        part = eta[block]
        part[:] = fixed[block, None]
        for codes, table in intercepts:          # a random intercept: each row adds its level's effect
            part += table[codes[block]]
        for codes, matrix, b in slopes:
            part += np.einsum("ic,ick->ik", matrix[block], b[codes[block]])
        if sd is not None:                       # the noise drawn block after block: one stream, row by row
            part += sd * rng.standard_normal(part.shape)
    if sd is not None:
        return eta
    trials = np.ones(rows.n_obs) if rows.trials is None else rows.trials
    probability = response_scale(family, eta)
    return rng.binomial(np.repeat(trials.astype(np.int64)[:, None], n, axis=1), probability).astype(float)


def _merged_intercepts(intercepts: list, n_rows: int) -> list:
    """Random intercepts as few (codes, effects) pairs to look up per row: the terms of few levels merged into
    one table of their effects' sums over every combination of their levels (one lookup per row, not one per
    term; a grid of six facets of 2–3 levels is one table of at most a few hundred rows)."""
    limit = max(1, n_rows // 8)
    merged, codes, table = [], None, None
    for term_codes, effects in sorted(intercepts, key=lambda pair: len(pair[1])):
        if table is None and len(effects) <= limit:
            codes, table = term_codes, effects
        elif table is not None and len(table) * len(effects) <= limit:
            codes = codes * len(effects) + term_codes
            table = (table[:, None, :] + effects[None, :, :]).reshape(-1, effects.shape[1])
        else:
            merged.append((term_codes, effects))
    return merged if table is None else [(codes, table), *merged]


def _root(covariance: np.ndarray) -> np.ndarray:
    """C with CC' = Σ, for a singular Σ too (a correlation of ±1, a variance at zero)."""
    values, vectors = np.linalg.eigh(covariance)
    return vectors * np.sqrt(np.maximum(values, 0.0))


def _term_rows(spec, effects: FittedEffects, table: pd.DataFrame):
    """Per term: each row's level label and its model-matrix row, coded as in the fit."""
    from ..design.random_design import term_rows

    if spec.has_slopes:
        built = term_rows(spec, table.reset_index(drop=True))
    else:
        built = [(None, None, np.ones((len(table), 1)), ("Intercept",)) for _ in spec.random_terms]
    for term, (_, _, matrix, columns) in zip(effects.terms, built):
        if len(columns) != len(term.columns):
            raise BayesreproError(f"the new data code random-effect term '{term.term.text}' with other columns "
                                  f"({', '.join(columns)}) than the fit ({', '.join(term.columns)}); give rows "
                                  "holding every category of its slope variables")
        yield _labels(table, term.term.factor), matrix


def _labels(table: pd.DataFrame, factor: tuple[str, ...]) -> pd.Index:
    """Each row's level of ``factor`` as the fit labels it (text; ``a:b`` for an interaction)."""
    parts = [table[column].astype(str).reset_index(drop=True) for column in factor]
    joined = parts[0].str.cat(parts[1:], sep=":") if len(parts) > 1 else parts[0]
    return pd.Index(joined)


def _require_columns(spec, data: pd.DataFrame, with_random: bool) -> None:
    needed = list(spec.fixed_variables)
    if with_random:
        for term in spec.random_terms:
            needed += [*term.factor, *term.slope_variables]
    for column in dict.fromkeys(needed):
        if column not in data.columns:
            raise BayesreproError(f"data has no column '{column}', which the formula {spec.formula!r} needs")
        if data[column].isna().any():
            raise BayesreproError(f"column '{column}' of data has missing values; drop or fill those rows")


def _fixed_rows(frame, data: pd.DataFrame) -> np.ndarray:
    """The fixed design of new rows, coded with the fit's levels; a new category of a fixed factor is refused."""
    for column in frame.spec.fixed_variables:
        if column in frame.cells.columns and is_categorical(frame.cells[column]):
            known = set(pd.Series(frame.cells[column]).astype(str))
            new = [value for value in pd.unique(data[column].astype(str)) if value not in known]
            if new:
                raise BayesreproError(f"column '{column}' holds '{new[0]}', a category of a fixed effect the fit has "
                                      "not seen; predictions need the fit's categories of fixed factors")
    table = data.reset_index(drop=True)
    if frame.spec.response not in table:
        table = table.assign(**{frame.spec.response: 0.0})
    for column in frame.spec.fixed_variables:
        if column in frame.cells.columns and is_categorical(frame.cells[column]) \
                and not isinstance(frame.cells[column].dtype, pd.CategoricalDtype):
            table[column] = table[column].astype(str)
    try:
        return frame.design_rows(table)
    except Exception as exc:   # formulae raises pandas/numpy errors from inside term evaluation
        raise BayesreproError(f"could not build the fixed effects of the new data: {first_line(exc)}") from None
