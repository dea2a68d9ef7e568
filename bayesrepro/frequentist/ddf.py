"""Small-sample F and t tests of fixed effects of REML fits: Satterthwaite and Kenward–Roger.

With variance parameters ψ = (σ²_1, …, σ²_K, σ²) the marginal covariance is
V = Σ_k ψ_k Z_kZ_k' + σ²I, linear in ψ with ∂V/∂ψ_r = V_r (Z_rZ_r', or I for
the residual). Both methods need, at the REML estimate,

- Φ = Var(β̂) = (X'V⁻¹X)⁻¹ and its derivatives ∂Φ/∂ψ_r = Φ X'V⁻¹V_rV⁻¹X Φ;
- P_r = −X'V⁻¹V_rV⁻¹X and Q_rs = X'V⁻¹V_rV⁻¹V_sV⁻¹X (Kenward–Roger);
- tr(PV_rPV_s), twice the expected REML information, and the observed
  information y'PV_rPV_sPy − ½tr(PV_rPV_s), with P = V⁻¹ − V⁻¹XΦX'V⁻¹.

Every one is a product of n-row matrices of the form U'f(V)U with
U = [Z, X], and by Woodbury (V = σ²(I + ZΛΛ'Z')) every such product is a
function of the Gram matrix U'U, U'y and y'y alone: the sufficient statistics.
The work is dense in the number of random-effect levels plus fixed effects,
never in the number of rows. Satterthwaite alone needs neither Q_rs nor any
product of two such dense matrices: ``satterthwaite_derivatives`` multiplies by
the Gram matrix through its diagonal block of the dominant factor's levels.

Satterthwaite follows lmerTest (Kuznetsova, Brockhoff & Christensen 2017):
ν = 2(lΦl')² / (g'A g), g_r = l ∂Φ/∂ψ_r l', A the inverse observed
information; components estimated at zero are held there (lmerTest's
(θ, σ) parametrisation gives them no weight), and a multi-row hypothesis is
split into the eigen-contrasts of LΦL'. Kenward–Roger follows pbkrtest
(Halekoh & Højsgaard 2014): the adjusted covariance Φ_A = Φ + 2ΦUΦ and the
scaled F statistic with its denominator degrees of freedom.

scipy.special (the F and t tails) is imported by the tests that use it: a fit
that only reads ``DENSE_LIMIT`` (every Gaussian ``vca``) would otherwise pay
for its import (0.1-0.2 s, see ``bayesrepro.links``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.linalg

from ..design import GaussianStats
from ..errors import BayesreproError
from .reml_derivatives import DENSE_LIMIT, VarianceDerivatives, scaled_derivatives

SATTERTHWAITE = "satterthwaite"
KENWARD_ROGER = "kenward-roger"
METHODS = (SATTERTHWAITE, KENWARD_ROGER)
# lmerTest's tolerances: eigenvalues of the information below this (relative)
# are dropped; F-test ddf are averaged when the eigen-contrasts' ν agree to it.
EIGEN_TOLERANCE = 1e-8
EQUAL_NU = 1e-8


@dataclass(frozen=True)
class SmallSampleTest:
    """An F test of H0: Lβ = 0 with small-sample denominator degrees of freedom."""

    method: str
    f: float
    ndf: int
    ddf: float
    p: float
    scaling: float = 1.0                # Kenward–Roger's F scaling (1 for Satterthwaite)

    def describe(self) -> str:
        name = "Kenward-Roger" if self.method == KENWARD_ROGER else "Satterthwaite"
        return f"{name} F({self.ndf}, {self.ddf:.4g}) of the REML fit"


def variance_derivatives(stats: GaussianStats, theta: np.ndarray, sigma2: float) -> VarianceDerivatives:
    """Every derivative of Φ the two methods need, at θ (formula order) and σ² of a REML fit."""
    gram, u, blocks, lam = _dense_system(stats, theta)
    theta = np.asarray(theta, dtype=float)
    q = len(lam)
    # Kz = ΛM⁻¹Λ with M = ΛZ'ZΛ + I
    m = lam[:, None] * gram[:q, :q] * lam[None, :] + np.eye(q)
    k = lam[:, None] * scipy.linalg.cho_solve(scipy.linalg.cho_factor(m), np.diag(lam)) if q else np.zeros((0, 0))
    w = woodbury_products(gram, u, stats.yty, stats.n_obs, k, stats.n_fixed)
    a1, a2, a3, b1 = w.a1, w.a2, w.a3, w.b1
    fixed = slice(q, gram.shape[0])

    n_comp = len(blocks) + 1
    residual = n_comp - 1
    sandwich = []            # X'W⁻¹V_rW⁻¹X
    for r in range(n_comp):
        if r == residual:
            sandwich.append(a2[fixed, fixed])
        else:
            sandwich.append(a1[fixed, blocks[r]] @ a1[blocks[r], fixed])
    q_scaled = {}
    trace = np.zeros((n_comp, n_comp))
    quadratic = np.zeros((n_comp, n_comp))
    for r in range(n_comp):
        for s in range(r, n_comp):
            if r == residual:                                    # then s is the residual too
                q_scaled[r, s] = a3[fixed, fixed]
                trace[r, s] = w.trace_p2
                quadratic[r, s] = w.y_p3_y
            elif s == residual:
                br = blocks[r]
                q_scaled[r, s] = a1[fixed, br] @ a2[br, fixed]
                trace[r, s] = np.trace(w.b2[br, br])
                quadratic[r, s] = float(w.p2y[br] @ w.py[br])
            else:
                br, bs = blocks[r], blocks[s]
                q_scaled[r, s] = a1[fixed, br] @ a1[br, bs] @ a1[bs, fixed]
                trace[r, s] = float(np.sum(b1[br, bs] ** 2))
                quadratic[r, s] = float(w.py[br] @ b1[br, bs] @ w.py[bs])
            trace[s, r], quadratic[s, r] = trace[r, s], quadratic[r, s]
    return scaled_derivatives([*stats.group_names, "Residual"], np.append(sigma2 * theta**2, sigma2),
                              np.append(theta > 0, True), sigma2, w.phi_scaled, sandwich, q_scaled, trace, quadratic)


@dataclass(frozen=True)
class WoodburyProducts:
    """The products U'f(W)U that every derivative is assembled from, W = V/σ² = I + UKU' (K = diag(Kz, 0))."""

    a1: np.ndarray            # U'W⁻¹U
    a2: np.ndarray            # U'W⁻²U
    a3: np.ndarray            # U'W⁻³U
    b1: np.ndarray            # U'P̃U
    b2: np.ndarray            # U'P̃²U
    py: np.ndarray            # U'P̃y
    p2y: np.ndarray           # U'P̃²y
    phi_scaled: np.ndarray    # Φ/σ² = (X'W⁻¹X)⁻¹
    y_p2_y: float
    y_p3_y: float
    trace_p1: float           # tr(P̃)
    trace_p2: float           # tr(P̃²)


def woodbury_products(gram: np.ndarray, u: np.ndarray, yty: float, n_obs: int, k: np.ndarray,
                      n_fixed: int) -> WoodburyProducts:
    """``WoodburyProducts`` from the Gram matrix of U = [Z, X], U'y, y'y and Kz = ΛM⁻¹Λ' (M = Λ'Z'ZΛ + I)."""
    size, p = gram.shape[0], n_fixed
    q = size - p
    fixed = slice(q, size)
    # W⁻¹ = I − U Kz U'
    g_k = gram[:, :q] @ k                                  # G Kz (its nonzero columns)
    a1 = gram - g_k @ gram[:q, :]
    a2 = a1 - g_k @ a1[:q, :]
    a3 = a2 - g_k @ a2[:q, :]
    phi_scaled = np.linalg.inv(a1[fixed, fixed])           # X'W⁻¹X = R_X'R_X
    # W⁻¹X = U F and P̃ = σ²P = I − U H U'
    f = np.zeros((size, p))
    f[:q] = -k @ gram[:q, fixed]
    f[fixed] = np.eye(p)
    h = f @ phi_scaled @ f.T
    h[:q, :q] += k
    g_h = gram @ h
    b1 = gram - g_h @ gram
    b2 = b1 - g_h @ b1
    py = u - g_h @ u
    p2y = py - g_h @ py
    y_p2_y = yty - 2.0 * float(u @ h @ u) + float(u @ h @ gram @ h @ u)
    trace_gh = float(np.trace(g_h))
    return WoodburyProducts(a1, a2, a3, b1, b2, py, p2y, phi_scaled, y_p2_y, y_p2_y - float(py @ h @ py),
                            n_obs - trace_gh, n_obs - 2.0 * trace_gh + float(np.sum(g_h * g_h.T)))


def satterthwaite_derivatives(stats: GaussianStats, theta: np.ndarray, sigma2: float) -> VarianceDerivatives:
    """What Satterthwaite needs of ``variance_derivatives`` (no Q_rs), through the dominant factor's diagonal block.

    Z_1'Z_1 is diagonal, so a product with the Gram matrix costs O(n1·m) per column instead of O(n1²), m being
    the other levels plus the fixed effects, and M⁻¹ follows from the Schur complement of that block; no
    product of two dense (levels × levels) matrices is formed.
    """
    gram, u, blocks, lam = _dense_system(stats, theta)
    theta = np.asarray(theta, dtype=float)
    size, p, q = gram.shape[0], stats.n_fixed, len(lam)
    n1 = len(stats.dominant_counts) if q else 0
    fixed = slice(q, size)
    k = np.zeros((size, size))                             # Kz = diag(ΛM⁻¹Λ, 0)
    k[:q, :q] = lam[:, None] * _schur_inverse(gram, n1, q, lam) * lam[None, :]
    g_k = _gram_times(gram, n1, k)                         # G Kz
    a1 = gram[:, fixed] - g_k[:, :q] @ gram[:q, fixed]     # U'W⁻¹X
    fixed_precision = a1[fixed]                            # X'W⁻¹X
    a2 = fixed_precision - g_k[fixed, :q] @ a1[:q]         # X'W⁻²X
    phi_scaled = np.linalg.inv(fixed_precision)
    f = -k[:, :q] @ gram[:q, fixed]                        # W⁻¹X = U F
    f[fixed] = np.eye(p)
    h = f @ phi_scaled @ f.T + k                           # P̃ = I − U H U'
    g_h = _gram_times(gram, n1, h)
    b1 = gram - _gram_times(gram, n1, g_h.T).T             # U'P̃U
    py = u - g_h @ u
    p2y = py - g_h @ py
    hu = h @ u
    y_p2_y = stats.yty - 2.0 * float(u @ hu) + float(hu @ (gram @ hu))
    y_p3_y = y_p2_y - float(py @ h @ py)
    trace_p2 = stats.n_obs - 2.0 * np.trace(g_h) + float(np.sum(g_h * g_h.T))

    n_comp = len(blocks) + 1
    residual = n_comp - 1
    sandwich = [a2 if r == residual else a1[blocks[r]].T @ a1[blocks[r]] for r in range(n_comp)]
    trace = np.zeros((n_comp, n_comp))
    quadratic = np.zeros((n_comp, n_comp))
    trace[residual, residual], quadratic[residual, residual] = trace_p2, y_p3_y
    for r in range(residual):
        br = blocks[r]
        # tr(U'P̃²U)_rr = tr(b1_rr) − Σ (G H)_r· ∘ (b1_·r)'
        trace[r, residual] = np.trace(b1[br, br]) - float(np.sum(g_h[br] * b1[:, br].T))
        quadratic[r, residual] = float(p2y[br] @ py[br])
        for s in range(r, residual):
            bs = blocks[s]
            trace[r, s] = float(np.sum(b1[br, bs] ** 2))
            quadratic[r, s] = float(py[br] @ b1[br, bs] @ py[bs])
    trace = np.triu(trace) + np.triu(trace, 1).T
    quadratic = np.triu(quadratic) + np.triu(quadratic, 1).T
    return scaled_derivatives([*stats.group_names, "Residual"], np.append(sigma2 * theta**2, sigma2),
                              np.append(theta > 0, True), sigma2, phi_scaled, sandwich, None, trace, quadratic)


def _dense_system(stats: GaussianStats, theta: np.ndarray):
    """``_gram``'s U'U, U'y and blocks, refused above DENSE_LIMIT, and Λ's diagonal in the elimination order."""
    gram, u, blocks = _gram(stats)
    size = gram.shape[0]
    if size > DENSE_LIMIT:
        raise BayesreproError(
            f"Satterthwaite and Kenward-Roger need dense matrices of {size} random-effect levels and fixed effects "
            f"(limit {DENSE_LIMIT}); use the parametric bootstrap (--reference bootstrap) for this design"
        )
    q = size - stats.n_fixed
    theta = np.asarray(theta, dtype=float)
    lam = np.repeat(theta[stats.order], [len(stats.dominant_counts), *stats.rest_sizes]) if q else np.zeros(0)
    return gram, u, blocks, lam


def _gram_times(gram: np.ndarray, n1: int, x: np.ndarray) -> np.ndarray:
    """G x for the Gram matrix G of ``_gram``, whose leading n1 × n1 block is diagonal."""
    out = gram[:, n1:] @ x[n1:]
    out[:n1] += np.diag(gram)[:n1, None] * x[:n1]
    out[n1:] += gram[n1:, :n1] @ x[:n1]
    return out


def _schur_inverse(gram: np.ndarray, n1: int, q: int, lam: np.ndarray) -> np.ndarray:
    """M⁻¹ of M = ΛZ'ZΛ + I = [[E, B], [B', F]], E diagonal: diag(E⁻¹, 0) + Y S⁻¹ Y' with Y = [−E⁻¹B; I]."""
    e = lam[:n1] ** 2 * np.diag(gram)[:n1] + 1.0
    b = lam[:n1, None] * gram[:n1, n1:q] * lam[None, n1:q]
    y = np.vstack([-b / e[:, None], np.eye(q - n1)])
    schur = lam[n1:q, None] * gram[n1:q, n1:q] * lam[None, n1:q] + np.eye(q - n1) + b.T @ y[:n1]
    inverse = y @ scipy.linalg.cho_solve(scipy.linalg.cho_factor(schur), y.T) if q > n1 else np.zeros((q, q))
    inverse[np.arange(n1), np.arange(n1)] += 1.0 / e
    return inverse


def _gram(stats: GaussianStats):
    """U'U and U'y for U = [Z (elimination order), X], the column block of each component (formula order)."""
    n1 = len(stats.dominant_counts)
    q_rest = len(stats.rest_zy)
    p = stats.n_fixed
    q = n1 + q_rest
    gram = np.zeros((q + p, q + p))
    gram[:n1, :n1] = np.diag(stats.dominant_counts)
    cross = stats.cross.toarray() if hasattr(stats.cross, "toarray") else stats.cross
    gram[:n1, n1:q] = cross
    gram[:n1, q:] = stats.dominant_zx
    gram[n1:q, n1:q] = stats.rest_gram
    gram[n1:q, q:] = stats.rest_zx
    gram[q:, q:] = stats.xtx
    gram = np.triu(gram) + np.triu(gram, 1).T
    u = np.concatenate([stats.dominant_zy, stats.rest_zy, stats.xty])
    offsets = np.concatenate([[0, n1], n1 + np.cumsum(stats.rest_sizes)]).astype(int) if stats.n_groups else [0]
    blocks = [None] * stats.n_groups
    for position, formula_index in enumerate(stats.order):
        blocks[formula_index] = slice(offsets[position], offsets[position + 1])
    return gram, u, blocks


@dataclass
class SmallSampleInference:
    """F tests and contrasts of a REML fit's fixed effects with small-sample degrees of freedom."""

    derivatives: VarianceDerivatives
    beta: np.ndarray
    _adjusted: tuple | None = field(default=None, repr=False)

    def f_test(self, L: np.ndarray, method: str) -> SmallSampleTest:
        """Test H0: Lβ = 0 (L of full row rank)."""
        L = np.atleast_2d(np.asarray(L, dtype=float))
        if method == SATTERTHWAITE:
            return self._satterthwaite_f(L)
        if method == KENWARD_ROGER:
            return self._kenward_roger_f(L)
        raise BayesreproError(f"small-sample method '{method}' is not known; use one of: {', '.join(METHODS)}")

    def contrasts(self, L: np.ndarray, method: str) -> tuple[np.ndarray, np.ndarray]:
        """Standard error and degrees of freedom of each row's estimate lβ̂ (for its t test)."""
        L = np.atleast_2d(np.asarray(L, dtype=float))
        if method == SATTERTHWAITE:
            se = np.sqrt(np.einsum("ij,jk,ik->i", L, self.derivatives.covariance, L))
            return se, np.array([self._satterthwaite_nu(row) for row in L])
        adjusted, _ = self._kenward_roger_covariance()
        se = np.sqrt(np.einsum("ij,jk,ik->i", L, adjusted, L))
        return se, np.array([self._kenward_roger_ddf(row[None, :])[0] for row in L])

    # ---------------------------------------------------------------- Satterthwaite

    def _satterthwaite_nu(self, row: np.ndarray) -> float:
        d = self.derivatives
        free = np.flatnonzero(d.free)
        variance = float(row @ d.covariance @ row)
        gradient = np.array([row @ d.jacobian[r] @ row for r in free])
        denominator = float(gradient @ _positive_inverse(d.observed_information[np.ix_(free, free)]) @ gradient)
        return 2.0 * variance**2 / denominator

    def _satterthwaite_f(self, L: np.ndarray) -> SmallSampleTest:
        d = self.derivatives
        values, vectors = np.linalg.eigh(L @ d.covariance @ L.T)
        order = np.argsort(values)[::-1]
        values, vectors = values[order], vectors[:, order]
        keep = values > max(np.sqrt(np.finfo(float).eps) * values[0], 0.0)
        contrasts = (vectors[:, keep].T @ L)
        t2 = (contrasts @ self.beta) ** 2 / values[keep]
        q = len(t2)
        f = float(t2.sum() / q)
        nu = np.array([self._satterthwaite_nu(row) for row in contrasts])
        ddf = _combined_ddf(nu)
        from scipy.special import fdtrc

        return SmallSampleTest(SATTERTHWAITE, f, q, ddf, float(fdtrc(q, ddf, f)))

    # ---------------------------------------------------------------- Kenward–Roger

    def _kenward_roger_covariance(self):
        """Φ_A = Φ + 2Φ[Σ_rs W_rs (Q_rs − P_rΦP_s)]Φ with W = 2 (tr PV_rPV_s)⁻¹, as pbkrtest's vcovAdj."""
        if self._adjusted is None:
            d = self.derivatives
            if d.q_matrices is None:
                raise BayesreproError("these small-sample statistics were built for Satterthwaite alone; "
                                      "build them with methods including 'kenward-roger'")
            phi = d.covariance
            information = d.information2
            eigen = np.abs(np.linalg.eigvalsh(information))
            w = 2.0 * (np.linalg.inv(information) if eigen.min() > 1e-10 else np.linalg.pinv(information))
            n = len(d.p_matrices)
            u = np.zeros_like(phi)
            for r in range(n):
                for s in range(r, n):
                    term = d.q_matrices[r, s] - d.p_matrices[r] @ phi @ d.p_matrices[s]
                    u += w[r, s] * (term if r == s else term + term.T)
            self._adjusted = (phi + 2.0 * phi @ u @ phi, w)
        return self._adjusted

    def _kenward_roger_ddf(self, L: np.ndarray) -> tuple[float, float]:
        """Denominator degrees of freedom and F scaling of pbkrtest's .KR_adjust for H0: Lβ = 0."""
        d = self.derivatives
        phi = d.covariance
        _, w = self._kenward_roger_covariance()
        theta = L.T @ np.linalg.solve(L @ phi @ L.T, L)
        u = [theta @ phi @ p_r @ phi for p_r in d.p_matrices]
        traces = np.array([np.trace(u_r) for u_r in u])
        products = np.array([[np.sum(u_r * u_s.T) for u_s in u] for u_r in u])
        a1 = float(traces @ w @ traces)
        a2 = float(np.sum(w * products))
        q = np.linalg.matrix_rank(L)
        b = (a1 + 6.0 * a2) / (2.0 * q)
        g = ((q + 1) * a1 - (q + 4) * a2) / ((q + 2) * a2)
        denominator = 3 * q + 2 * (1 - g)
        c1, c2, c3 = g / denominator, (q - g) / denominator, (q + 2 - g) / denominator
        v0 = 1 + c1 * b
        v0 = 0.0 if abs(v0) < 1e-10 else v0
        v1, v2 = 1 - c2 * b, 1 - c3 * b
        ratio = 0.0 if v1 == 0 else (1 - a2 / q) / v1
        with np.errstate(divide="ignore"):   # v2 = 0 (a t test with exactly 4 df): ρ = ∞ and ddf = 4, as in R
            rho = ratio**2 * v0 / (q * v2)
        ddf = 4 + (q + 2) / (q * rho - 1)
        scaling = 1.0 if abs(ddf - 2) < 1e-2 else ddf * (1 - a2 / q) / (ddf - 2)
        return ddf, scaling

    def _kenward_roger_f(self, L: np.ndarray) -> SmallSampleTest:
        from scipy.special import fdtrc

        adjusted, _ = self._kenward_roger_covariance()
        estimate = L @ self.beta
        q = np.linalg.matrix_rank(L)
        wald = float(estimate @ np.linalg.solve(L @ adjusted @ L.T, estimate))
        ddf, scaling = self._kenward_roger_ddf(L)
        f = scaling * wald / q
        return SmallSampleTest(KENWARD_ROGER, f, q, ddf, float(fdtrc(q, ddf, f)), scaling)


def small_sample_inference(stats: GaussianStats, fit, methods: tuple = METHODS) -> SmallSampleInference:
    """The small-sample machinery at a REML fit (an ``LmmFit`` of the model whose statistics these are).

    ``methods=(SATTERTHWAITE,)`` takes the cheaper route that leaves out what only Kenward–Roger needs.
    """
    _require_reml(fit)
    derivatives = satterthwaite_derivatives if KENWARD_ROGER not in methods else variance_derivatives
    return SmallSampleInference(derivatives(stats, fit.theta, fit.variances["Residual"]), fit.beta)


def frame_inference(frame, fit, methods: tuple = METHODS) -> SmallSampleInference:
    """``small_sample_inference`` at a REML fit of a model frame: from its sufficient statistics for random
    intercepts, from its rows (``slope_ddf``) for random slopes."""
    if not frame.spec.has_slopes:
        return small_sample_inference(frame.stats(), fit, methods)
    from .slope_ddf import slope_variance_derivatives

    _require_reml(fit)
    return SmallSampleInference(slope_variance_derivatives(frame, fit.theta, fit.variances["Residual"],
                                                           kenward_roger=KENWARD_ROGER in methods), fit.beta)


def t_p_values(estimate: np.ndarray, se: np.ndarray, df: np.ndarray) -> np.ndarray:
    """Two-sided p-values of t = estimate/se on df degrees of freedom."""
    from scipy.special import stdtr

    return 2.0 * stdtr(df, -np.abs(estimate / se))


def _require_reml(fit) -> None:
    if fit.method != "reml":
        raise BayesreproError("Satterthwaite and Kenward-Roger degrees of freedom need a REML fit (method='reml')")


def _combined_ddf(nu: np.ndarray) -> float:
    """lmerTest's ddf of an F statistic that averages q independent t² with ν_m degrees of freedom."""
    if len(nu) == 1:
        return float(nu[0])
    if np.all(np.abs(np.diff(nu)) < EQUAL_NU):
        return float(nu.mean())
    if np.any(nu <= 2):
        return 2.0
    e = float(np.sum(nu / (nu - 2)))
    return 2.0 * e / (e - len(nu))


def _positive_inverse(matrix: np.ndarray) -> np.ndarray:
    """Inverse on the eigenvalues above tolerance (lmerTest's inverse of the deviance Hessian)."""
    values, vectors = np.linalg.eigh(matrix)
    keep = values > EIGEN_TOLERANCE * max(values.max(), 0.0)
    return (vectors[:, keep] / values[keep]) @ vectors[:, keep].T
