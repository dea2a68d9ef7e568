"""Effects drawn after sampling, from their exact Gaussian conditional given the SDs.

Given the SDs the joint posterior of θ = (fixed effects, level effects) is
Gaussian: δ = θ − m ~ N(P⁻¹ W'r, σ² P⁻¹). It is drawn blockwise, as the
marginal likelihood was evaluated: first the small block b from its Schur
complement, then each item's effect from its scalar conditional given b,

    δa_i = m_i + σ √s_k z_i,   s_k = σ_a² / (n_k σ_a² + σ²),   m_i = s_k (r_i − c_i'δ_b),   z ~ N(0, I),

k the group of items sharing the count n_k. One draw of θ per posterior draw
of the SDs gives draws from the joint posterior of the full model.

The finite-population variances need, of the items' effects, only the sums
Σ δa_i, Σ δa_i², Σ r_i δa_i, Σ (c_i'δ_b) δa_i and their n_i-weighted versions.
In a group these are linear in B_k'z, B_k the rows (1, r_i, c_i'), and in
‖z‖², whose joint law is exact and small: B_k'z = R_k'a with a ~ N(0, I_ρ)
(R_k'R_k = B_k'B_k of rank ρ) and ‖z‖² = ‖a‖² + χ²(m_k − ρ), the χ² independent
of a (the part of z orthogonal to B_k's columns). So a draw costs O(K q²),
whatever the number of items. The items' effects themselves — thousands per
draw — are drawn only when read (``DominantEffects.draw``, or a block of items
at a time): z = Q_k a + √χ² u/‖u‖, Q_k an orthonormal basis of B_k's columns and u the part of a N(0, I) vector
orthogonal to them, which has z's law given (a, χ²) and reproduces the sums
already drawn. A group with no more items than B_k has columns gains nothing
from this: its z is drawn as it is (a = z, R_k = B_k).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .marginal import MarginalStats, small_block_variances

# eigenvalues of a group's equilibrated Gram matrix B'B below this fraction of the largest are
# rounding (exact collinearity, e.g. the intercept column with the count): their directions carry no variance
RANK_TOLERANCE = 1e-10
BLOCK_VALUES = 1 << 22   # values (draws × items) of one block of the items' effects: 32 MB
SEED_ITEMS = 16          # items whose noise comes from one seed: blocks hold whole runs of them


@dataclass(frozen=True)
class CountGroup:
    """The items sharing one count, and the square root of their Gram matrix B'B, B = [1, r, C] (their rows)."""

    items: np.ndarray      # indices of the items
    count: float
    root: np.ndarray       # (ρ, q) R with R'R = B'B: B'z = R'a
    basis: np.ndarray | None  # (q, ρ) maps B to Q = B · basis, an orthonormal basis of B's columns; None: Q = I

    @property
    def rank(self) -> int:
        return self.root.shape[0]

    @property
    def free(self) -> int:
        """Degrees of freedom of z orthogonal to B's columns."""
        return len(self.items) - self.rank


@dataclass(frozen=True)
class DominantEffects:
    """What determines the dominant factor's effects in every draw; ``draw()`` makes them, (D, n_levels)."""

    stats: MarginalStats
    groups: list[CountGroup]
    delta_b: np.ndarray      # (D, s)
    shrink: np.ndarray       # (D, K) s_k
    sd: np.ndarray           # (D, K) σ √s_k
    coordinates: list        # per group (D, ρ): a
    remainder: list          # per group (D,): χ²(m_k − ρ)
    seed: int                # of the directions orthogonal to B's columns

    def draw(self) -> np.ndarray:
        """Every level's effect in every draw, (D, n_levels)."""
        out = np.empty((self.delta_b.shape[0], len(self.stats.counts)))
        for items, values in self.blocks(BLOCK_VALUES):
            out[:, items] = values
        return out

    def blocks(self, block_values: int):
        """The effects a block of items at a time: yields (items, (D, items)), at most ``block_values`` values
        each (but at least ``SEED_ITEMS`` items).

        The part of z orthogonal to B's columns is u − Q Q'u scaled to ‖·‖² = χ², u ~ N(0, I); Q'u and ‖u‖² are
        summed over a group's blocks first, u drawn again in the second pass. u comes from one seed per
        ``SEED_ITEMS`` items, so that no more than one block is held and the effects do not depend on the
        blocks.
        """
        n_draws = self.delta_b.shape[0]
        size = max(1, block_values // max(n_draws, 1)) // SEED_ITEMS * SEED_ITEMS or SEED_ITEMS
        for k, group in enumerate(self.groups):
            spans = [slice(a, a + size) for a in range(0, len(group.items), size)]
            projected, squares, scale = 0.0, 0.0, None
            if group.free > 0:
                for span in spans:
                    u = self._noise(k, span, len(group.items))
                    projected = projected + u @ (_rows(self.stats, group.items[span]) @ group.basis)
                    squares = squares + np.einsum("di,di->d", u, u)
                scale = np.sqrt(self.remainder[k] / (squares - np.einsum("da,da->d", projected, projected)))
            for span in spans:
                piece = group.items[span]
                rows = _rows(self.stats, piece)
                if group.basis is None:   # a = z itself, item by item
                    z = self.coordinates[k][:, span]
                else:
                    q = rows @ group.basis
                    z = self.coordinates[k] @ q.T
                if group.free > 0:
                    z = z + (self._noise(k, span, len(group.items)) - projected @ q.T) * scale[:, None]
                mean = self.shrink[:, k, None] * (rows[:, 1][None, :] - self.delta_b @ rows[:, 2:].T)
                yield piece, mean + self.sd[:, k, None] * z

    def _noise(self, k: int, span: slice, n_items: int) -> np.ndarray:
        """u ~ N(0, I) of group k's items in ``span`` (whole runs of ``SEED_ITEMS`` items), one seed per run."""
        start, stop = span.start, min(span.stop, n_items)
        n_draws = self.delta_b.shape[0]
        runs = [np.random.default_rng([self.seed, k, a // SEED_ITEMS]).standard_normal(
            (min(a + SEED_ITEMS, stop) - a, n_draws)) for a in range(start, stop, SEED_ITEMS)]
        return np.concatenate(runs).T


@dataclass(frozen=True)
class EffectDraws:
    fixed: np.ndarray            # (D, p) fixed effects on the original (uncentred) design
    levels: dict                 # factor name -> (D, n_levels) level effects of every factor but the dominant one
    dominant: DominantEffects    # the dominant factor's, drawn on request
    variances: dict              # realised (finite-population) variance of each factor and the residual, (D,)


def draw_effects(stats: MarginalStats, fixed_var, sigma, sd_by_group: dict, rng) -> EffectDraws:
    """One draw of every effect per posterior draw of the SDs (arrays of shape (D,))."""
    from .gaussian_density import compiled_small_block_draws

    sigma = np.asarray(sigma, dtype=float)
    n_draws = sigma.shape[0]
    s2 = sigma**2
    va = np.asarray(sd_by_group[stats.dominant], dtype=float) ** 2
    w = va[:, None] / (s2[:, None] + stats.count_values[None, :] * va[:, None])
    lam = small_block_variances(
        stats,
        np.broadcast_to(fixed_var, (n_draws, stats.n_fixed)),
        [np.asarray(sd_by_group[name], dtype=float) ** 2 for name in stats.rest],
    )
    scale = np.sqrt(lam) / sigma[:, None]
    noise = rng.standard_normal((n_draws, stats.size))
    delta_b = compiled_small_block_draws()(
        *(np.ascontiguousarray(a, dtype=float) for a in (stats.wbwb, stats.G, stats.wbr, stats.g, w, scale, sigma, noise))
    )
    groups = count_groups(stats)
    shrink = w  # σ_a²/(σ² + n_k σ_a²) is both the weight of the marginal likelihood and s_k
    sd = np.sqrt(s2[:, None] * shrink)
    coordinates = [rng.standard_normal((n_draws, g.rank)) for g in groups]
    remainder = [rng.chisquare(g.free, n_draws) if g.free > 0 else np.zeros(n_draws) for g in groups]
    dominant = DominantEffects(stats, groups, delta_b, shrink, sd, coordinates, remainder,
                               int(rng.integers(2**63)))

    theta_b = stats.prior_mean[None, :] + delta_b
    p = stats.n_fixed
    fixed = theta_b[:, :p].copy()
    if stats.intercept_index is not None:
        # undo the centring: intercept of the original design
        fixed[:, stats.intercept_index] -= fixed @ stats.x_means
    levels = {}
    offset = p
    for name, size in zip(stats.rest, stats.rest_sizes):
        levels[name] = theta_b[:, offset : offset + size]
        offset += size
    return EffectDraws(fixed, levels, dominant, _realised_variances(stats, levels, dominant))


def count_groups(stats: MarginalStats) -> list[CountGroup]:
    """The items grouped by count, each with the square root of its Gram matrix (equilibrated eigendecomposition)."""
    groups = []
    for count in stats.count_values:
        items = np.flatnonzero(stats.counts == count)
        rows = _rows(stats, items)
        if len(items) <= rows.shape[1]:
            groups.append(CountGroup(items, float(count), rows, None))
            continue
        gram = rows.T @ rows
        diagonal = np.diag(gram)
        unit = np.where(diagonal > 0, 1.0 / np.sqrt(np.where(diagonal > 0, diagonal, 1.0)), 1.0)
        values, vectors = np.linalg.eigh(unit[:, None] * gram * unit[None, :])
        keep = values > RANK_TOLERANCE * values.max()
        values, vectors = values[keep], vectors[:, keep]
        root = np.sqrt(values)[:, None] * vectors.T / unit[None, :]
        basis = unit[:, None] * vectors / np.sqrt(values)[None, :]
        groups.append(CountGroup(items, float(count), root, basis))
    return groups


def _rows(stats: MarginalStats, items: np.ndarray) -> np.ndarray:
    """B's rows of ``items``: (1, r_i, c_i')."""
    cross = stats.cross[items]
    cross = cross.toarray() if sp.issparse(cross) else np.asarray(cross)
    return np.column_stack([np.ones(len(items)), stats.dominant_r[items], cross])


def _realised_variances(stats: MarginalStats, levels: dict, dominant: DominantEffects) -> dict:
    """Variance of the realised effects of each factor and of the realised residuals (Gelman 2005), per draw."""
    delta_b = dominant.delta_b
    n_draws = delta_b.shape[0]
    total, squares, with_r, with_fit, weighted, weighted_squares = (np.zeros(n_draws) for _ in range(6))
    for k, group in enumerate(dominant.groups):
        rows = _rows(stats, group.items)
        r, cross = rows[:, 1], rows[:, 2:]
        sum_c, rc, cc = cross.sum(axis=0), cross.T @ r, cross.T @ cross
        fitted = delta_b @ sum_c                         # Σ c_i'δ_b
        quad = np.einsum("di,ij,dj->d", delta_b, cc, delta_b)
        linear = delta_b @ rc
        e_sum = r.sum() - fitted                         # Σ e_i, e_i = r_i − c_i'δ_b
        e_squares = r @ r - 2.0 * linear + quad          # Σ e_i²
        e_r = r @ r - linear                             # Σ e_i r_i
        e_fit = linear - quad                            # Σ e_i c_i'δ_b
        zeta = dominant.coordinates[k] @ group.root      # B'z: (Σ z, Σ r z, Σ c z)
        z_squares = np.einsum("da,da->d", dominant.coordinates[k], dominant.coordinates[k]) + dominant.remainder[k]
        e_z = zeta[:, 1] - np.einsum("ds,ds->d", delta_b, zeta[:, 2:])
        shrink, sd = dominant.shrink[:, k], dominant.sd[:, k]
        group_total = shrink * e_sum + sd * zeta[:, 0]
        group_squares = shrink**2 * e_squares + 2.0 * shrink * sd * e_z + sd**2 * z_squares
        total += group_total
        squares += group_squares
        with_r += shrink * e_r + sd * zeta[:, 1]
        with_fit += shrink * e_fit + sd * np.einsum("ds,ds->d", delta_b, zeta[:, 2:])
        weighted += group.count * group_total
        weighted_squares += group.count * group_squares

    n_items = len(stats.counts)
    out = {}
    for name in stats.group_names:
        if name == stats.dominant:
            out[name] = (squares - total**2 / n_items) / (n_items - 1)
        else:
            out[name] = np.var(levels[name], axis=1, ddof=1)
    wr = delta_b @ stats.wbr + with_r
    quad = np.einsum("di,ij,dj->d", delta_b, stats.wbwb, delta_b) + 2.0 * with_fit + weighted_squares
    residual_ss = stats.rr - 2.0 * wr + quad
    n = stats.n_obs
    if stats.sum_r is not None:
        residual_sum = stats.sum_r - delta_b @ stats.colsum_b - weighted
        out["Residual"] = (residual_ss - residual_sum**2 / n) / (n - 1)
    else:
        out["Residual"] = residual_ss / (n - 1)
    return out
