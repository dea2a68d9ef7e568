"""Posterior predictions of a Bayesian fit for its own rows or new ones: expected values and new scores.

Per posterior draw, a row's linear predictor is x'β plus, for every random-effect term, z'b of the row's level:
its drawn effect where the level was in the fit, else a draw from the population N(0, Σ) of that draw's SDs
and correlations, one per new level and draw, shared by the rows of that level (Bambi's ``sample_new_groups``,
brms's ``allow_new_levels``). ``kind="mean"`` is the expected score (the probability of a success for binary
models), ``kind="response"`` a new score drawn around it (Gaussian noise of the draw's σ, or Bernoulli/binomial
successes).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import BayesreproError
from .level_effects import effect_sources
from .posterior import check_probability

KINDS = ("mean", "response")


def predictive_draws(fit, data: pd.DataFrame | None = None, kind: str = "response", max_draws: int | None = None,
                     seed: int | None = 0) -> np.ndarray:
    """Draws (draws, rows) of the expected value (``kind="mean"``) or of a new score (``"response"``) of every row
    of ``data`` (default the fit's rows), at most ``max_draws`` draws spread evenly over the chains."""
    if kind not in KINDS:
        raise BayesreproError(f"--kind must be one of {', '.join(KINDS)}; got {kind!r}")
    frame = fit.frame
    if data is None:
        if not frame.has_rows:
            raise BayesreproError("this fit holds no rows (summed where the data live): pass --data with the rows "
                                  "to predict")
        data = frame.data
    if not isinstance(data, pd.DataFrame):
        raise BayesreproError(f"--data must be a table (pandas DataFrame); got {type(data).__name__}")
    chains, draws_per_chain = fit.draws.shape
    total = chains * draws_per_chain
    if max_draws is not None and (isinstance(max_draws, bool) or not isinstance(max_draws, (int, np.integer))
                                  or max_draws < 1):
        raise BayesreproError(f"--max-draws must be a positive whole number; got {max_draws!r}")
    kept = np.unique(np.linspace(0, total - 1, min(total, max_draws or total)).round().astype(int))
    rng = np.random.default_rng(seed)
    eta = _fixed_part(fit, data)[kept]
    eta += _random_part(fit, data, kept, rng)
    if fit.family == "gaussian":
        if kind == "mean":
            return eta
        sigma = fit.draws["sigma"].reshape(-1)[kept]
        return eta + sigma[:, None] * rng.standard_normal(eta.shape)
    from ..links import get_link

    mu = np.asarray(get_link(fit.link).inverse(eta), dtype=float)
    if kind == "mean":
        return mu
    return rng.binomial(_trials(frame, data), mu).astype(float)


def prediction_table(fit, data: pd.DataFrame | None = None, kind: str = "mean", prob: float = 0.95,
                     seed: int | None = 0) -> pd.DataFrame:
    """Posterior median, SD and central ``prob`` interval of every row's prediction (``predictive_draws``)."""
    prob = check_probability(prob)
    values = predictive_draws(fit, data, kind, seed=seed)
    low, median, high = np.quantile(values, [(1 - prob) / 2, 0.5, (1 + prob) / 2], axis=0)
    return pd.DataFrame({"median": median, "sd": values.std(axis=0, ddof=1), "low": low, "high": high})


def _fixed_part(fit, data: pd.DataFrame) -> np.ndarray:
    """x'β of every row, per draw (chains × draws, rows)."""
    frame = fit.frame
    for column in frame.spec.fixed_variables:
        if column not in data.columns:
            raise BayesreproError(f"the data to predict lack column '{column}' of the formula's fixed effects")
        fitted = frame.cells[column] if column in frame.cells.columns else None
        if fitted is not None and (isinstance(fitted.dtype, pd.CategoricalDtype)
                                   or not pd.api.types.is_numeric_dtype(fitted)):
            known = {str(v) for v in (fitted.cat.categories if isinstance(fitted.dtype, pd.CategoricalDtype)
                                      else fitted.unique())}
            new = sorted({str(v) for v in data[column].dropna()} - known)
            if new:
                raise BayesreproError(f"column '{column}' has level '{new[0]}', unseen in the fit: a fixed effect "
                                      f"has no estimate for it (make it a grouping factor, (1|{column}), to "
                                      "predict it)")
        if data[column].isna().any():
            raise BayesreproError(f"column '{column}' of the data to predict has missing values")
    rows = frame.design_rows(data.reset_index(drop=True))
    return _fixed_draws(fit) @ rows.T


def _fixed_draws(fit) -> np.ndarray:
    draws = fit.draws
    if "fixed" in draws:
        fixed = draws["fixed"]
    elif fit.backend == "bambi":
        from .bambi_model import fixed_draws

        fixed = fixed_draws(draws, fit.frame)
    else:
        raise BayesreproError("this posterior holds no fixed-effect draws: it was sampled with effects=False; "
                              "sample again with effects=True")
    return fixed.reshape(-1, fixed.shape[-1])


def _random_part(fit, data: pd.DataFrame, kept: np.ndarray, rng) -> np.ndarray:
    """Σ_terms z'b of every row, per kept draw: drawn effects of known levels, population draws for new ones."""
    frame = fit.frame
    out = np.zeros((len(kept), len(data)))
    sources = effect_sources(fit)
    matrices = _term_matrices(fit, data)
    for source in sources:
        labels = _row_levels(data, frame, source.group)
        index = {label: k for k, label in enumerate(source.levels)}
        codes = np.array([index.get(label, -1) for label in labels])
        known = np.unique(codes[codes >= 0])
        position = np.full(len(source.levels), -1)
        position[known] = np.arange(len(known))
        values = np.zeros((len(kept), len(known)))
        for levels, block in source.blocks():
            hit = position[levels] >= 0
            if hit.any():
                values[:, position[levels[hit]]] = block.reshape(-1, block.shape[-1])[kept][:, hit]
        z = matrices[(source.group, source.term)]
        rows = codes >= 0
        out[:, rows] += values[:, position[codes[rows]]] * z[rows]
    for group, terms, draw_new in _new_level_draws(fit, len(kept), kept, rng):
        labels = _row_levels(data, frame, group)
        known = set(next(s.levels for s in sources if s.group == group))
        new = sorted(set(labels) - known)
        if not new:
            continue
        effects = draw_new(len(new))                    # (draws, new levels, columns)
        code = {label: k for k, label in enumerate(new)}
        rows = np.array([label in code for label in labels])
        codes = np.array([code[label] for label in np.asarray(labels)[rows]])
        for c, term in enumerate(terms):
            out[:, rows] += effects[:, codes, c] * matrices[(group, term)][rows]
    return out


def _row_levels(data: pd.DataFrame, frame, group: str) -> list[str]:
    columns = next(g.columns for g in frame.groups if g.name == group) if frame.groups else group.split(":")
    for column in columns:
        if column not in data.columns:
            raise BayesreproError(f"the data to predict lack column '{column}' of grouping factor '{group}'")
    parts = [data[column].astype(str).to_numpy() for column in columns]
    if len(parts) == 1:
        return list(parts[0])
    return [":".join(values) for values in zip(*parts)]


def _term_matrices(fit, data: pd.DataFrame) -> dict:
    """The value z of every (group, term column) in every row: 1 for intercepts, the slope's column."""
    from .level_effects import INTERCEPT, lme4_term

    if not fit.terms:
        return {(g.name, INTERCEPT): np.ones(len(data)) for g in fit.frame.groups}
    from ..design.random_design import term_rows

    out = {}
    for term, layout, (_, _, matrix, columns) in zip(fit.frame.spec.random_terms, fit.terms,
                                                     term_rows(fit.frame.spec, data.reset_index(drop=True))):
        if tuple(columns) != tuple(layout.columns):
            raise BayesreproError(f"the data to predict give term '{term.text}' the columns {', '.join(columns)}, "
                                  f"the fit {', '.join(layout.columns)}: give them every level of its slopes")
        for c, column in enumerate(columns):
            out[(term.group, lme4_term(column))] = matrix[:, c]
    return out


def _new_level_draws(fit, n_draws: int, kept: np.ndarray, rng):
    """Per grouping term: its group, its term columns and a function drawing effects of k new levels from the
    population of every kept draw, (draws, k, columns)."""
    from .level_effects import INTERCEPT, lme4_term

    draws = fit.draws
    if not fit.terms:
        for g in fit.frame.groups:
            sd = draws[f"1|{g.name}_sigma"].reshape(-1)[kept]
            yield g.name, [INTERCEPT], lambda k, sd=sd: (sd[:, None] * rng.standard_normal((n_draws, k)))[..., None]
        return
    from .term_layout import term_covariances

    for term, layout in zip(fit.frame.spec.random_terms, fit.terms):
        factor = np.linalg.cholesky(term_covariances(draws, layout).reshape(-1, layout.nc, layout.nc)[kept])

        def new(k, factor=factor, nc=layout.nc):
            return np.einsum("dij,dkj->dki", factor, rng.standard_normal((n_draws, k, nc)))

        yield term.group, [lme4_term(c) for c in layout.columns], new


def _trials(frame, data: pd.DataFrame) -> np.ndarray:
    trials = frame.spec.trials
    if trials is None:
        return np.ones(len(data), dtype=np.int64)
    if isinstance(trials, str):
        if trials not in data.columns:
            raise BayesreproError(f"the data to predict lack column '{trials}', the trials of the binomial response")
        return data[trials].to_numpy(dtype=np.int64)
    return np.full(len(data), int(trials))
