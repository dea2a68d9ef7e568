"""Finite-population variance components of the binary fast path: the variance of each draw's realised effects.

The sampled factors' level effects are part of every draw. The dominant factor's are
drawn afterwards, per draw, from their exact conditional given it (an item's effect
depends only on its profile and total successes, or pattern under probit, see ``binary_layout``), and only their
realised variance is kept: 10,000 items × 4,000 draws would be 320 MB.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..reliability import RESIDUAL
from .binary_density import LINK_CODES, dominant_effect_variance
from .binary_model import BinaryModel, sd_name


def finite_population_variances(draws, model: BinaryModel, X_fixed: np.ndarray, residual: float,
                                seed: int | None) -> dict:
    """Realised variance of every factor's effects, per draw (chain, draw); the residual stays ``residual``."""
    layout = model.layout
    eta = np.einsum("cdp,kp->cdk", draws["fixed"], np.asarray(X_fixed)[layout.config_fixed])
    variances = {}
    for k, g in enumerate(layout.sampled):
        name = model.group_names[g]
        effects = draws[f"1|{name}"]
        eta += effects[..., layout.config_codes[k]]
        variances[name] = np.var(effects, axis=-1, ddof=1)
    log_sigma = np.log(draws[sd_name(model.dominant)])
    chains = eta.shape[0]
    seeds = np.random.default_rng(np.random.SeedSequence(seed).spawn(2)[1] if seed is not None else None).integers(
        0, 2**31, chains)

    def chain(c):  # numba releases the GIL: two chains at a time
        return dominant_effect_variance(
            LINK_CODES[layout.link], np.ascontiguousarray(eta[c]), np.ascontiguousarray(log_sigma[c]),
            layout.profile_start, layout.profile_config, layout.profile_trials, layout.profile_low, layout.profile_high,
            layout.pair_start, layout.pair_successes, layout.pattern_start, layout.pattern_entry,
            layout.pattern_successes, layout.pair_count, int(seeds[c]),
        )

    with ThreadPoolExecutor(max_workers=2) as pool:
        variances[model.dominant] = np.stack(list(pool.map(chain, range(chains))))
    ordered = {name: variances[name] for name in model.group_names}
    ordered[RESIDUAL] = np.full(log_sigma.shape, residual)
    return ordered
