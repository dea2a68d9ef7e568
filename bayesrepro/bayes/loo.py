"""LOO comparison of nested models, the Bayesian counterpart of the GLRT.

The fast path integrates the item effects out, so a pointwise likelihood per
observation is not available without them, and the observations of one item
are not conditionally independent once the item effect is integrated out.
The unit left out is therefore the *item* (the dominant factor): the grouped
log-likelihood log p(y_i | fixed effects, other factors' effects, σ's) of all
of item i's observations, with its own effect integrated out,

    −n_i/2 log(2πσ²) − ½ log(1 + n_i σ_a²/σ²) − [SS_i − σ_a² S_i²/(σ² + n_i σ_a²)] / (2σ²),

S_i and SS_i the sum and sum of squares of item i's residuals without its
effect. PSIS-LOO over items (leave-one-item-out) is what ``arviz.loo``
computes from it; models compared must share the same items.
"""

from __future__ import annotations

import numpy as np

from ..errors import BayesreproError
from ..reliability import RESIDUAL
from .gaussian_model import sd_name
from .marginal import marginal_stats


def add_item_loglik(fit) -> None:
    """Store the per-item log-likelihood of every draw in ``fit.idata.log_likelihood``."""
    import xarray as xr

    if fit.backend != "fast":
        raise BayesreproError("item-level LOO is computed for the fast backend; refit with backend='fast'")
    draws = fit.draws
    if "fixed" not in draws:
        raise BayesreproError("LOO needs the effect draws; refit with effects=True")
    frame, spec = fit.frame, fit.priors
    stats = marginal_stats(frame, spec)
    shape = draws.shape
    fixed = draws["fixed"].reshape(-1, stats.n_fixed)
    centred = fixed.copy()
    if stats.intercept_index is not None:
        centred[:, stats.intercept_index] += fixed @ stats.x_means
    parts = [centred] + [draws[f"1|{name}"].reshape(centred.shape[0], -1) for name in stats.rest]
    delta_b = np.hstack(parts) - stats.prior_mean[None, :]

    dominant = next(g for g in frame.groups if g.name == stats.dominant)
    W = _small_design(frame, spec, stats)
    r = frame.y - (frame.X - spec.x_means) @ spec.fixed_mu
    codes, n_items, s = dominant.codes, dominant.n_levels, stats.size
    rr = np.bincount(codes, weights=r * r, minlength=n_items)
    wr = np.column_stack([np.bincount(codes, weights=W[:, j] * r, minlength=n_items) for j in range(s)])
    ww = np.empty((n_items, s, s))
    for j in range(s):
        for k in range(j, s):
            ww[:, j, k] = ww[:, k, j] = np.bincount(codes, weights=W[:, j] * W[:, k], minlength=n_items)

    s2 = (draws[sd_name(RESIDUAL)].reshape(-1) ** 2)[:, None]
    va = (draws[sd_name(stats.dominant)].reshape(-1) ** 2)[:, None]
    n = stats.counts[None, :]
    sums = stats.dominant_r[None, :] - np.asarray(stats.cross @ delta_b.T).T
    squares = rr[None, :] - 2.0 * delta_b @ wr.T + np.einsum("di,nij,dj->dn", delta_b, ww, delta_b, optimize=True)
    loglik = (
        -0.5 * n * np.log(2 * np.pi * s2)
        - 0.5 * np.log1p(n * va / s2)
        - (squares - va * sums**2 / (s2 + n * va)) / (2 * s2)
    )
    dim = f"{stats.dominant}__level"
    values = xr.DataArray(
        loglik.reshape(*shape, n_items),
        coords={"chain": np.arange(shape[0]), "draw": np.arange(shape[1]), dim: list(dominant.levels)},
        dims=("chain", "draw", dim),
    )
    fit.idata.add_groups(log_likelihood=xr.Dataset({"item": values}))


def compare_models(fits: dict):
    """``arviz.compare`` of fits of the same data by leave-one-item-out PSIS-LOO."""
    import arviz as az

    items = {name: (fit.frame.n_obs, max(fit.frame.groups, key=lambda g: g.n_levels).name) for name, fit in fits.items()}
    if len(set(items.values())) != 1:
        raise BayesreproError(f"LOO comparison needs fits of the same rows and the same item factor, got {items}")
    from .slope_loo import add_slope_item_loglik

    for fit in fits.values():
        if "log_likelihood" not in fit.idata.groups():
            (add_slope_item_loglik if fit.terms else add_item_loglik)(fit)
    return az.compare({name: fit.idata for name, fit in fits.items()}, var_name="item")


def _small_design(frame, spec, stats) -> np.ndarray:
    columns = [frame.X - spec.x_means]
    by_name = {g.name: g for g in frame.groups}
    for name in stats.rest:
        g = by_name[name]
        columns.append(np.eye(g.n_levels)[g.codes])
    return np.hstack(columns)
