"""Satterthwaite and Kenward–Roger derivatives for models with random slopes and correlated effects.

The variance parameters ψ are the elements of each term's covariance matrix
Σ = σ²TT' (its lower triangle) and the residual σ², as pbkrtest's
``vcovAdj`` parametrises them: V = σ²I + Σ_r ψ_r V_r is linear in ψ, with
V_r = Z D_r Z' and D_r, per level of the term, the symmetric indicator of
the element (E_ii for a variance, E_ij + E_ji for a covariance). Every
product of ``ddf.variance_derivatives`` then holds with the block of a
component replaced by D_r; Kenward–Roger works on these.

Satterthwaite follows lmerTest, which differentiates in (θ, σ): the chain
rule takes ∂Φ/∂ψ and the observed information to those parameters,
I_(θ,σ) = J'I_ψJ − Σ_r s_r ∂²ψ_r, with J = ∂ψ/∂(θ, σ) and s the REML score
in ψ. At an interior optimum s = 0 and ν is the one of ψ; at a singular fit
(an SD of zero, or a correlation of ±1) s is not zero, and the directions of
θ whose first derivatives of ψ vanish there drop out, as in lmerTest.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ..design import ModelFrame
from ..design.random_design import RandomDesign, lower_triangle, random_design
from ..errors import BayesreproError
from .covariance_structure import term_covariance
from .ddf import DENSE_LIMIT, VarianceDerivatives, scaled_derivatives, woodbury_products


def slope_dense_size(frame: ModelFrame) -> int:
    """Rows of the dense matrices: columns of Z (levels times the term's columns) plus fixed effects."""
    return random_design(frame.spec, frame.data).q + frame.n_fixed


def slope_variance_derivatives(frame: ModelFrame, theta: np.ndarray, sigma2: float) -> VarianceDerivatives:
    """``ddf.VarianceDerivatives`` of a REML fit (θ, σ²) of ``frame``, a model with random slopes."""
    frame = frame.require_rows("small-sample tests of a model with random slopes")
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
    names, variances, indicators = covariance_parameters(design, theta, sigma2)

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
    in_psi = scaled_derivatives([*names, "Residual"], np.append(variances, sigma2), np.ones(n_comp, dtype=bool),
                                sigma2, w.phi_scaled, sandwich, q_scaled, trace, quadratic)
    # ∂ℓ_R/∂ψ_r = −½tr(PV_r) + ½y'PV_rPy, with P = P̃/σ²
    score = np.append([-0.5 * float(d.multiply(b1).sum()) / sigma2 + 0.5 * float(py @ dpy) / sigma2**2
                       for d, dpy in zip(indicators, d_py)], -0.5 * w.trace_p1 / sigma2 + 0.5 * w.y_p2_y / sigma2**2)
    jacobian, second = theta_sigma_chain(design, theta, np.sqrt(sigma2))
    return dataclasses.replace(
        in_psi, free=np.ones(jacobian.shape[1], dtype=bool),
        jacobian=[sum(jacobian[r, a] * in_psi.jacobian[r] for r in range(n_comp)) for a in range(jacobian.shape[1])],
        observed_information=jacobian.T @ in_psi.observed_information @ jacobian - np.einsum("r,rab->ab", score, second))


def theta_sigma_chain(design: RandomDesign, theta: np.ndarray, sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """J = ∂ψ/∂(θ, σ) and ∂²ψ_r/∂(θ, σ)², for ψ in the order of ``covariance_parameters`` then σ²."""
    n_theta = len(theta)
    rows = []
    for block in design.blocks:
        t = block.factor_of(theta)
        lower = [(int(a), int(b)) for a, b in zip(*lower_triangle(block.nc))]
        position = {pair: block.theta_offset + k for k, pair in enumerate(lower)}
        for i, j in lower:
            first = np.zeros(n_theta + 1)
            second = np.zeros((n_theta + 1, n_theta + 1))
            # M_ij = Σ_k T_ik T_jk: ∂M_ij/∂T_ab = δ_ia T_jb + δ_ja T_ib, ∂²M_ij/∂T_ab∂T_cb = δ_ia δ_jc + δ_ja δ_ic
            for (a, b), x in position.items():
                first[x] = sigma**2 * ((a == i) * t[j, b] + (a == j) * t[i, b])
                for (c, d), y in position.items():
                    if b == d:
                        second[x, y] = sigma**2 * ((a == i) * (c == j) + (a == j) * (c == i))
            m = float(t[i] @ t[j])
            first[n_theta] = 2.0 * sigma * m
            second[:n_theta, n_theta] = second[n_theta, :n_theta] = 2.0 * first[:n_theta] / sigma
            second[n_theta, n_theta] = 2.0 * m
            rows.append((first, second))
    residual_first, residual_second = np.zeros(n_theta + 1), np.zeros((n_theta + 1, n_theta + 1))
    residual_first[n_theta], residual_second[n_theta, n_theta] = 2.0 * sigma, 2.0
    rows.append((residual_first, residual_second))
    return np.array([r[0] for r in rows]), np.array([r[1] for r in rows])


def covariance_parameters(design: RandomDesign, theta: np.ndarray, sigma2: float):
    """Per element of every term's Σ (lower triangle, column by column): its name, value and D_r, the sparse
    q × q indicator with V_r = Z D_r Z'."""
    names, values, indicators = [], [], []
    for block in design.blocks:
        sigma = term_covariance(block, theta, sigma2)
        starts = block.offset + np.arange(block.n_levels) * block.nc
        for i, j in zip(*lower_triangle(block.nc)):
            rows, cols = starts + i, starts + j
            if i != j:
                rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
            indicators.append(sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(design.q, design.q)))
            what = f"var({block.columns[i]})" if i == j else f"cov({block.columns[j]}, {block.columns[i]})"
            names.append(f"{block.group}: {what}")
            values.append(sigma[i, j])
    return names, np.array(values), indicators
