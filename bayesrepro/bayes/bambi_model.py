"""Bambi's own model of the formula: the reference the fast path is checked against."""

from __future__ import annotations

import warnings

import numpy as np

from ..errors import BayesreproError
from ..design import ModelFrame
from .priors import PriorSpec, bambi_priors
from .sampling import check_sampling_options

FAMILIES = ("gaussian", "bernoulli")


def build_bambi_model(frame: ModelFrame, family: str = "gaussian", priors: PriorSpec | None = None,
                      noncentered: bool = True):
    """``bambi.Model`` of the frame's formula on the rows it uses; Gaussian priors from ``priors``.

    ``noncentered=False`` selects Bambi's centred parameterisation of the
    level effects, which mixes better when every level has many observations.
    """
    import bambi as bmb

    if family not in FAMILIES:
        raise BayesreproError(f"family '{family}' is not supported; choose one of: {', '.join(FAMILIES)}")
    columns = list(frame.spec.variables)
    data = frame.data[columns].copy()
    for group in frame.groups:
        for column in group.columns:
            data[column] = data[column].astype(str).astype("category")
    if family == "bernoulli":
        data[frame.response] = frame.y.astype(int)
    kwargs = {}
    if priors is not None and family == "gaussian":
        kwargs["priors"] = bambi_priors(priors)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
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


def fit_bambi(model, *, draws: int, tune: int, chains: int, seed: int | None, cores: int | None = None,
              sampler: str = "pymc", target_accept: float = 0.9, progressbar: bool = False):
    """Sample Bambi's model (PyMC's NUTS or nutpie); returns an ``arviz.InferenceData``."""
    from threadpoolctl import threadpool_limits

    check_sampling_options(draws, tune, chains, sampler)
    kwargs = dict(
        draws=draws, tune=tune, chains=chains, random_seed=seed, inference_method=sampler,
        progressbar=progressbar,
    )
    if sampler == "pymc":
        kwargs.update(cores=cores if cores is not None else min(chains, 2), target_accept=target_accept,
                      compute_convergence_checks=False)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*BLAS.*")
        warnings.filterwarnings("ignore", category=FutureWarning)
        return model.fit(**kwargs)


def level_effects(idata, frame: ModelFrame) -> dict:
    """Draws (chain, draw, level) of each factor's level effects from Bambi's posterior."""
    out = {}
    for group in frame.groups:
        name = f"1|{group.name}"
        if name in idata.posterior:
            out[group.name] = np.asarray(idata.posterior[name].values)
    return out
