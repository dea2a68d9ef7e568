"""The binary fast path's posterior as a compiled log density (logit or probit link, Bambi's default priors).

Sampled, as one unconstrained vector x:
  1. the fixed coefficients of the centred design (Bambi's parameterisation), Normal priors;
  2. log σ_g of every grouping factor, formula order: HalfNormal priors on σ_g, plus the
     Jacobian log σ_g of the log transform;
  3. the level effects b_l of every factor but the dominant one, through z_l with
         b_l = m_l(σ, β) + t_l(σ) z_l,   t_l(σ) = (1/σ² + I_l)^(-1/2),   m_l(σ, β) = t_l(σ)² I_l β_l(β),
     the mean and SD of b_l given σ and the fixed coefficients β when the data's information
     about b_l is I_l and their estimate of it β_l(β) = β_l − Σ_j C_lj (β_j − β̂_j), C_lj the
     data's information about b_l and β_j over I_l (all taken once, at the posterior mode):
     z_l is then close to N(0, 1) whatever σ and β are. As σ → 0 this is the non-centred
     b = σ z, as σ grows the centred b = β_l(β) + z / √I, so NUTS meets no funnel on facets
     of a few levels, whose σ ranges over both regimes, nor when the mean of a facet's
     effects and the intercept (which the data know only as a sum) trade off, by an
     amount that grows with σ. The coordinates change, the posterior does not: the map
     from z to b is triangular, and the density of z carries its Jacobian Π t_l(σ).
The dominant factor's effects are integrated out exactly (``binary_density``).

Recorded per draw: every σ_g (named as in Bambi's model, ``1|g_sigma``), the fixed
coefficients of the uncentred design (``fixed``) and the sampled factors' level effects (``1|g``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .binary_density import LINK_CODES, binary_expand, binary_logp, conditional, level_effects
from .binary_layout import BinaryLayout
from .binary_priors import BinaryPriors
from .compiled_density import CompiledDensity, Variable, notice_if_slow, pack, posterior_mode
INFORMATION_STEP = 1e-4  # central differences of the gradient for the data's information about each level


@dataclass(frozen=True)
class BinaryModel:
    density: CompiledDensity
    layout: BinaryLayout
    priors: BinaryPriors
    group_names: tuple[str, ...]
    estimate: np.ndarray      # β_l: the data's estimate of every sampled level effect, at the mode's β
    information: np.ndarray   # I_l: the data's information about it
    coupling: np.ndarray      # C_lj (levels × fixed coefficients): how β_l moves with β_j

    @property
    def dominant(self) -> str:
        return self.group_names[self.layout.dominant]


def sd_name(group: str) -> str:
    """Posterior variable of a factor's SD, named as in Bambi's model."""
    return f"1|{group}_sigma"


def build_binary_model(layout: BinaryLayout, X_fixed: np.ndarray, priors: BinaryPriors, group_names, levels) -> BinaryModel:
    """The compiled posterior of a Bernoulli/binomial model of the cells described by ``layout`` (and its link).

    ``X_fixed`` holds the fixed-design row of every fixed cell, ``levels`` the level labels
    of every grouping factor (formula order). The coordinates are chosen from a pilot: the
    posterior mode in non-centred coordinates (I = 0 makes b = σ z), where the data's
    estimate and information about every level are read off the gradient.
    """
    group_names = tuple(group_names)
    p, n_groups = len(priors.fixed_names), len(group_names)
    n_levels = sum(len(levels[g]) for g in layout.sampled)
    pilot = _density(layout, X_fixed, priors, group_names, levels, np.zeros(n_levels), np.zeros(n_levels),
                     np.zeros((n_levels, p)), None)
    with notice_if_slow(f"finding the posterior mode and the data's information about {n_levels} sampled levels"):
        mode = posterior_mode(pilot)
        effects = level_effects(mode, p, n_groups, np.array(layout.sampled, dtype=np.int64),
                                np.array([len(levels[g]) for g in layout.sampled], dtype=np.int64),
                                np.zeros(n_levels), np.zeros(n_levels))
        estimate, information, coupling = _data_estimates(
            pilot, mode, effects, p, n_groups, layout.sampled,
            _unlinked_groups(layout, [len(levels[g]) for g in layout.sampled]))
    start = mode.copy()
    offset = p + n_groups
    for k, g in enumerate(layout.sampled):
        count = len(levels[g])
        level = slice(offset - p - n_groups, offset - p - n_groups + count)
        sd, mean = conditional(mode[p + g], information[level], estimate[level])
        start[offset : offset + count] = (effects[level] - mean) / sd
        offset += count
    # β_l(β) = β_l − C_l · (β − β̂) is packed as (β_l + C_l · β̂) − C_l · β
    density = _density(layout, X_fixed, priors, group_names, levels, estimate + coupling @ mode[:p], information,
                       coupling, start)
    return BinaryModel(density, layout, priors, group_names, estimate, information, coupling)


def _density(layout, X_fixed, priors, group_names, levels, estimate, information, coupling, start) -> CompiledDensity:
    p, n_groups = len(priors.fixed_names), len(group_names)
    X = np.asarray(X_fixed, dtype=float) - priors.x_means
    floats, ints = pack(
        [priors.fixed_mu, priors.fixed_sigma, X, layout.config_successes,
         np.array([priors.group_sigma[name] for name in group_names]), estimate, information, layout.profile_trials,
         layout.pair_successes, layout.pair_count, priors.x_means, layout.profile_low, layout.profile_high,
         layout.pattern_successes, coupling],
        [np.array([p, n_groups, layout.dominant, -1 if priors.intercept_index is None else priors.intercept_index,
                   LINK_CODES[layout.link]]),
         layout.config_fixed, layout.config_codes, np.array(layout.sampled, dtype=np.int64),
         np.array([len(levels[g]) for g in layout.sampled], dtype=np.int64),
         layout.profile_start, layout.profile_config, layout.pair_start, layout.pattern_start, layout.pattern_entry],
    )
    variables = [Variable(sd_name(name)) for name in group_names] + [Variable("fixed", ("fixed_effect",))]
    coords = {"fixed_effect": list(priors.fixed_names)}
    for g in layout.sampled:
        dim = f"{group_names[g]}__level"
        variables.append(Variable(f"1|{group_names[g]}", (dim,)))
        coords[dim] = [str(level) for level in levels[g]]
    n_dim = p + n_groups + len(estimate)
    return CompiledDensity(binary_logp, binary_expand, floats, ints, n_dim, tuple(variables), coords, start)


def _data_estimates(pilot: CompiledDensity, mode, effects, p, n_groups, sampled, groups):
    """β_l, I_l and C_l of every sampled level: one Newton step of the likelihood alone from the mode's effects.

    At σ = 1 the pilot's coordinates are the effects themselves (b = z) and the prior's
    curvature is 1, so the likelihood's gradient and curvature in b_l, and its cross
    derivative in b_l and each fixed coefficient β_j, follow from the density's gradient by
    central differences; the likelihood does not depend on σ, nor the priors on both b and β.
    The levels of one of ``groups`` share no level of the integrated factor, so the likelihood
    has no cross derivative between two of them: one central difference along their sum gives
    each its own curvature (Curtis, Powell and Reid's grouping), two gradients per group
    instead of two per level.
    """
    point = mode.copy()
    point[[p + g for g in sampled]] = 0.0
    first = p + n_groups
    point[first:] = effects
    gradient = pilot.value_and_gradient(point)[1][first:] + effects  # the likelihood's, without the prior's −b

    def change(coordinates):
        """Central difference of the effects' gradient along the sum of some coordinates of the pilot."""
        step = np.zeros_like(point)
        step[coordinates] = INFORMATION_STEP
        up, down = pilot.value_and_gradient(point + step)[1], pilot.value_and_gradient(point - step)[1]
        return (up[first:] - down[first:]) / (2.0 * INFORMATION_STEP)

    curvature = np.zeros(len(effects))
    for group in groups:
        curvature[group] = -change(first + group)[group]
    information = np.maximum(curvature - 1.0, 0.0)
    known = information > 0
    divisor = np.where(known, information, 1.0)
    estimate = np.where(known, effects + gradient / divisor, 0.0)
    coupling = np.column_stack([np.where(known, -change(j) / divisor, 0.0) for j in range(p)]) if p else \
        np.zeros((len(effects), 0))
    return estimate, information, coupling


def _unlinked_groups(layout: BinaryLayout, sizes: list[int]) -> list[np.ndarray]:
    """The sampled levels (numbered factor after factor) in groups whose members never appear together in a
    profile (the configurations one level of the integrated factor was scored in): a greedy colouring of the
    graph of levels that share a profile, levels with most neighbours first."""
    total = int(sum(sizes))
    if total == 0:
        return []
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    level_of_config = np.asarray(layout.config_codes, dtype=np.int64) + offsets[:, None]   # (sampled, K)
    neighbours: list[set[int]] = [set() for _ in range(total)]
    starts = layout.profile_start
    for profile in range(len(starts) - 1):
        members = np.unique(level_of_config[:, layout.profile_config[starts[profile]:starts[profile + 1]]]).tolist()
        for member in members:
            neighbours[member].update(members)
    colour = np.full(total, -1, dtype=np.int64)
    for level in sorted(range(total), key=lambda k: -len(neighbours[k])):
        taken = {int(colour[k]) for k in neighbours[level]}
        free = 0
        while free in taken:
            free += 1
        colour[level] = free
    return [np.flatnonzero(colour == c) for c in range(int(colour.max()) + 1)]
