"""The binary fast path from a model frame to draws: cells, layout, compiled posterior, NUTS, reliability.

Variance components are on the latent scale of the link, where the residual is the
standard logistic variance π²/3 (logit) or 1 (probit) (Nakagawa & Schielzeth 2010).
"""

from __future__ import annotations

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
    the variance of every draw's realised level effects; the integrated factor's level effects are drawn when
    read.
    """
    cells = frame.binomial()
    residual = get_link(link).latent_residual
    layout = binary_layout(cells.successes, cells.trials, cells.fixed_cell, cells.codes,
                           [len(levels) for levels in cells.levels], link)
    model = build_binary_model(layout, cells.X_fixed, binary_priors(frame), frame.group_names, cells.levels)
    draws = sample_compiled(model.density, settings)
    variances = {name: draws[sd_name(name)] ** 2 for name in frame.group_names}
    variances[RESIDUAL] = np.full(draws.shape, residual)
    add_reliability(draws, variances, object)
    if effects:
        from .binary_effects import add_dominant_blocks, finite_population_variances

        realised = finite_population_variances(draws, model, cells.X_fixed, residual, settings.seed)
        add_reliability(draws, realised, object, prefix="fp_")
        add_dominant_blocks(draws, model, cells.X_fixed, cells.levels[layout.dominant], settings.seed)
    return draws, model.priors.table()
