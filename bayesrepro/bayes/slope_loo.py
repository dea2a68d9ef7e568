"""Leave-one-item-out log-likelihood of a random-slope posterior whose every term is of one grouping factor.

As for random intercepts (``loo``), the unit left out is the item, with its
own effects integrated out: given a draw's coefficients β, residual σ and the
covariance Σ of the item's effects (block-diagonal over the factor's terms,
``(x || g)``), item i's rows are jointly

    y_i ~ N(X_i β, σ² I + Z_i Σ Z_i'),

Z_i the terms' model-matrix rows of the item. With Σ = T T' and
M = I + T' Z_i'Z_i T / σ², the determinant lemma and Woodbury's identity give

    log det V = n_i log σ² + log det M,
    r' V⁻¹ r  = [r'r − (T'Z_i'r)' M⁻¹ (T'Z_i'r) / σ²] / σ²,     r = y_i − X_i β,

from per-item sums (Z'Z, Z'X, Z'y, X'X, X'y, y'y) and each draw's β, σ, Σ,
the quantities the slope posterior records. Terms of another factor would
need each draw's effects of that factor, which it does not record.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from ..errors import BayesreproError


def slope_item_factor(frame) -> str | None:
    """The one grouping factor every random-effect term is of, or None when the terms have several."""
    factors = {term.factor for term in frame.spec.random_terms}
    return ":".join(next(iter(factors))) if len(factors) == 1 else None


def add_slope_item_loglik(fit) -> None:
    """Store the per-item log-likelihood of every draw of a random-slope fit in ``fit.idata.log_likelihood``."""
    import xarray as xr

    from .term_layout import term_covariances

    factor = slope_item_factor(fit.frame)
    if factor is None or not fit.terms:
        raise BayesreproError("leave-one-item-out LOO of a random-slope model needs every random term to be of one "
                              "grouping factor (the items)")
    terms, frame = fit.terms, fit.frame
    codes, levels = terms[0].codes, terms[0].levels
    Z = np.hstack([term.matrix for term in terms])
    X, y = np.asarray(frame.X, dtype=float), np.asarray(frame.y, dtype=float)
    sums = _item_sums(codes, len(levels), Z, X, y)
    sigma_blocks = [term_covariances(fit.draws, term) for term in terms]
    shape = sigma_blocks[0].shape[:2]
    draws = int(np.prod(shape))
    q = Z.shape[1]
    sigma_effects = np.zeros((draws, q, q))     # block-diagonal: the terms' effects are independent
    start = 0
    for block in sigma_blocks:
        nc = block.shape[-1]
        sigma_effects[:, start:start + nc, start:start + nc] = block.reshape(draws, nc, nc)
        start += nc
    beta = fit.draws["fixed"].reshape(draws, X.shape[1])
    s2 = fit.draws["sigma"].reshape(draws) ** 2
    loglik = _marginal_loglik(sums, beta, s2, sigma_effects)
    dim = f"{factor}__level"
    values = xr.DataArray(loglik.reshape(*shape, len(levels)),
                          coords={"chain": np.arange(shape[0]), "draw": np.arange(shape[1]), dim: list(levels)},
                          dims=("chain", "draw", dim))
    fit.idata.add_groups(log_likelihood=xr.Dataset({"item": values}))


# draws x items x columns² held at once while the per-item matrices M are formed and factorised
_CHUNK_VALUES = 4_000_000


def _item_sums(codes: np.ndarray, n_items: int, Z: np.ndarray, X: np.ndarray, y: np.ndarray) -> dict:
    """Per item: its rows' count and the cross-products of Z, X and y."""
    rows = len(y)
    by_item = sp.csr_matrix((np.ones(rows), (codes, np.arange(rows))), shape=(n_items, rows))

    def outer(a, b):   # column by column: a rows x columns² array could outgrow memory
        return np.stack([by_item @ (a * b[:, [k]]) for k in range(b.shape[1])], axis=-1)

    return {"n": np.asarray(by_item.sum(axis=1)).ravel(), "zz": outer(Z, Z), "zx": outer(Z, X),
            "zy": by_item @ (Z * y[:, None]), "xx": outer(X, X), "xy": by_item @ (X * y[:, None]),
            "yy": by_item @ (y * y)}


def _marginal_loglik(sums: dict, beta: np.ndarray, s2: np.ndarray, sigma_effects: np.ndarray) -> np.ndarray:
    """log N(y_i; X_i β, σ² I + Z_i Σ Z_i') for every draw (rows) and item (columns)."""
    eigenvalues, vectors = np.linalg.eigh(sigma_effects)
    factor = vectors * np.sqrt(np.clip(eigenvalues, 0.0, None))[:, None, :]       # Σ = T T', any Σ ⪰ 0
    n_items, q = sums["zz"].shape[:2]
    step = max(1, _CHUNK_VALUES // max(1, n_items * q * q))
    result = np.empty((len(s2), n_items))
    for start in range(0, len(s2), step):
        part = slice(start, start + step)
        b, t, v = beta[part], factor[part], s2[part][:, None]
        squares = (sums["yy"][None, :] - 2.0 * b @ sums["xy"].T
                   + np.einsum("dp,ipk,dk->di", b, sums["xx"], b, optimize=True))
        zr = sums["zy"][None, :, :] - np.einsum("iqp,dp->diq", sums["zx"], b, optimize=True)
        u = np.einsum("dqk,diq->dik", t, zr, optimize=True)
        m = np.einsum("dqk,iqr,drl->dikl", t, sums["zz"], t, optimize=True) / v[..., None, None]
        m += np.eye(q)
        chol = np.linalg.cholesky(m)
        log_det = 2.0 * np.log(np.diagonal(chol, axis1=-2, axis2=-1)).sum(axis=-1)
        solved = np.linalg.solve(m, u[..., None])[..., 0]
        quadratic = (squares - np.sum(u * solved, axis=-1) / v) / v
        result[part] = -0.5 * sums["n"][None, :] * np.log(2.0 * np.pi * v) - 0.5 * log_det - 0.5 * quadratic
    return result
