"""The effects of the collapsed random-slope posterior, drawn afterwards from their exact Gaussian conditional.

``collapsed_slope_density`` integrates the effects b out. Given a posterior draw of β, σ and every term's SDs
and correlations, b = T u with T the block-diagonal map diag(τ) L of every level and

    u | β, σ, τ, L, y ~ N(M⁻¹ T' s, σ² M⁻¹),   M = T' A T + σ² I,   A = Z'Z,   s = Z'(y − X β),

so one draw of u per posterior draw gives draws of the joint posterior. A is block-diagonal over the components
of levels that share rows (``collapsed_slope_model.effect_layout``): components of one size are drawn together,
a batch of about ``LEVEL_BLOCK_VALUES`` values at a time, each batch from its own seed, so that every term reads the same
draws whichever term is asked for first.
"""

from __future__ import annotations

import functools

import numpy as np

from .collapsed_slope_model import effect_layout
from .draws import LEVEL_BLOCK_VALUES
from .slope_density import effect_variable


def add_conditional_effects(draws, frame, terms, seed) -> None:
    """Register every term's effects (``re|<term>``: chain, draw, level, column) with ``draws``, drawn when read
    (nothing is computed before)."""

    @functools.cache
    def context() -> _Context:
        layout = effect_layout(terms)
        y, X = np.asarray(frame.y, dtype=float), np.asarray(frame.X, dtype=float)
        Zt = layout.Z.T.tocsr()
        return _Context(layout, terms, Zt @ y, np.asarray(Zt @ X), (Zt @ layout.Z).tocoo(), draws, seed)

    for t, term in enumerate(terms):
        dims = (f"{term.group}__level", f"{term.group}__column")
        draws.add_level_blocks(effect_variable(term.group), lambda t=t: context().blocks(t), dims,
                               {dims[0]: [str(level) for level in term.levels], dims[1]: list(term.columns)})


class _Context:
    def __init__(self, layout, terms, zty, ztx, gram, draws, seed):
        from .term_layout import term_covariances

        self.layout, self.terms, self.zty, self.ztx, self.draws = layout, terms, zty, ztx, draws
        self.seed = 0 if seed is None else seed
        shape = draws.shape
        self.shape = shape
        self.beta = draws["fixed"].reshape(-1, draws["fixed"].shape[-1])
        self.sigma = draws["sigma"].reshape(-1)
        width = max(term.nc for term in terms)
        factors = np.zeros((len(terms), self.sigma.size, width, width))
        for t, term in enumerate(terms):
            factors[t, :, :term.nc, :term.nc] = np.linalg.cholesky(term_covariances(draws, term)).reshape(
                -1, term.nc, term.nc)
        self.factors = factors          # diag(τ) L of every term, per draw
        self.gram = gram

    def blocks(self, t: int):
        """Yields (levels, effects (chain, draw, levels, columns)) of term ``t``, batch by batch."""
        layout, term = self.layout, self.terms[t]
        starts, sizes = layout.components[:-1], np.diff(layout.components)
        n_draws = self.sigma.size
        batch_index = 0
        for m in np.unique(sizes):
            chosen = starts[sizes == m]
            per_batch = max(1, LEVEL_BLOCK_VALUES // (n_draws * m * m))
            for a in range(0, len(chosen), per_batch):
                columns = chosen[a:a + per_batch, None] + np.arange(m)[None, :]      # (components, m)
                seed = np.random.SeedSequence([self.seed, batch_index])
                batch_index += 1
                mine = layout.term[columns] == t
                if not mine.any():
                    continue
                b = self._draw(columns, np.random.default_rng(seed))            # (draws, components, m)
                levels = layout.level[columns][mine]
                unique, position = np.unique(levels, return_inverse=True)
                out = np.empty((n_draws, len(unique), term.nc))
                out[:, position, layout.column[columns][mine]] = b[:, mine]
                yield unique, out.reshape(*self.shape, len(unique), term.nc)

    def _draw(self, columns: np.ndarray, rng) -> np.ndarray:
        layout = self.layout
        n_components, m = columns.shape
        n_draws = self.sigma.size
        # A's blocks, from its nonzero entries within these components
        position = np.full(layout.components[-1], -1)
        position[columns.ravel()] = np.arange(columns.size)
        inside = (position[self.gram.row] >= 0) & (position[self.gram.col] >= 0)
        rows, cols = position[self.gram.row[inside]], position[self.gram.col[inside]]
        A = np.zeros((n_components, m, m))
        A[rows // m, rows % m, cols % m] = self.gram.data[inside]
        # T: diag(τ) L of the column's term, between columns of one level
        term, column, unit = layout.term[columns], layout.column[columns], layout.unit[columns]
        same = unit[:, :, None] == unit[:, None, :]
        T = self.factors[term[:, :, None], :, column[:, :, None], column[:, None, :]]   # (components, m, m, draws)
        T = np.moveaxis(np.where(same[..., None], T, 0.0), -1, 0)                      # (draws, components, m, m)
        s = self.zty[columns][None] - np.einsum("dp,kmp->dkm", self.beta, self.ztx[columns])
        s2 = self.sigma[:, None, None, None] ** 2
        M = np.einsum("dkai,kab,dkbj->dkij", T, A, T) + s2 * np.eye(m)
        C = np.linalg.cholesky(M)
        mean = np.linalg.solve(M, np.einsum("dkai,dka->dki", T, s)[..., None])[..., 0]
        noise = np.linalg.solve(np.swapaxes(C, -1, -2), rng.standard_normal((n_draws, n_components, m, 1)))[..., 0]
        u = mean + self.sigma[:, None, None] * noise
        return np.einsum("dkij,dkj->dki", T, u)
