"""The exact fast path: a Gaussian random-intercept model with every effect integrated out.

Model (the same as Bambi's, fixed columns centred as Bambi centres them):

    y = W θ + ε,  W = [X_c  Z_rest  Z_dom],  θ ~ N(m, Λ),  ε ~ N(0, σ² I)
    Λ = diag(fixed prior variances, σ_g² per level of every factor g)

so y ~ N(W m, σ² I + W Λ W') and the σ's are all NUTS has to sample. With
r = y − W m and P = σ² Λ⁻¹ + W'W (Woodbury, matrix determinant lemma):

    log|V| = N log σ² + log|Λ| + log|P| − K log σ²
    r'V⁻¹r = (r'r − r'W P⁻¹ W'r) / σ²

The block of P belonging to the dominant factor (items) is diagonal,
n_i + σ²/σ_dom², and is eliminated: what is left is the Schur complement
S = σ² Λ_b⁻¹ + W_b'W_b − Σ_i c_i c_i' / (n_i + σ²/σ_dom²) of the small block
b = (fixed effects, other factors), where c_i is item i's row of Z_dom'W_b.
Items are grouped by their count n_i (balanced designs have one group), so
Σ_i c_i c_i'/(n_i + ρ) = Σ_k G_k/(n_k + ρ) with precomputed G_k: every
log-density evaluation costs O(K s² + s³), independent of N and of the
number of items. S is handled in the scaled form T = D S D with
D = diag(sqrt(λ_b)/σ), which stays well conditioned when a σ_g goes to zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..errors import BayesreproError
from ..design import ModelFrame, gaussian_stats
from ..design.memory_estimate import require_within
from .priors import PriorSpec


@dataclass(frozen=True)
class MarginalStats:
    """Sufficient statistics of the marginal likelihood, after the one O(N) pass."""

    n_obs: int
    group_names: list[str]        # formula order
    dominant: str                 # name of the eliminated factor
    rest: list[str]               # other factors, in the order of the small block
    rest_sizes: np.ndarray
    n_fixed: int
    prior_mean: np.ndarray        # m restricted to the small block (fixed part; factors have mean 0)
    wbwb: np.ndarray              # (s, s) W_b'W_b
    wbr: np.ndarray               # (s,)   W_b'r
    rr: float
    count_values: np.ndarray      # (K,) distinct item counts n_k
    count_multiplicity: np.ndarray  # (K,) items with that count
    G: np.ndarray                 # (K, s, s)
    g: np.ndarray                 # (K, s)
    h: np.ndarray                 # (K,)
    counts: np.ndarray            # (n_dom,) item counts
    cross: np.ndarray | sp.csr_matrix  # (n_dom, s) C = Z_dom'W_b
    dominant_r: np.ndarray        # (n_dom,) Z_dom'r
    colsum_b: np.ndarray          # (s,) 1'W_b
    sum_r: float | None           # 1'r when the model has an intercept
    x_means: np.ndarray
    intercept_index: int | None
    levels: dict                  # factor name -> level labels

    @property
    def size(self) -> int:
        return self.wbwb.shape[0]


def marginal_stats(frame: ModelFrame, priors: PriorSpec) -> MarginalStats:
    """One O(N) pass over the data (via the shared cross-products)."""
    if not frame.groups:
        raise BayesreproError(
            f"formula {frame.formula!r} has no (1|g) term; a variance-component model needs at least one"
        )
    require_within(frame.dense_estimate("bayes"), frame.max_memory)
    cp = gaussian_stats(frame)
    p = cp.n_fixed
    # Centring as Bambi does: X_c = X T, T = I − e_int x̄'.
    T = np.eye(p)
    if priors.intercept_index is not None:
        T[priors.intercept_index, :] -= priors.x_means
        T[priors.intercept_index, priors.intercept_index] = 1.0
    # r = y − X_c m = (y − shift) − X d, with the shift absorbed by the intercept column.
    d = T @ priors.fixed_mu
    if priors.intercept_index is not None:
        d[priors.intercept_index] -= cp.y_shift
    elif cp.y_shift != 0.0:
        raise BayesreproError("internal: response shifted without an intercept column")

    dom_pos = cp.order[0]
    rest_pos = cp.order[1:]
    zx_dom = cp.dominant_zx @ T
    cross = cp.cross
    if sp.issparse(cross):
        C = sp.hstack([sp.csr_matrix(zx_dom), cross], format="csr")
    else:
        C = np.hstack([zx_dom, cross])
    b_dom = cp.dominant_zy - cp.dominant_zx @ d

    xtx_c = T.T @ cp.xtx @ T
    rest_zx_c = cp.rest_zx @ T
    wbwb = np.block([[xtx_c, rest_zx_c.T], [rest_zx_c, cp.rest_gram]])
    wbr = np.concatenate([T.T @ (cp.xty - cp.xtx @ d), cp.rest_zy - cp.rest_zx @ d])
    rr = float(cp.yty - 2.0 * d @ cp.xty + d @ cp.xtx @ d)

    values, inverse = np.unique(cp.dominant_counts, return_inverse=True)
    s = wbwb.shape[0]
    G = np.zeros((len(values), s, s))
    g = np.zeros((len(values), s))
    h = np.zeros(len(values))
    for k in range(len(values)):
        rows = np.flatnonzero(inverse == k)
        Ck = C[rows]
        if sp.issparse(Ck):
            G[k] = (Ck.T @ Ck).toarray()
            g[k] = Ck.T @ b_dom[rows]
        else:
            G[k] = Ck.T @ Ck
            g[k] = Ck.T @ b_dom[rows]
        h[k] = float(b_dom[rows] @ b_dom[rows])

    colsum_fixed = cp.xtx[priors.intercept_index] @ T if priors.intercept_index is not None else None
    colsum_b = np.concatenate(
        [colsum_fixed if colsum_fixed is not None else np.zeros(p), np.diag(cp.rest_gram)]
    )
    sum_r = None
    if priors.intercept_index is not None:
        sum_r = float(cp.xty[priors.intercept_index] - cp.xtx[priors.intercept_index] @ d)

    names = cp.group_names
    prior_mean = np.concatenate([priors.fixed_mu, np.zeros(s - p)])
    return MarginalStats(
        n_obs=cp.n_obs,
        group_names=list(names),
        dominant=names[dom_pos],
        rest=[names[k] for k in rest_pos],
        rest_sizes=np.asarray(cp.rest_sizes, dtype=int),
        n_fixed=p,
        prior_mean=prior_mean,
        wbwb=wbwb,
        wbr=wbr,
        rr=rr,
        count_values=values.astype(float),
        count_multiplicity=np.bincount(inverse, minlength=len(values)).astype(float),
        G=G,
        g=g,
        h=h,
        counts=cp.dominant_counts,
        cross=C,
        dominant_r=b_dom,
        colsum_b=colsum_b,
        sum_r=sum_r,
        x_means=priors.x_means,
        intercept_index=priors.intercept_index,
        levels={gr.name: list(gr.levels) for gr in frame.groups},
    )


def small_block_variances(stats: MarginalStats, fixed_var, rest_var, xp=np):
    """λ_b: prior variances of the fixed effects, then σ_g² repeated over each factor's levels."""
    parts = [xp.as_tensor_variable(fixed_var) if xp is not np else np.asarray(fixed_var)]
    for size, var in zip(stats.rest_sizes, rest_var):
        if xp is np:
            parts.append(np.repeat(np.asarray(var)[..., None], size, axis=-1))
        else:
            parts.append(xp.repeat(xp.reshape(var, (1,)), size))
    return np.concatenate(parts, axis=-1) if xp is np else xp.concatenate(parts)


def marginal_loglik_pt(stats: MarginalStats, fixed_var: np.ndarray, sigma, dom_sigma, rest_sigma):
    """The marginal log-likelihood as a PyTensor expression of the SDs."""
    import pytensor.tensor as pt
    from pytensor.tensor.slinalg import cholesky, solve_triangular

    s2 = sigma**2
    va = dom_sigma**2
    n_k = pt.constant(stats.count_values)
    w = va / (s2 + n_k * va)
    logdet_dom = pt.sum(stats.count_multiplicity * pt.log1p(n_k * va / s2))
    quad_dom = pt.sum(w * stats.h)
    A = stats.wbwb - pt.tensordot(w, stats.G, axes=1)
    u = stats.wbr - pt.dot(w, stats.g)
    lam = small_block_variances(stats, fixed_var, [sg**2 for sg in rest_sigma], xp=pt)
    scale = pt.sqrt(lam) / sigma
    Tm = pt.eye(stats.size) + scale[:, None] * A * scale[None, :]
    L = cholesky(Tm, lower=True)
    logdet_T = 2.0 * pt.sum(pt.log(pt.diag(L)))
    z = solve_triangular(L, scale * u, lower=True)
    quad = (stats.rr - quad_dom - pt.dot(z, z)) / s2
    return -0.5 * (stats.n_obs * pt.log(2.0 * np.pi * s2) + logdet_dom + logdet_T + quad)


def marginal_loglik_np(stats: MarginalStats, fixed_var, sigma, dom_sigma, rest_sigma) -> float:
    """The same marginal log-likelihood in NumPy, for one set of SDs (used in checks)."""
    s2 = sigma**2
    va = dom_sigma**2
    w = va / (s2 + stats.count_values * va)
    logdet_dom = np.sum(stats.count_multiplicity * np.log1p(stats.count_values * va / s2))
    A = stats.wbwb - np.tensordot(w, stats.G, axes=1)
    u = stats.wbr - w @ stats.g
    lam = small_block_variances(stats, fixed_var, [sg**2 for sg in rest_sigma])
    scale = np.sqrt(lam) / sigma
    L = np.linalg.cholesky(np.eye(stats.size) + scale[:, None] * A * scale[None, :])
    z = np.linalg.solve(L, scale * u)
    quad = (stats.rr - w @ stats.h - z @ z) / s2
    return float(-0.5 * (stats.n_obs * np.log(2 * np.pi * s2) + logdet_dom + 2 * np.log(np.diag(L)).sum() + quad))
