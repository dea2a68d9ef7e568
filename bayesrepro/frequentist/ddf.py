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
matrix as large as the dominant factor's levels squared: ``satterthwaite_derivatives``
writes every such matrix as a diagonal plus a term of low rank (0.08 s down to
2 ms on kreutzer_marking_partial, where it also loses less of X'V⁻¹X to
cancellation: 5e-12 of the intercept's precision against 1e-9 for the dense
products it replaced, measured against a 50-digit evaluation).

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
    """What Satterthwaite needs of ``variance_derivatives`` (no Q_rs), in O(n1·m²) with n1 the dominant factor's
    levels and m the other levels plus the fixed effects.

    Z_1'Z_1 is diagonal, so M⁻¹ follows from the Schur complement of that block and both Kz and
    H (P̃ = I − UHU') are a diagonal on the dominant levels plus a term of rank m: H = diag(kd, 0) + VTV'.
    Every product with the Gram matrix G is then formed on the m columns of V, and the dominant block of
    U'P̃U = G − GHG, diag(a) − W₁TW₁' with W = GV, only through its diagonal, its quadratic forms and its sum
    of squares; no matrix of n1 × n1 entries is formed.
    """
    gram, blocks, lam = _split_system(stats, theta)
    n1, p = len(gram.counts), stats.n_fixed
    m = gram.rest.shape[0]
    q_rest = m - p
    fixed = slice(q_rest, m)
    # Kz = diag(kd, 0) + L S⁻¹ L' (L = ΛY: first n1 rows l1, the others diag(λ_rest) then zeros for X)
    lam1, lam_rest = lam[:n1], lam[n1:]
    e = lam1**2 * gram.counts + 1.0
    kd = lam1**2 / e
    b = lam1[:, None] * gram.cross[:, :q_rest] * lam_rest[None, :]
    schur = lam_rest[:, None] * gram.rest[:q_rest, :q_rest] * lam_rest[None, :] + np.eye(q_rest)
    schur -= b.T @ (b / e[:, None])
    s_inverse = scipy.linalg.cho_solve(scipy.linalg.cho_factor(schur), np.eye(q_rest)) if q_rest else np.zeros((0, 0))
    l1 = -lam1[:, None] * b / e[:, None]
    l2 = np.zeros((m, q_rest))
    l2[np.arange(q_rest), np.arange(q_rest)] = lam_rest
    # W⁻¹X = U F with F = −Kz G_·X (then the identity on X's rows), and U'W⁻¹X = G_·X − G Kz G_·X
    kg_1 = kd[:, None] * gram.cross[:, fixed]
    kg_low = s_inverse @ (l1.T @ gram.cross[:, fixed] + l2.T @ gram.rest[:, fixed])
    kg1, kg2 = kg_1 + l1 @ kg_low, l2 @ kg_low
    g1, g2 = gram.times(kg1, kg2)
    a1_1, a1_2 = gram.cross[:, fixed] - g1, gram.rest[:, fixed] - g2       # U'W⁻¹X
    fixed_precision = a1_2[fixed]                                           # X'W⁻¹X
    a2 = fixed_precision - kg1.T @ a1_1 - kg2.T @ a1_2                      # X'W⁻²X
    phi_scaled = np.linalg.inv(fixed_precision)
    f1, f2 = -kg1, -kg2
    f2[fixed] = np.eye(p)
    # H = diag(kd, 0) + V T V', V = [L, F], T = diag(S⁻¹, Φ/σ²)
    v1, v2 = np.hstack([l1, f1]), np.hstack([l2, f2])
    t = scipy.linalg.block_diag(s_inverse, phi_scaled)
    w1, w2 = gram.times(v1, v2)                                             # W = G V
    vw = v1.T @ w1 + v2.T @ w2                                              # V'GV

    def h_times(x1, x2):
        low = t @ (v1.T @ x1 + v2.T @ x2)
        return kd * x1 + v1 @ low, v2 @ low

    hu1, hu2 = h_times(gram.dominant_y, gram.rest_y)
    gh1, gh2 = gram.times(hu1, hu2)
    py1, py2 = gram.dominant_y - gh1, gram.rest_y - gh2                     # U'P̃y
    hp1, hp2 = h_times(py1, py2)
    g_hp1, g_hp2 = gram.times(hp1, hp2)
    p2y1, p2y2 = py1 - g_hp1, py2 - g_hp2                                   # U'P̃²y
    y_p2_y = stats.yty - 2.0 * float(gram.dominant_y @ hu1 + gram.rest_y @ hu2) + float(hu1 @ gh1 + hu2 @ gh2)
    y_p3_y = y_p2_y - float(py1 @ hp1 + py2 @ hp2)
    # U'P̃U: its dominant block diag(a) − W₁TW₁', the others explicit
    dk = gram.counts * kd
    a = gram.counts / e                                                     # counts − counts²·kd
    w1t = w1 @ t
    n_diagonal = np.einsum("ij,ij->i", w1t, w1)
    b1_12 = gram.cross / e[:, None] - w1t @ w2.T
    b1_22 = gram.rest - gram.cross.T @ (kd[:, None] * gram.cross) - w2 @ t @ w2.T
    # tr(P̃²) = n − 2 tr(GH) + tr(GHGH)
    tvw = t @ vw
    trace_gh = float(dk.sum() + np.trace(tvw))
    trace_ghgh = float(dk @ dk + 2.0 * np.sum(t * (w1.T @ (kd[:, None] * w1))) + np.sum(tvw * tvw.T))
    trace_p2 = stats.n_obs - 2.0 * trace_gh + trace_ghgh
    # diagonal of U'P̃²U = U'P̃U − GH U'P̃U, GH = [diag(dk); C'diag(kd)] (dominant columns) + W T V'
    vb_1 = v1.T * a - (v1.T @ w1) @ w1t.T + v2.T @ b1_12.T                  # V' (U'P̃U)_·1
    vb_2 = v1.T @ b1_12 + v2.T @ b1_22                                      # V' (U'P̃U)_·2
    b2_diagonal_1 = (a - n_diagonal) / e - np.einsum("ij,ji->i", w1t, vb_1)
    b2_diagonal_2 = np.diag(b1_22) - np.einsum("ij,ji->i", gram.cross.T * kd, b1_12) \
        - np.einsum("ij,ji->i", w2 @ t, vb_2)

    n_comp = len(blocks) + 1
    residual = n_comp - 1
    a1 = np.vstack([a1_1, a1_2])
    sandwich = [a2 if r == residual else a1[blocks[r]].T @ a1[blocks[r]] for r in range(n_comp)]
    trace = np.zeros((n_comp, n_comp))
    quadratic = np.zeros((n_comp, n_comp))
    trace[residual, residual], quadratic[residual, residual] = trace_p2, y_p3_y
    dominant = stats.order[0] if stats.n_groups else None
    py = np.concatenate([py1, py2])
    p2y = np.concatenate([p2y1, p2y2])
    for r in range(residual):
        br = blocks[r]
        quadratic[r, residual] = float(p2y[br] @ py[br])
        if r == dominant:
            trace[r, residual] = float(b2_diagonal_1.sum())
        else:
            trace[r, residual] = float(b2_diagonal_2[_shifted(br, n1)].sum())
        for s in range(r, residual):
            bs = blocks[s]
            if r == dominant and s == dominant:
                gw = t @ (w1.T @ w1)
                trace[r, s] = float(a @ a - 2.0 * a @ n_diagonal + np.sum(gw * gw.T))
                w_py = w1.T @ py1
                quadratic[r, s] = float(a @ py1**2 - w_py @ t @ w_py)
            elif r == dominant or s == dominant:
                other = _shifted(bs if r == dominant else br, n1)
                trace[r, s] = float(np.sum(b1_12[:, other] ** 2))
                quadratic[r, s] = float(py1 @ b1_12[:, other] @ py2[other])
            else:
                rr, ss = _shifted(br, n1), _shifted(bs, n1)
                trace[r, s] = float(np.sum(b1_22[rr, ss] ** 2))
                quadratic[r, s] = float(py2[rr] @ b1_22[rr, ss] @ py2[ss])
    trace = np.triu(trace) + np.triu(trace, 1).T
    quadratic = np.triu(quadratic) + np.triu(quadratic, 1).T
    theta = np.asarray(theta, dtype=float)
    return scaled_derivatives([*stats.group_names, "Residual"], np.append(sigma2 * theta**2, sigma2),
                              np.append(theta > 0, True), sigma2, phi_scaled, sandwich, None, trace, quadratic)


def _dense_system(stats: GaussianStats, theta: np.ndarray):
    """U'U as one matrix, U'y, the blocks and Λ's diagonal of ``_split_system``, refused above DENSE_LIMIT."""
    gram, blocks, lam = _split_system(stats, theta)
    return gram.dense(), np.concatenate([gram.dominant_y, gram.rest_y]), blocks, lam


def _refuse_dense(size: int) -> None:
    if size > DENSE_LIMIT:
        raise BayesreproError(
            f"Satterthwaite and Kenward-Roger need dense matrices of {size} random-effect levels and fixed effects "
            f"(limit {DENSE_LIMIT}); use the parametric bootstrap (--reference bootstrap) for this design"
        )


@dataclass(frozen=True)
class _SplitGram:
    """The Gram matrix G of U = [Z, X] split at the dominant factor's levels: G = [[diag(counts), cross],
    [cross', rest]], with U'y split the same way."""

    counts: np.ndarray        # (n1,) Z_1'Z_1, diagonal
    cross: np.ndarray         # (n1, m) Z_1'[Z_rest, X]
    rest: np.ndarray          # (m, m) [Z_rest, X]'[Z_rest, X]
    dominant_y: np.ndarray    # (n1,) Z_1'y
    rest_y: np.ndarray        # (m,) [Z_rest, X]'y

    def dense(self) -> np.ndarray:
        """G as one symmetric matrix."""
        n1 = len(self.counts)
        gram = np.empty((n1 + len(self.rest),) * 2)
        gram[:n1, :n1] = np.diag(self.counts)
        gram[:n1, n1:] = self.cross
        gram[n1:, :n1] = self.cross.T
        gram[n1:, n1:] = self.rest
        return gram

    def times(self, x1: np.ndarray, x2: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """G x, for x given by its dominant rows x1 and the others x2 (vectors or matrices)."""
        counts = self.counts if x1.ndim == 1 else self.counts[:, None]
        return counts * x1 + self.cross @ x2, self.cross.T @ x1 + self.rest @ x2


def _split_system(stats: GaussianStats, theta: np.ndarray):
    """``_SplitGram`` of U = [Z (elimination order), X], the column block of each component (formula order) and
    Λ's diagonal in the elimination order, refused above DENSE_LIMIT."""
    n1 = len(stats.dominant_counts)
    q_rest, p = len(stats.rest_zy), stats.n_fixed
    _refuse_dense(n1 + q_rest + p)
    cross = stats.cross.toarray() if hasattr(stats.cross, "toarray") else stats.cross
    rest = np.zeros((q_rest + p, q_rest + p))
    rest[:q_rest, :q_rest] = stats.rest_gram
    rest[:q_rest, q_rest:] = stats.rest_zx
    rest[q_rest:, q_rest:] = stats.xtx
    rest = np.triu(rest) + np.triu(rest, 1).T
    gram = _SplitGram(np.asarray(stats.dominant_counts, dtype=float), np.hstack([cross, stats.dominant_zx]), rest,
                      stats.dominant_zy, np.concatenate([stats.rest_zy, stats.xty]))
    theta = np.asarray(theta, dtype=float)
    lam = np.repeat(theta[stats.order], [n1, *stats.rest_sizes]) if stats.n_groups else np.zeros(0)
    return gram, _blocks(stats), lam


def _shifted(block: slice, n1: int) -> slice:
    """A component's block of U's columns as rows of the Gram matrix's second part (past the dominant levels)."""
    return slice(block.start - n1, block.stop - n1)


def _blocks(stats: GaussianStats) -> list[slice]:
    """The columns of U = [Z (elimination order), X] that hold each component's levels, in formula order."""
    n1 = len(stats.dominant_counts)
    offsets = np.concatenate([[0, n1], n1 + np.cumsum(stats.rest_sizes)]).astype(int) if stats.n_groups else [0]
    blocks = [None] * stats.n_groups
    for position, formula_index in enumerate(stats.order):
        blocks[formula_index] = slice(offsets[position], offsets[position + 1])
    return blocks


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
