"""Bambi's own model of the formula: the reference the fast path is checked against."""

from __future__ import annotations

import numpy as np

from ..design import ModelFrame
from ..errors import BayesreproError
from ..runtime import numerical_work
from .priors import PriorSpec, bambi_priors
from .sampling import SamplingSettings, interrupts_raised, library_progress, require_complete, sampled_shape

FAMILIES = ("gaussian", "bernoulli", "binomial")


def build_bambi_model(frame: ModelFrame, family: str = "gaussian", priors: PriorSpec | None = None,
                      noncentered: bool = True, link: str | None = None):
    """``bambi.Model`` of the frame's formula on the rows it uses; Gaussian priors from ``priors``.

    ``noncentered=False`` selects Bambi's centred parameterisation of the
    level effects, which mixes better when every level has many observations.
    """
    import bambi as bmb

    if family not in FAMILIES:
        raise BayesreproError(f"family '{family}' is not supported; choose one of: {', '.join(FAMILIES)}")
    frame = frame.require_rows("Bambi's own model (--backend bambi)")
    columns = list(frame.spec.variables)
    data = frame.data[columns].copy()
    for group in frame.groups:
        for column in group.columns:
            data[column] = data[column].astype(str).astype("category")
    if family != "gaussian":
        data[frame.response] = frame.y.astype(int)
    kwargs = {}
    if priors is not None and family == "gaussian":
        kwargs["priors"] = bambi_priors(priors)
    try:
        with numerical_work():
            if link is not None and family != "gaussian":
                kwargs["link"] = link
            return bmb.Model(frame.formula, data, family=family, noncentered=noncentered, **kwargs)
    except Exception as exc:  # formulae/Bambi raise their own types
        raise BayesreproError(f"Bambi could not build {frame.formula!r}: {str(exc).splitlines()[0]}") from None


def bambi_prior_table(model):
    """Bambi's priors of every term, as text (works for any family)."""
    import pandas as pd

    rows = []
    for component in model.components.values():
        terms = getattr(component, "terms", None)
        if terms:
            rows += [(name, str(term.prior)) for name, term in terms.items()]
        elif getattr(component, "prior", None) is not None:
            rows.append((component.name, str(component.prior)))
    return pd.DataFrame(rows, columns=["parameter", "prior"])


def fit_bambi(model, settings: SamplingSettings):
    """Sample Bambi's model (PyMC's NUTS or nutpie); returns an ``arviz.InferenceData`` with every draw asked for."""
    sampler = settings.sampler_or("pymc")
    kwargs = dict(
        draws=settings.draws, tune=settings.tune, chains=settings.chains, random_seed=settings.seed,
        inference_method=sampler,
    )
    if sampler == "pymc":
        kwargs.update(cores=settings.n_cores, target_accept=settings.target_accept, compute_convergence_checks=False)
    with numerical_work(), interrupts_raised(), library_progress(settings) as progressbar:
        idata = model.fit(progressbar=progressbar, **kwargs)
    require_complete(sampled_shape(idata), settings)
    return idata


def level_effects(draws, frame: ModelFrame) -> dict:
    """Draws (chain, draw, level) of each factor's level effects from Bambi's posterior (a ``draws.Draws``)."""
    out = {}
    for group in frame.groups:
        name = f"1|{group.name}"
        if name in draws:
            out[group.name] = np.asarray(draws[name])
    return out


def fixed_draws(draws, frame: ModelFrame) -> np.ndarray:
    """Draws (chain, draw, coefficient) of the fixed coefficients from Bambi's posterior, in the frame's column order.

    Bambi stores one variable per fixed term (its ``Intercept`` already on the uncentred design).
    """
    shape = draws.shape
    out = np.empty((*shape, len(frame.fixed_names)))
    for name, columns in frame.fixed_term_columns.items():
        values = np.asarray(draws[name]).reshape(*shape, -1) if name in draws else None
        if values is None or values.shape[-1] != len(range(*columns.indices(out.shape[-1]))):
            raise BayesreproError(f"Bambi's posterior has no draws of the fixed term '{name}' as the model frame "
                                  "lays it out; report this formula as a bug")
        out[..., columns] = values
    return out
