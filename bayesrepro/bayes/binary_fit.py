"""The binary fast path from a model frame to draws: cells, layout, compiled posterior, NUTS, reliability.

Variance components are on the latent scale of the link, where the residual is the
standard logistic variance π²/3 (logit) or 1 (probit) (Nakagawa & Schielzeth 2010).
"""

from __future__ import annotations

import functools

import numpy as np

from ..links import get_link
from ..reliability import RESIDUAL
from .binary_layout import binary_layout
from .binary_model import build_binary_model, sd_name
from .binary_priors import binary_priors
from .compiled_sampler import sample_compiled
from .posterior import add_reliability
from .sampling import SamplingSettings


def fit_binary(frame, object: str, settings: SamplingSettings, link: str, effects: bool = True):
    """Posterior draws of a Bernoulli or binomial model of ``frame`` with ``link``; returns (``draws.Draws``, prior table).

    With ``effects``, the finite-population components (``fp_variance``, ``fp_phi``) are added:
    the variance of every draw's realised level effects; they and the integrated factor's level effects are
    drawn when first read.
    """
    cells = frame.binomial()
    residual = get_link(link).latent_residual
    layout = binary_layout(cells.successes, cells.trials, cells.fixed_cell, cells.codes,
                           [len(levels) for levels in cells.levels], link)
    model = build_binary_model(layout, cells.X_fixed, binary_priors(frame), frame.group_names, cells.levels)
    draws = sample_compiled(model.density, settings)
    add_latent_reliability(draws, frame.group_names, link, object)
    if effects:
        from .binary_effects import add_dominant_blocks

        _add_finite_population(draws, model, cells.X_fixed, residual, object, settings.seed)
        add_dominant_blocks(draws, model, cells.X_fixed, cells.levels[layout.dominant], settings.seed)
    return draws, model.priors.table()


def add_latent_reliability(draws, group_names, link: str, object: str) -> None:
    """Register every component's variance, share and φ with ``draws`` on the link's latent scale: each factor's
    variance from its SD draws, the residual's fixed at the link's latent variance."""
    variances = {name: draws[sd_name(name)] ** 2 for name in group_names}
    variances[RESIDUAL] = np.full(draws.shape, get_link(link).latent_residual)
    add_reliability(draws, variances, object)


def _add_finite_population(draws, model, X_fixed, residual: float, object: str, seed) -> None:
    """Register ``fp_variance``, ``fp_share`` and ``fp_phi`` with ``draws``, computed together when one is first read:
    the realised variance of the items' effects draws every item's effect in every draw, seconds that a ranking
    of the fixed effects does not need."""
    from .binary_effects import finite_population_variances
    from .draws import Draws

    @functools.cache
    def components() -> Draws:
        held = Draws({})
        add_reliability(held, finite_population_variances(draws, model, X_fixed, residual, seed), object, prefix="fp_")
        return held

    names = {"component": [*model.group_names, RESIDUAL]}
    for name in ("fp_variance", "fp_share"):
        draws.add_deferred(name, lambda name=name: components()[name], ("component",), names)
    draws.add_deferred("fp_phi", lambda: components()["fp_phi"], attrs={"object": object})
