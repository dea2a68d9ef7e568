"""The random-slope posterior with its Gaussian effects integrated out: the cross-products and layout that
``collapsed_slope_density`` reads, and when that density replaces the non-centred one.

The collapsed density samples the same posterior of β, σ, the SDs and the correlations as ``slope_density`` (same
priors, transforms and recorded values), in a few dimensions and without the funnel between an SD and its effects.
Its cost per gradient grows with the cubes of the blocks of Z'Z (levels connected through shared rows: one block
per level of a single term, one block for crossed terms), the non-centred one's with the rows: the collapsed
density is taken where its estimated cost per gradient is at most ``COST_RATIO`` times the non-centred one's (it
needs fewer gradients per effective draw) and no block exceeds ``COLLAPSED_COLUMNS`` columns.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components

from .collapsed_slope_density import collapsed_logp
from .compiled_density import CompiledDensity, pack
from .slope_density import effect_variable

# Per gradient the collapsed density cost 1.5-2 ns per cube of a block's columns plus ~220 times that per column
# (blocks of 2 to 150 columns), the non-centred one 8-17 ns per row and sampled value of a row (coefficients and
# twice the terms' columns), measured side by side in one process. Per effective draw the non-centred density
# took 6.7 times the gradients on a crossed design of 96 rows and 26 times on sleepstudy: the collapsed one is
# taken up to 4 times the non-centred cost per gradient, with blocks up to 400 columns (1.3 MB each).
CUBE_PER_COLUMN = 220.0
CUBE_PER_ROW_VALUE = 5.5
COST_RATIO = 4.0
COLLAPSED_COLUMNS = 400


@dataclasses.dataclass(frozen=True)
class EffectLayout:
    """Z's columns ordered component by component: ``Z`` (rows × q, sparse), the first column of every component
    (q last), and per column its term, its column in the term, the first column of its level and the level."""

    Z: sp.csr_matrix
    components: np.ndarray
    term: np.ndarray
    column: np.ndarray
    unit: np.ndarray
    level: np.ndarray

    @property
    def largest(self) -> int:
        return int(np.diff(self.components).max())


def effect_layout(terms) -> EffectLayout:
    """The layout of every term's effects (``term_model.TermLayout``), levels sharing rows in one component."""
    n = len(terms[0].codes)
    first = np.cumsum([0] + [len(term.levels) for term in terms])
    units = np.column_stack([first[t] + term.codes for t, term in enumerate(terms)])   # rows × terms
    edges = sp.coo_matrix((np.ones(n * (len(terms) - 1)), (np.repeat(units[:, 0], len(terms) - 1),
                                                            units[:, 1:].ravel())), shape=(first[-1], first[-1]))
    _, labels = connected_components(edges, directed=False)
    unit_terms = np.repeat(np.arange(len(terms)), np.diff(first))
    widths = np.array([terms[t].nc for t in unit_terms])
    order = np.argsort(labels, kind="stable")
    unit_start = np.empty(first[-1], dtype=np.int64)
    unit_start[order] = np.concatenate([[0], np.cumsum(widths[order])[:-1]])
    q = int(widths.sum())
    boundaries = np.flatnonzero(np.diff(labels[order])) + 1
    components = np.concatenate([[0], unit_start[order][boundaries], [q]])
    term = np.repeat(unit_terms[order], widths[order])
    column = np.concatenate([np.arange(w) for w in widths[order]])
    unit = np.repeat(unit_start[order], widths[order])
    level = np.repeat(order - first[unit_terms[order]], widths[order])
    rows, cols, values = [], [], []
    for t, term_layout in enumerate(terms):
        for c in range(term_layout.nc):
            rows.append(np.arange(n))
            cols.append(unit_start[units[:, t]] + c)
            values.append(term_layout.matrix[:, c])
    Z = sp.csr_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), shape=(n, q))
    return EffectLayout(Z, components, term, column, unit, level)


def faster_density(density: CompiledDensity, frame, terms, priors) -> CompiledDensity:
    """``density`` (``term_model.term_density``) with its effects integrated out, unless the non-centred density is
    the faster one (``collapses``)."""
    layout = effect_layout(terms)
    if not collapses(layout, len(frame.y), frame.X.shape[1] + 2 * sum(term.nc for term in terms)):
        return density
    return collapsed_density(density, frame, terms, priors, layout)


def collapsed_density(density: CompiledDensity, frame, terms, priors, layout: EffectLayout) -> CompiledDensity:
    """``density`` (``term_model.term_density``) with its effects integrated out."""
    y, X = np.asarray(frame.y, dtype=float), np.asarray(frame.X, dtype=float) - priors.x_means
    reference, *_ = np.linalg.lstsq(X, y, rcond=None)
    y0 = y - X @ reference
    Zt = layout.Z.T.tocsr()
    gram = (Zt @ layout.Z).tocsr()
    blocks = [gram[a:b, a:b].toarray().ravel() for a, b in zip(layout.components[:-1], layout.components[1:])]
    gram_starts = np.concatenate([[0], np.cumsum([block.size for block in blocks])])
    empty = np.zeros(0)
    floats, ints = pack(
        [empty, empty, priors.fixed_mu, priors.fixed_sigma, priors.fixed_nu, empty, priors.sd_nu, priors.sd_scale,
         np.array([priors.residual_nu, priors.residual_sigma]), priors.eta, priors.x_means,
         reference, X.T @ X, X.T @ y0, np.asarray(Zt @ X), Zt @ y0, np.array([y0 @ y0]), np.concatenate(blocks)],
        [np.array([len(y), X.shape[1], len(terms), sum(term.nc for term in terms),
                   -1 if priors.intercept_index is None else priors.intercept_index]),
         np.array([term.nc for term in terms]), np.zeros(len(terms)), np.zeros(0),
         layout.components, gram_starts, layout.term, layout.column, layout.unit],
    )
    kept = _sampled_coordinates(X.shape[1], terms)
    # nutpie's low-rank-corrected mass matrix: on sleepstudy (brms's priors) 7.1 leapfrog steps per draw against
    # 9.0 with the diagonal one, and 7 % more bulk ESS per draw
    # no effects to record: they are drawn afterwards from their Gaussian conditional (``collapsed_effects``)
    variables = tuple(v for v in density.variables if v.name not in {effect_variable(t.group) for t in terms})
    return dataclasses.replace(density, logp=collapsed_logp, floats=floats, ints=ints, n_dim=len(kept),
                               variables=variables, initial_point=density.initial_point[kept],
                               low_rank_mass_matrix=True)


def collapses(layout: EffectLayout, rows: int, row_values: int) -> bool:
    """Whether the collapsed density samples faster than the non-centred one, which reads ``row_values`` values
    per row."""
    blocks = np.diff(layout.components).astype(float)
    cost = float((blocks**3).sum()) + CUBE_PER_COLUMN * layout.components[-1]
    return layout.largest <= COLLAPSED_COLUMNS and cost <= COST_RATIO * CUBE_PER_ROW_VALUE * rows * row_values


def _sampled_coordinates(p: int, terms) -> np.ndarray:
    """The coordinates of the non-centred vector that the collapsed one keeps: all but the level effects."""
    kept, offset = list(range(p + 1)), p + 1
    for term in terms:
        size = term.nc * (term.nc + 1) // 2
        kept += range(offset, offset + size)
        offset += size + len(term.levels) * term.nc
    return np.array(kept)
