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
from ..runtime import idle_core_threads
from .covariance_structure import term_covariance
from .reml_derivatives import DENSE_LIMIT, VarianceDerivatives, scaled_derivatives
from .deviance import MAX_BLAS_THREADS, PARALLEL_BLAS_SIZE


def slope_dense_size(frame: ModelFrame) -> int:
    """Rows of the dense matrices: columns of Z (levels times the term's columns) plus fixed effects."""
    return random_design(frame.spec, frame.data).q + frame.n_fixed


def slope_variance_derivatives(frame: ModelFrame, theta: np.ndarray, sigma2: float,
                               kenward_roger: bool = True) -> VarianceDerivatives:
    """``reml_derivatives.VarianceDerivatives`` of a REML fit (θ, σ²) of ``frame``, a model with random slopes.

    ``kenward_roger=False`` leaves out Q_rs, which only Kenward–Roger needs (Satterthwaite alone).
    """
    frame = frame.require_rows("small-sample tests of a model with random slopes")
    design = random_design(frame.spec, frame.data)
    q, p = design.q, frame.n_fixed
    if q + p > DENSE_LIMIT:
        raise BayesreproError(
            f"Satterthwaite and Kenward-Roger need dense matrices of {q + p} random-effect columns and fixed "
            f"effects (limit {DENSE_LIMIT}); use the parametric bootstrap (--reference bootstrap) for this design")
    # the dense products of order q share out over the cores idle at the time, as the fits' dense factors do
    with idle_core_threads(MAX_BLAS_THREADS if q >= PARALLEL_BLAS_SIZE else 1):
        return _derivatives(frame, design, np.asarray(theta, dtype=float), sigma2, kenward_roger)


def _derivatives(frame: ModelFrame, design: RandomDesign, theta: np.ndarray, sigma2: float,
                 kenward_roger: bool) -> VarianceDerivatives:
    q, p = design.q, frame.n_fixed
    x, y = np.asarray(frame.X, dtype=float), np.asarray(frame.y, dtype=float)
    system = _PenalizedSystem(design.Z, design.relative_factor(theta), x)
    phi_scaled, zx1 = system.phi_scaled, system.zx1
    r1 = system.p_tilde(y)                                  # P̃y
    r2 = system.p_tilde(r1)                                 # P̃²y
    py, p2y = system.z.T @ r1, system.z.T @ r2
    y_p2_y, y_p3_y = float(r1 @ r1), float(r1 @ r2)
    a1_zz = system.z_winv_z()                               # Z'W⁻¹Z
    b1 = a1_zz - zx1 @ phi_scaled @ zx1.T                   # Z'P̃Z
    if not kenward_roger:
        del a1_zz
    # P̃WP̃ = P̃ with W = I + ZΛΛ'Z' gives P̃ = P̃² + P̃ZΛΛ'Z'P̃, so Z'P̃²Z = b1 − EE' with E = b1Λ, and
    # tr(PV) = n − p gives tr(P̃) = n − p − tr(Λ'b1Λ)
    e = np.asarray((system.lam.T @ b1).T)                   # b1Λ (q × q)
    inner = np.asarray(system.lam.T @ e)                    # Λ'b1Λ
    trace_p1 = len(y) - p - float(np.trace(inner))
    trace_p2 = trace_p1 - float(np.trace(inner)) + float(np.sum(inner * inner))
    names, variances, pairs = covariance_parameters(design, theta, sigma2)

    fixed = slice(q, q + p)
    n_comp = len(pairs) + 1
    residual = n_comp - 1
    indicators = [sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(q, q)) for rows, cols in pairs]
    d_zx = [d @ zx1 for d in indicators]                    # D_r Z'W⁻¹X
    d_py = [d @ py for d in indicators]
    b1_d_py = [b1 @ v for v in d_py]
    sandwich = [zx1.T @ dzx for dzx in d_zx] + [system.wx.T @ system.wx]
    trace = np.zeros((n_comp, n_comp))
    quadratic = np.zeros((n_comp, n_comp))
    trace[residual, residual], quadratic[residual, residual] = trace_p2, y_p3_y
    own = np.array([float(b1[rows, cols].sum()) for rows, cols in pairs])          # tr(D_r b1)
    for r, (rows, cols) in enumerate(pairs):
        # tr(D_r Z'P̃²Z) = tr(D_r b1) − Σ_(k,l)∈D_r E_k·E_l
        trace[r, residual] = own[r] - float(np.einsum("ij,ij->", e[rows], e[cols]))
        quadratic[r, residual] = float(p2y @ d_py[r])
        for s in range(r, residual):
            rows_s, cols_s = pairs[s]
            # tr(D_r b1 D_s b1) = Σ_(k,l)∈D_r Σ_(m,o)∈D_s b1[l, m] b1[o, k]
            trace[r, s] = float(np.sum(b1[np.ix_(cols, rows_s)] * b1[np.ix_(rows, cols_s)]))
            quadratic[r, s] = float(d_py[r] @ b1_d_py[s])
    trace = np.triu(trace) + np.triu(trace, 1).T
    quadratic = np.triu(quadratic) + np.triu(quadratic, 1).T
    q_scaled = None
    if kenward_roger:
        w2x = system.w_inv(system.wx)                        # W⁻²X
        a2_zx = system.z.T @ w2x                             # Z'W⁻²X
        q_scaled = {(residual, residual): system.wx.T @ w2x}
        for r in range(residual):
            q_scaled[r, residual] = d_zx[r].T @ a2_zx
            for s in range(r, residual):
                q_scaled[r, s] = d_zx[r].T @ a1_zz @ d_zx[s]
    in_psi = scaled_derivatives([*names, "Residual"], np.append(variances, sigma2), np.ones(n_comp, dtype=bool),
                                sigma2, phi_scaled, sandwich, q_scaled, trace, quadratic)
    # ∂ℓ_R/∂ψ_r = −½tr(PV_r) + ½y'PV_rPy, with P = P̃/σ²
    score = np.append([-0.5 * own[r] / sigma2 + 0.5 * float(py @ d_py[r]) / sigma2**2 for r in range(residual)],
                      -0.5 * trace_p1 / sigma2 + 0.5 * y_p2_y / sigma2**2)
    jacobian, second = theta_sigma_chain(design, theta, np.sqrt(sigma2))
    return dataclasses.replace(
        in_psi, free=np.ones(jacobian.shape[1], dtype=bool),
        jacobian=[sum(jacobian[r, a] * in_psi.jacobian[r] for r in range(n_comp)) for a in range(jacobian.shape[1])],
        observed_information=jacobian.T @ in_psi.observed_information @ jacobian - np.einsum("r,rab->ab", score, second))


class _PenalizedSystem:
    """W = V/σ² = I + ZΛΛ'Z' through the dense Cholesky factor L of M = Λ'Z'ZΛ + I: W⁻¹ = I − ZΛM⁻¹Λ'Z'."""

    def __init__(self, z: sp.csc_matrix, lam: sp.csc_matrix, x: np.ndarray):
        self.z, self.lam, self.x = z, lam, x
        self.zl = (z @ lam).tocsc()
        m = (self.zl.T @ self.zl).toarray()
        m[np.diag_indices_from(m)] += 1.0
        self.chol = scipy.linalg.cholesky(m, lower=True, check_finite=False)
        self.wx = self.w_inv(x)                              # W⁻¹X
        self.phi_scaled = np.linalg.inv(x.T @ self.wx)       # (X'W⁻¹X)⁻¹
        self.zx1 = z.T @ self.wx                             # Z'W⁻¹X

    def w_inv(self, v: np.ndarray) -> np.ndarray:
        """W⁻¹v for rows × k (or a vector of rows)."""
        return v - self.zl @ scipy.linalg.cho_solve((self.chol, True), self.zl.T @ v, check_finite=False)

    def p_tilde(self, v: np.ndarray) -> np.ndarray:
        """P̃v = σ²Pv = W⁻¹v − W⁻¹XΦ̃X'W⁻¹v."""
        return self.w_inv(v) - self.wx @ (self.phi_scaled @ (self.wx.T @ v))

    def z_winv_z(self) -> np.ndarray:
        """Z'W⁻¹Z = G − C'C with G = Z'Z and C = L⁻¹Λ'G: one triangular solve and one symmetric rank-q update."""
        gram = self.z.T @ self.z
        c = scipy.linalg.solve_triangular(self.chol, (self.lam.T @ gram).toarray(), lower=True, check_finite=False)
        out = scipy.linalg.blas.dsyrk(-1.0, c, beta=1.0, c=np.asfortranarray(gram.toarray()), trans=1, lower=1)
        return np.tril(out) + np.tril(out, -1).T


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
    """Per element of every term's Σ (lower triangle, column by column): its name, value and the entries (rows,
    cols) of D_r, the q × q indicator with V_r = Z D_r Z' (both (a, b) and (b, a) for a covariance)."""
    names, values, pairs = [], [], []
    for block in design.blocks:
        sigma = term_covariance(block, theta, sigma2)
        starts = block.offset + np.arange(block.n_levels) * block.nc
        for i, j in zip(*lower_triangle(block.nc)):
            rows, cols = starts + i, starts + j
            if i != j:
                rows, cols = np.concatenate([rows, cols]), np.concatenate([cols, rows])
            pairs.append((rows, cols))
            what = f"var({block.columns[i]})" if i == j else f"cov({block.columns[j]}, {block.columns[i]})"
            names.append(f"{block.group}: {what}")
            values.append(sigma[i, j])
    return names, np.array(values), pairs
