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

Under the probit link the item's successes enter as Σ_cells y log Φ(η_k + u) +
(n − y) log Φ(−η_k − u): its integral depends on its whole *pattern* (the
successes in every configuration of its profile), and items share one only when
their patterns are equal. A pattern is stored sparsely, as the entries of its
profile that have successes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

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
    pair_start: np.ndarray          # (P + 1,) profile p's pairs are pair_start[p]:pair_start[p + 1]
    pair_successes: np.ndarray      # total successes of each pair (logit: distinct and ascending within a profile)
    pair_count: np.ndarray          # number of levels with that profile and total (probit: pattern)
    level_pair: np.ndarray          # (levels of the dominant factor,) the pair of each level
    link: str = "logit"
    # probit only (empty under logit): pair k's pattern is the entries pattern_entry[pattern_start[k]:pattern_start[k + 1]]
    # of the profile arrays, with successes pattern_successes[...]; every other entry of its profile has none
    pattern_start: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    pattern_entry: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    pattern_successes: np.ndarray = field(default_factory=lambda: np.zeros(0))
    profile_low: np.ndarray = field(default_factory=lambda: np.zeros(0))   # element-wise smallest pattern, per entry
    profile_high: np.ndarray = field(default_factory=lambda: np.zeros(0))  # element-wise largest

    @property
    def n_configs(self) -> int:
        return len(self.config_fixed)

    @property
    def n_profiles(self) -> int:
        return len(self.profile_start) - 1


def binary_layout(successes, trials, fixed_cell, codes, sizes, link: str = "logit") -> BinaryLayout:
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
    successes_sorted = successes[order]
    bounds = np.flatnonzero(np.diff(level_sorted)) + 1
    starts = np.r_[0, bounds]
    stops = np.r_[bounds, len(order)]
    levels_present = level_sorted[starts]
    level_totals = np.add.reduceat(successes_sorted, starts)

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
    profile_start = np.r_[0, np.cumsum(lengths)].astype(np.int64)

    if link == "logit":
        pair, pair_first = _factorize([profile_of, level_totals.astype(np.int64)])
    else:
        patterns: dict[bytes, int] = {}
        pattern_of = np.array([patterns.setdefault(successes_sorted[a:b].tobytes(), len(patterns))
                               for a, b in zip(starts, stops)], dtype=np.int64)
        pair, pair_first = _factorize([profile_of, pattern_of])
    pair_profile = profile_of[pair_first]
    level_pair = np.full(int(sizes[dominant]), -1, dtype=np.int64)
    level_pair[levels_present] = pair
    layout = BinaryLayout(
        dominant=dominant,
        sampled=sampled,
        config_fixed=fixed_cell[first],
        config_codes=config_codes,
        config_successes=config_successes,
        profile_start=profile_start,
        profile_config=config_sorted[picked],
        profile_trials=trials_sorted[picked],
        pair_start=np.searchsorted(pair_profile, np.arange(len(profiles) + 1)).astype(np.int64),
        pair_successes=level_totals[pair_first],
        pair_count=np.bincount(pair, minlength=len(pair_first)).astype(float),
        level_pair=level_pair,
        link=link,
    )
    if link == "logit":
        return layout
    return _with_patterns(layout, [successes_sorted[starts[i]:stops[i]] for i in pair_first], pair_profile)


def _with_patterns(layout: BinaryLayout, pair_patterns: list[np.ndarray], pair_profile: np.ndarray) -> BinaryLayout:
    """The probit layout's patterns (sparse), and the element-wise lowest and highest pattern of each profile."""
    low = np.full(len(layout.profile_config), np.inf)
    high = np.full(len(layout.profile_config), -np.inf)
    entry, successes, pattern_start = [], [], [0]
    for pattern, profile in zip(pair_patterns, pair_profile):
        offset = layout.profile_start[profile]
        span = slice(offset, offset + len(pattern))
        low[span] = np.minimum(low[span], pattern)
        high[span] = np.maximum(high[span], pattern)
        hit = np.flatnonzero(pattern > 0)
        entry.append(offset + hit)
        successes.append(pattern[hit])
        pattern_start.append(pattern_start[-1] + len(hit))
    return dataclasses.replace(
        layout, pattern_start=np.array(pattern_start, dtype=np.int64),
        pattern_entry=np.concatenate(entry).astype(np.int64), pattern_successes=np.concatenate(successes),
        profile_low=low, profile_high=high)


def _factorize(columns: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Code of each row's combination of ``columns`` (combinations in sorted order) and a first row of each."""
    stacked = np.stack([np.asarray(c, dtype=np.int64) for c in columns], axis=1)
    unique, first, inverse = np.unique(stacked, axis=0, return_index=True, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64), first
