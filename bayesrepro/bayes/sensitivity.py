"""What the priors say, and how much the answer moves when they change."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import BayesreproError
from ..design import ModelFrame, build_model_frame, model_frame
from ..reliability import RESIDUAL, default_object, phi
from .posterior import interval
from .priors import DEFAULT_PRIOR, PRIOR_FAMILIES, PriorSpec, default_priors, response_moments


def prior_check(formula: str, data: pd.DataFrame, prior: str | PriorSpec = DEFAULT_PRIOR, object: str | None = None,
                draws: int = 4000, seed: int | None = None, prob: float = 0.95) -> pd.DataFrame:
    """Prior predictive check of the decomposition: prior intervals of every SD, of φ and of the
    total SD, next to the response's observed SD (which a sensible prior should cover)."""
    frame = build_model_frame(formula, data)
    spec = prior if isinstance(prior, PriorSpec) else default_priors(frame, _family(prior))
    names = [g.name for g in frame.groups] + [RESIDUAL]
    sd = prior_sd_draws(spec, names, draws, np.random.default_rng(seed))
    variances = {n: v**2 for n, v in sd.items()}
    object = object or default_object(variances, {g.name: g.n_levels for g in frame.groups})
    rows = [(f"sd[{n}]", *interval(sd[n], prob)) for n in names]
    rows.append(("total sd", *interval(np.sqrt(sum(variances.values())), prob)))
    rows.append((f"phi ({object})", *interval(phi(variances, object), prob)))
    table = pd.DataFrame(rows, columns=["quantity", "prior_median", "prior_low", "prior_high"]).set_index("quantity")
    table.attrs["observed_sd"] = response_moments(frame).y_sd
    return table


def prior_sd_draws(spec: PriorSpec, names: list[str], draws: int, rng) -> dict:
    """Independent draws of every component's SD from its prior (``names``: factors, then the residual)."""
    if spec.half_normal_sds:
        sd = {name: np.abs(rng.normal(0.0, spec.group_sigma[name], draws)) for name in names[:-1]}
        sd[RESIDUAL] = spec.residual_sigma * np.abs(rng.standard_t(spec.residual_nu, draws))
        return sd
    total = spec.total_sigma * np.abs(rng.standard_t(spec.total_nu, draws))
    shares = rng.dirichlet(np.full(len(names), spec.concentration), draws)
    return {name: total * np.sqrt(shares[:, k]) for k, name in enumerate(names)}


def prior_sensitivity(formula, data=None, *, scales=(0.5, 1.0, 2.0), prior: str = DEFAULT_PRIOR,
                      prob: float = 0.95, **fit_kwargs) -> pd.DataFrame:
    """Refit with every prior SD scale multiplied by each of ``scales``; φ and each component per row.

    ``formula`` is a formula (then ``data`` is read) or a model frame already
    built; every refit shares the one frame. A narrower (< 1) and a wider (> 1)
    prior bracket the default; where φ moves with the scale, the data do not
    pin it down and the prior is speaking.
    """
    from .fit import fit_bayes

    frame = formula if isinstance(formula, ModelFrame) else model_frame(formula, data)
    base = default_priors(frame, _family(prior))
    rows = []
    for scale in scales:
        fit = fit_bayes(frame, prior=base.scaled(scale), **fit_kwargs)
        row = {"scale": scale}
        for prefix, label in (("", "phi"), ("fp_", "phi_fp")):
            if f"{prefix}phi" in fit.draws:
                s = fit.phi(prob, finite_population=bool(prefix))
                row |= {label: s["median"], f"{label}_low": s["low"], f"{label}_high": s["high"]}
        for name, r in fit.summary(prob).iterrows():
            row[f"var[{name}]"] = r.variance
        row["converged"] = fit.diagnostics.converged
        rows.append(row)
    return pd.DataFrame(rows).set_index("scale")


def _family(prior: str) -> str:
    if prior not in PRIOR_FAMILIES:
        raise BayesreproError(f"prior '{prior}' is unknown; choose one of: {', '.join(PRIOR_FAMILIES)}")
    return prior
