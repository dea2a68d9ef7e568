"""Satterthwaite and Kenward–Roger derivatives for models with random slopes and correlated effects.

The variance parameters ψ are the elements of each term's covariance matrix
Σ = σ²TT' (its lower triangle) and the residual σ², as pbkrtest's
``vcovAdj`` parametrises them: V = σ²I + Σ_r ψ_r V_r is linear in ψ, with
V_r = Z D_r Z' and D_r, per level of the term, the symmetric indicator of
the element (E_ii for a variance, E_ij + E_ji for a covariance). Every
product of ``ddf.variance_derivatives`` then holds with the block of a
component replaced by D_r. Satterthwaite's ν is invariant to the
parametrisation at an interior optimum, so it equals lmerTest's, computed
there on (θ, σ); at a singular fit the parameters of an SD estimated at zero
are held there, as for random intercepts.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ..design import ModelFrame
from ..design.random_design import RandomDesign, lower_triangle, random_design
from ..errors import BayesreproError
from .covariance_structure import term_covariance
from .ddf import DENSE_LIMIT, VarianceDerivatives, scaled_derivatives, woodbury_products
from .optimise import BOUNDARY_THETA


def slope_dense_size(frame: ModelFrame) -> int:
    """Rows of the dense matrices: columns of Z (levels times the term's columns) plus fixed effects."""
    return random_design(frame.spec, frame.data).q + frame.n_fixed


def slope_variance_derivatives(frame: ModelFrame, theta: np.ndarray, sigma2: float) -> VarianceDerivatives:
    """``ddf.VarianceDerivatives`` of a REML fit (θ, σ²) of ``frame``, a model with random slopes."""
    frame.require_rows("small-sample tests of a model with random slopes")
    design = random_design(frame.spec, frame.data)
    q, p = design.q, frame.n_fixed
    if q + p > DENSE_LIMIT:
        raise BayesreproError(
            f"Satterthwaite and Kenward-Roger need dense matrices of {q + p} random-effect columns and fixed "
            f"effects (limit {DENSE_LIMIT}); use the parametric bootstrap (--reference bootstrap) for this design")
    theta = np.asarray(theta, dtype=float)
    u_matrix = sp.hstack([design.Z, sp.csc_matrix(frame.X)], format="csc")
    gram = (u_matrix.T @ u_matrix).toarray()
    u = np.asarray(u_matrix.T @ frame.y).ravel()
    lam = design.relative_factor(theta).toarray()
    m = lam.T @ gram[:q, :q] @ lam + np.eye(q)
    k = lam @ scipy.linalg.cho_solve(scipy.linalg.cho_factor(m), lam.T)
    w = woodbury_products(gram, u, float(frame.y @ frame.y), len(frame.y), k, p)
    fixed = slice(q, q + p)
    names, variances, free, indicators = covariance_parameters(design, theta, sigma2)

    zx1 = w.a1[:q, fixed]                                   # Z'W⁻¹X
    b1, py = w.b1[:q, :q], w.py[:q]
    d_zx = [d @ zx1 for d in indicators]                    # D_r Z'W⁻¹X
    d_b1 = [np.asarray(d @ b1) for d in indicators]         # D_r Z'P̃Z
    d_py = [d @ py for d in indicators]
    n_comp = len(indicators) + 1
    residual = n_comp - 1
    sandwich = [zx1.T @ dzx for dzx in d_zx] + [w.a2[fixed, fixed]]
    q_scaled = {(residual, residual): w.a3[fixed, fixed]}
    trace = np.zeros((n_comp, n_comp))
    quadratic = np.zeros((n_comp, n_comp))
    trace[residual, residual], quadratic[residual, residual] = w.trace_p2, w.y_p3_y
    for r in range(residual):
        q_scaled[r, residual] = d_zx[r].T @ w.a2[:q, fixed]
        trace[r, residual] = float(indicators[r].multiply(w.b2[:q, :q]).sum())
        quadratic[r, residual] = float(w.p2y[:q] @ d_py[r])
        for s in range(r, residual):
            q_scaled[r, s] = d_zx[r].T @ w.a1[:q, :q] @ d_zx[s]
            trace[r, s] = float(np.sum(d_b1[r] * d_b1[s].T))
            quadratic[r, s] = float(d_py[r] @ b1 @ d_py[s])
    trace = np.triu(trace) + np.triu(trace, 1).T
    quadratic = np.triu(quadratic) + np.triu(quadratic, 1).T
    return scaled_derivatives([*names, "Residual"], np.append(variances, sigma2), np.append(free, True), sigma2,
                              w.phi_scaled, sandwich, q_scaled, trace, quadratic)


def covariance_parameters(design: RandomDesign, theta: np.ndarray, sigma2: float):
    """Per element of every term's Σ (lower triangle, column by column): its name, value, whether it is free
    (no SD of its pair estimated at zero) and D_r, the sparse q × q indicator with V_r = Z D_r Z'."""
    names, values, free, indicators = [], [], [], []
    for block in design.blocks:
        sigma = term_covariance(block, theta, sigma2)
        zero_sd = np.sqrt(np.diag(sigma)) < BOUNDARY_THETA * np.sqrt(sigma2)
        starts = block.offset + np.arange(block.n_levels) * block.nc
        for i, j in zip(*lower_triangle(block.nc)):
            rows, cols = starts + i, starts + j
            if i != j:
                rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
            indicators.append(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(design.q, design.q)))
            what = f"var({block.columns[i]})" if i == j else f"cov({block.columns[j]}, {block.columns[i]})"
            names.append(f"{block.group}: {what}")
            values.append(sigma[i, j])
            free.append(not (zero_sd[i] or zero_sd[j]))
    return names, np.array(values), np.array(free, dtype=bool), indicators
