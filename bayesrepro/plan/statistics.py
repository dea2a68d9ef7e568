"""Sufficient statistics of a planned balanced design, simulated without rows.

The fixed parts of the Gaussian statistics (level counts, the contingency
tables Z_g'Z_h, Z'X, X'X) follow from the counts alone: in a balanced design
a level a of term G and a level b of term H occur together in N/L_{G∪H}
scores when they agree on the factors G and H share, and never otherwise.
They are built once per planned size, as sparse pairs, never as rows.

Only Z'y, X'y and y'y change from one simulated data set to the next, and
their joint distribution is known. With y = Xβ + Σ Z_g b_g + e, the signal
part follows from the Gram blocks and the drawn level effects b. For the
noise, write U = [Z₁ R] with Z₁ the dominant factor's indicators (diagonal
Gram D) and R = [Z_rest X]. Then Z₁'e = σ D^½ z₁, and given it,
R'e = C'D⁻¹Z₁'e + σ S^½ z₂ with C = Z₁'R and S = R'R − C'D⁻¹C (the small
Schur complement); e'e = σ²(|z₁|² + |z₂|² + χ²_{N − rank U}) because e'e is
the squared norm of e's projection on span(U), which z₁ and z₂ whiten, plus
an independent χ² remainder. One draw costs n₁ + q normal numbers and a few
products with the Gram blocks, whatever the number of scores.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Mapping

import numpy as np
import scipy.sparse as sp

from ..design import GaussianStats
from ..design.gaussian import DENSE_CELL_LIMIT, SPARSE_DENSITY
from .structure import DesignStructure, term_digits

# Eigenvalues of the Schur complement below this share of the largest are taken as zero (U is rank deficient:
# the levels of each factor sum to the intercept).
RANK_TOLERANCE = 1e-9


def planned_statistics(structure: DesignStructure, counts: Mapping[str, int]) -> GaussianStats:
    """The fixed parts of the statistics of the planned design (fixed effects: intercept, B − A); y parts zero.

    Factors are in the formula's order in ``group_names``; the one with the
    most levels is eliminated first, as ``design.gaussian`` does.
    """
    groups = structure.terms[:-1]
    n = structure.n_obs(counts)
    sizes = [structure.levels_of(t.term, counts) for t in groups]
    digits = [term_digits(structure, t.term, counts) for t in groups]
    order = sorted(range(len(groups)), key=lambda k: -sizes[k])
    zx = [_level_design(structure, groups[k].term, digits[k], n / sizes[k]) for k in range(len(groups))]
    dominant, rest = order[0], order[1:]
    rest_sizes = np.array([sizes[k] for k in rest], dtype=int)
    offsets = np.concatenate([[0], np.cumsum(rest_sizes)]).astype(int)
    q_rest = int(offsets[-1])
    gram = np.zeros((q_rest, q_rest))
    for i, k in enumerate(rest):
        for j, h in enumerate(rest):
            if j >= i:
                block = _pair_table(structure, groups[k].term, groups[h].term, digits[k], digits[h], counts, n).toarray()
                gram[offsets[i]:offsets[i + 1], offsets[j]:offsets[j + 1]] = block
                gram[offsets[j]:offsets[j + 1], offsets[i]:offsets[i + 1]] = block.T
    blocks = [_pair_table(structure, groups[dominant].term, groups[h].term, digits[dominant], digits[h], counts, n)
              for h in rest]
    n1 = sizes[dominant]
    cross = sp.hstack(blocks, format="csr") if blocks else sp.csr_matrix((n1, 0))
    if n1 * q_rest <= DENSE_CELL_LIMIT or cross.nnz > SPARSE_DENSITY * n1 * q_rest:
        cross = cross.toarray()
    xtx = np.array([[n, n / 2.0], [n / 2.0, n / 2.0]])
    return GaussianStats(
        n_obs=n,
        group_names=[t.name for t in groups],
        order=order,
        dominant_counts=np.full(n1, n / n1),
        dominant_zy=np.zeros(n1),
        dominant_zx=zx[dominant],
        rest_sizes=rest_sizes,
        rest_gram=gram,
        cross=cross,
        rest_zy=np.zeros(q_rest),
        rest_zx=np.vstack([zx[k] for k in rest]) if rest else np.zeros((0, 2)),
        xtx=xtx,
        xty=np.zeros(2),
        yty=0.0,
        y_shift=0.0,
        y_sum=0.0,
        x_sum=np.array([n, n / 2.0]),
    )


def _level_design(structure: DesignStructure, term, digits, per_level: float) -> np.ndarray:
    """Z_g'X for X = [1, 1{B}]: the scores of each level, and those of them under B."""
    n_levels = len(next(iter(digits.values())))
    under_b = digits[structure.factor] == 1 if structure.factor in term else np.full(n_levels, 0.5)
    return np.column_stack([np.full(n_levels, per_level), per_level * under_b])


def _pair_table(structure, term_a, term_b, digits_a, digits_b, counts, n) -> sp.csr_matrix:
    """Z_a'Z_b: N/L_{a∪b} scores where the two levels agree on the shared factors."""
    shared = [f for f in structure.factors if f in term_a and f in term_b]
    size_a, size_b = len(next(iter(digits_a.values()))), len(next(iter(digits_b.values())))
    sizes = structure.sizes(counts)
    key_a = np.ravel_multi_index([digits_a[f] for f in shared], [sizes[f] for f in shared]) if shared else np.zeros(size_a, int)
    key_b = np.ravel_multi_index([digits_b[f] for f in shared], [sizes[f] for f in shared]) if shared else np.zeros(size_b, int)
    by_key = np.argsort(key_b, kind="stable").reshape(-1, size_b // (key_b.max() + 1))  # balanced: equal groups
    columns = by_key[key_a]
    rows = np.repeat(np.arange(size_a), columns.shape[1])
    value = n / structure.levels_of(term_a | term_b, counts)
    return sp.csr_matrix((np.full(rows.size, value), (rows, columns.ravel())), shape=(size_a, size_b))


class ResponseSimulator:
    """Draws the y parts of the statistics of the planned design under given components and fixed effects."""

    def __init__(self, template: GaussianStats, sd: Mapping[str, float], residual_sd: float, beta: np.ndarray):
        self.template = t = template
        names_in_order = [t.group_names[k] for k in t.order]
        self.sd_dominant = float(sd[names_in_order[0]])
        self.sd_rest = np.repeat([float(sd[name]) for name in names_in_order[1:]], t.rest_sizes)
        self.sigma = float(residual_sd)
        self.beta = np.asarray(beta, dtype=float)
        d = t.dominant_counts
        coupling = sp.hstack([sp.csr_matrix(t.cross), sp.csr_matrix(t.dominant_zx)], format="csr")
        rest_gram = np.block([[t.rest_gram, t.rest_zx], [t.rest_zx.T, t.xtx]])
        schur = rest_gram - (coupling.T @ coupling.multiply(1.0 / d[:, None])).toarray()
        values, vectors = np.linalg.eigh(0.5 * (schur + schur.T))
        kept = values > RANK_TOLERANCE * values.max()
        self.schur_root = vectors[:, kept] * np.sqrt(values[kept])
        self.coupling_scaled = coupling.multiply(1.0 / d[:, None]).T.tocsr()   # C'D⁻¹
        self.chi2_df = t.n_obs - len(d) - int(kept.sum())
        self.q_rest = len(t.rest_zy)
        self.fixed_signal = (t.dominant_zx @ self.beta, t.rest_zx @ self.beta, t.xtx @ self.beta)
        self.diag_rest = np.diag(t.rest_gram)

    def draw(self, rng: np.random.Generator) -> GaussianStats:
        t = self.template
        d = t.dominant_counts
        b1 = self.sd_dominant * rng.standard_normal(len(d))
        br = self.sd_rest * rng.standard_normal(self.q_rest)
        cross_br = t.cross @ br
        signal_dominant = self.fixed_signal[0] + d * b1 + cross_br
        signal_rest = self.fixed_signal[1] + t.cross.T @ b1 + t.rest_gram @ br
        random_x = t.dominant_zx.T @ b1 + t.rest_zx.T @ br
        signal_x = self.fixed_signal[2] + random_x
        signal_ss = (self.beta @ t.xtx @ self.beta + 2.0 * self.beta @ random_x
                     + b1 @ (d * b1) + 2.0 * b1 @ cross_br + br @ (t.rest_gram @ br))
        z1 = rng.standard_normal(len(d))
        z2 = rng.standard_normal(self.schur_root.shape[1])
        noise_dominant = self.sigma * np.sqrt(d) * z1
        noise_rest = self.coupling_scaled @ noise_dominant + self.sigma * (self.schur_root @ z2)
        noise_ss = self.sigma**2 * (z1 @ z1 + z2 @ z2 + (rng.chisquare(self.chi2_df) if self.chi2_df > 0 else 0.0))
        cross_ss = b1 @ noise_dominant + br @ noise_rest[: self.q_rest] + self.beta @ noise_rest[self.q_rest:]
        zy_dominant = signal_dominant + noise_dominant
        zy_rest = signal_rest + noise_rest[: self.q_rest]
        xty = signal_x + noise_rest[self.q_rest:]
        yty = signal_ss + 2.0 * cross_ss + noise_ss
        # shift y by its mean (absorbed by the intercept), as the statistics of observed data are
        shift = float(zy_dominant.sum()) / t.n_obs
        return replace(
            t,
            dominant_zy=zy_dominant - shift * d,
            rest_zy=zy_rest - shift * self.diag_rest,
            xty=xty - shift * t.x_sum,
            yty=float(yty - t.n_obs * shift * shift),
            y_shift=shift,
            y_sum=0.0,
        )
