"""How the binary fast path reads binomial cells: configurations, and levels of the dominant factor by profile.

The factor with the most levels (the items) is integrated out; the others and
the fixed effects are sampled. A *configuration* is what a cell has besides its
item: its fixed-design row and its levels of the sampled factors, so its linear
predictor η_k is the same for every item. Given everything sampled, item i
with effect u ~ N(0, σ²) contributes

    Σ_cells y (η_k + u) − n log(1 + exp(η_k + u))

whose data enter the integral over u only through the item's *profile* (the
configurations it was scored in, with their trials) and its total successes
s_i; the rest, Σ y η_k, adds up per configuration. On a complete grid every
item has the same profile, so 10,000 items × 60 configurations collapse into
at most 61 one-dimensional integrals, one per distinct success count.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class BinaryLayout:
    dominant: int                   # index (formula order) of the integrated factor
    sampled: tuple[int, ...]        # the other factors, formula order
    config_fixed: np.ndarray        # (K,) fixed-design row of each configuration
    config_codes: np.ndarray        # (len(sampled), K) level of each sampled factor
    config_successes: np.ndarray    # (K,) successes over all cells of the configuration
    profile_start: np.ndarray       # (P + 1,) profile p's entries are profile_start[p]:profile_start[p + 1]
    profile_config: np.ndarray      # configuration of each entry
    profile_trials: np.ndarray      # trials of each entry
    pair_start: np.ndarray          # (P + 1,) profile p's success counts are pair_start[p]:pair_start[p + 1]
    pair_successes: np.ndarray      # distinct total successes of the profile's levels, ascending
    pair_count: np.ndarray          # number of levels with that profile and total
    level_pair: np.ndarray          # (levels of the dominant factor,) the (profile, successes) pair of each level

    @property
    def n_configs(self) -> int:
        return len(self.config_fixed)

    @property
    def n_profiles(self) -> int:
        return len(self.profile_start) - 1


def binary_layout(successes, trials, fixed_cell, codes, sizes) -> BinaryLayout:
    """The layout of binomial cells: ``codes`` holds one level array per grouping factor (formula order)."""
    successes = np.asarray(successes, dtype=float)
    trials = np.asarray(trials, dtype=float)
    fixed_cell = np.asarray(fixed_cell, dtype=np.int64)
    codes = [np.asarray(c, dtype=np.int64) for c in codes]
    dominant = int(np.argmax(sizes))
    sampled = tuple(g for g in range(len(codes)) if g != dominant)

    config, first = _factorize([fixed_cell] + [codes[g] for g in sampled])
    n_configs = len(first)
    config_codes = np.array([codes[g][first] for g in sampled], dtype=np.int64).reshape(len(sampled), n_configs)
    config_successes = np.bincount(config, weights=successes, minlength=n_configs)

    level = codes[dominant]
    order = np.lexsort((config, level))
    level_sorted, config_sorted, trials_sorted = level[order], config[order], trials[order]
    bounds = np.flatnonzero(np.diff(level_sorted)) + 1
    starts = np.r_[0, bounds]
    stops = np.r_[bounds, len(order)]
    levels_present = level_sorted[starts]
    level_totals = np.add.reduceat(successes[order], starts)

    # levels share a profile when their (configuration, trials) sequences are identical
    entries = np.stack([config_sorted.astype(float), trials_sorted], axis=1)
    profiles: dict[bytes, int] = {}
    profile_of = np.empty(len(starts), dtype=np.int64)
    profile_entries = []
    for i, (a, b) in enumerate(zip(starts, stops)):
        key = entries[a:b].tobytes()
        if key not in profiles:
            profiles[key] = len(profiles)
            profile_entries.append(slice(a, b))
        profile_of[i] = profiles[key]
    lengths = np.array([s.stop - s.start for s in profile_entries], dtype=np.int64)
    picked = np.concatenate([np.arange(s.start, s.stop) for s in profile_entries])

    pair, pair_first = _factorize([profile_of, level_totals.astype(np.int64)])
    pair_profile = profile_of[pair_first]
    pair_successes = level_totals[pair_first]
    level_pair = np.full(int(sizes[dominant]), -1, dtype=np.int64)
    level_pair[levels_present] = pair
    return BinaryLayout(
        dominant=dominant,
        sampled=sampled,
        config_fixed=fixed_cell[first],
        config_codes=config_codes,
        config_successes=config_successes,
        profile_start=np.r_[0, np.cumsum(lengths)].astype(np.int64),
        profile_config=config_sorted[picked],
        profile_trials=trials_sorted[picked],
        pair_start=np.searchsorted(pair_profile, np.arange(len(profiles) + 1)).astype(np.int64),
        pair_successes=pair_successes,
        pair_count=np.bincount(pair, minlength=len(pair_first)).astype(float),
        level_pair=level_pair,
    )


def _factorize(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Code of each row's combination of ``columns`` (combinations in sorted order) and a first row of each."""
    stacked = np.stack([np.asarray(c, dtype=np.int64) for c in columns], axis=1)
    unique, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), first
