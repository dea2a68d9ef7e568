"""The binary fast path's effects of the integrated factor: finite-population variances and level draws.

The sampled factors' level effects are part of every draw. The dominant factor's are
drawn afterwards, per draw, from their exact conditional given it (an item's effect
depends only on its profile and total successes, or pattern under probit, see ``binary_layout``). For the
finite-population components only their realised variance is kept: 10,000 items × 4,000 draws would be 320 MB;
the level summaries read them a block of items at a time (``add_dominant_blocks``).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ..reliability import RESIDUAL
from .binary_density import LINK_CODES, dominant_effect_draws, dominant_effect_variance
from .binary_model import BinaryModel, sd_name


def finite_population_variances(draws, model: BinaryModel, X_fixed: np.ndarray, residual: float,
                                seed: int | None) -> dict:
    """Realised variance of every factor's effects, per draw (chain, draw); the residual stays ``residual``."""
    layout = model.layout
    eta = configuration_predictors(draws, model, X_fixed)
    variances = {}
    for g in layout.sampled:
        name = model.group_names[g]
        variances[name] = np.var(draws[f"1|{name}"], axis=-1, ddof=1)
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


def configuration_predictors(draws, model: BinaryModel, X_fixed: np.ndarray) -> np.ndarray:
    """Every configuration's linear predictor without the dominant factor, per draw (chain, draw, configuration)."""
    layout = model.layout
    eta = np.einsum("cdp,kp->cdk", draws["fixed"], np.asarray(X_fixed)[layout.config_fixed])
    for k, g in enumerate(layout.sampled):
        eta += draws[f"1|{model.group_names[g]}"][..., layout.config_codes[k]]
    return eta


def add_dominant_blocks(draws, model: BinaryModel, X_fixed: np.ndarray, levels, seed: int | None) -> None:
    """Register the dominant factor's effects (``1|<factor>``, chain × draw × level) with ``draws``: drawn when
    read, a block of levels at a time, each block from its own seed (the same draws at every read)."""
    from .draws import LEVEL_BLOCK_VALUES

    layout = model.layout
    if np.any(layout.level_pair < 0):
        raise ValueError("every level of the integrated factor is scored in the binary layout")
    pair_profile = np.repeat(np.arange(layout.n_profiles), np.diff(layout.pair_start)).astype(np.int64)
    order = np.argsort(layout.level_pair, kind="stable")
    base = seed if seed is not None else np.random.SeedSequence().entropy
    name = f"1|{model.dominant}"

    def blocks():
        eta = configuration_predictors(draws, model, X_fixed)
        log_sigma = np.log(draws[sd_name(model.dominant)])
        chains, n_draws = log_sigma.shape
        size = max(1, LEVEL_BLOCK_VALUES // (chains * n_draws))
        for j, start in enumerate(range(0, len(order), size)):
            chosen = order[start:start + size]
            seeds = np.random.SeedSequence([base, j]).generate_state(chains) % 2**31

            def chain(c, chosen=chosen, seeds=seeds):
                return dominant_effect_draws(
                    LINK_CODES[layout.link], np.ascontiguousarray(eta[c]), np.ascontiguousarray(log_sigma[c]),
                    layout.profile_start, layout.profile_config, layout.profile_trials, layout.profile_low,
                    layout.profile_high, layout.pair_start, layout.pair_successes, layout.pattern_start,
                    layout.pattern_entry, layout.pattern_successes, pair_profile,
                    np.ascontiguousarray(layout.level_pair[chosen]), int(seeds[c]))

            with ThreadPoolExecutor(max_workers=2) as pool:
                yield chosen, np.stack(list(pool.map(chain, range(chains))))

    dim = f"{model.dominant}__level"
    draws.add_level_blocks(name, blocks, (dim,), {dim: [str(level) for level in levels]})
