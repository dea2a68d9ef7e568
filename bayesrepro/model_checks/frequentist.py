"""The model check of a frequentist fit: its simulated data sets, residuals, level effects and figures."""

from __future__ import annotations

import numpy as np

from .. import limits
from ..errors import BayesreproError
from .run import Grouping, band_finding, fitted_finding, levels_finding, residual_checks, standardized_levels

CHECK_SIMULATIONS = limits.CHECK_SIMULATIONS
RESIDUAL_SIMULATIONS = 250     # simulated data sets behind ``Fit.residuals(kind="quantile")``
KINDS = ("response", "pearson", "deviance", "quantile")


def rows_frame(fit, what: str):
    """The fit's model frame, which must hold its rows."""
    frame = fit._require_frame(what)
    if not frame.has_rows:
        raise BayesreproError(f"{what} need the rows in memory: use --engine memory")
    return frame


def fit_residuals(fit, kind: str, seed) -> np.ndarray:
    """``Fit.residuals``: one residual per row of the fitted data (see its docstring)."""
    from .residuals import deviance_residuals, pearson_residuals, quantile_residuals
    from .simulation import simulated_scores

    if kind not in KINDS:
        raise BayesreproError(f"--kind '{kind}' is unknown; choose one of: {', '.join(KINDS)}")
    frame = rows_frame(fit, "residuals")
    seed = None if seed is None else limits.SEED.check(seed)
    if kind == "quantile":
        simulated = simulated_scores(fit, RESIDUAL_SIMULATIONS, seed)
        return quantile_residuals(frame.y, simulated, np.random.default_rng(_second_stream(seed)))
    fitted = fit.predict()
    if kind == "response":
        scale = 1.0 if frame.trials is None else frame.trials
        return frame.y / scale - fitted
    residual = pearson_residuals if kind == "pearson" else deviance_residuals
    return residual(frame.y, fitted, fit.family.binary, frame.trials)


def check_fit(fit, seed, simulations: int):
    """``Fit.check``: the frequentist model check (see its docstring)."""
    from ..api.model_check import ModelCheck, residual_frame
    from .residuals import pearson_residuals
    from .simulation import simulated_scores

    simulations = CHECK_SIMULATIONS.check(simulations)
    seed = None if seed is None else limits.SEED.check(seed)
    frame = rows_frame(fit, "model checks")
    limits.check_product(frame.n_obs * simulations, limits.MAX_POSTERIOR_VALUES, "simulated values (rows x simulations)",
                         "lower --simulations")
    simulated = simulated_scores(fit, simulations, seed)
    groups = [Grouping(g.name, g.codes, g.levels) for g in frame.groups]
    checked = residual_checks(frame.y, simulated, frame.X, groups, np.random.default_rng(_second_stream(seed)),
                              discrete=fit.family.binary)
    del simulated
    fitted = fit.predict()
    pearson = pearson_residuals(frame.y, fitted, fit.family.binary, frame.trials)
    formula = fit.engine_fit.formula
    what = "Pearson" if fit.family.binary else "response"
    panels = [("residuals against fitted", fitted_finding(fitted, pearson, what),
               drawing("residuals_against_fitted", fitted, pearson, "Residuals against fitted", f"{what} residual")),
              ("quantile residuals Q-Q", band_finding(checked.residuals, checked.band),
               drawing("uniform_qq", checked.residuals, checked.band, f"Quantile residuals ({simulations} simulations)"))]
    level_effects = fit.level_effects()
    effects = standardized_levels(level_effects, fit.engine_fit.varcorr())
    for group, table in effects.groupby("group", sort=False):
        panels.append((f"level effects Q-Q: {group}", levels_finding(table, group),
                       drawing("level_effects_qq", table, f"Level effects of {group}")))
    notes = checked.notes + list(level_effects.attrs.get("notes", []))
    return ModelCheck("frequentist", formula, fit.family.name, simulations, seed, checked, panels,
                      residual_frame(fitted, pearson, checked.residuals), notes)


def drawing(name: str, *args):
    """A function drawing ``figures.<name>(*args)`` on the axes it is given (or its own figure), importing
    matplotlib only when a figure is drawn."""
    def draw(ax=None):
        from . import figures

        return getattr(figures, name)(*args, ax=ax)

    return draw


def _second_stream(seed):
    """The randomization's own stream: the same seed gives the same residuals, independent of the simulations."""
    return None if seed is None else np.random.SeedSequence(seed).spawn(2)[1]
