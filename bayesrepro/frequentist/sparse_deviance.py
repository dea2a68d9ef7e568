"""lme4's profiled deviance for any random-effects structure, on sparse Z and Λθ.

For y = Xβ + ZΛθu + ε, u ~ N(0, σ²I), the penalized system of Bates et al.
(2015, J. Stat. Softw. 67(1), §3) is

    [A         Λ'Z'X] [u]   [Λ'Z'y]        A = Λ'Z'ZΛ + I,
    [X'ZΛ      X'X  ] [β] = [X'y  ]

A is factorised sparsely (``sparse_factor.py``), with the levels of the
largest one-column term (a random intercept, usually) first so that its diagonal block is
eliminated exactly (the columns of Z are permuted once); the fixed block is the small
dense Schur complement S_X = X'X − X'ZΛA⁻¹Λ'Z'X = R_X'R_X. With
c = A⁻¹Λ'Z'y and g = X'y − X'ZΛc: β = S_X⁻¹g, the penalized residual sum
of squares is r² = y'y − (Λ'Z'y)'c − g'β, and the criteria need only
log|A|, log|S_X| and r², exactly as lme4's ``REMLcrit``/``deviance``.
All cross-products with the data are formed once.

Systems of at most ``dense_factor.DENSE_COLUMNS`` columns are held and factorised densely instead
(``dense_factor.py``), with the same exact gradient.

Where one term's levels are eliminated blockwise and the other columns
form a dense Schur complement (``block_factor.py``: crossed slope terms,
subjects × items), the criterion's exact gradient costs little more than its
value. With G = Z'Z, P = Λ'G, u the spherical effects and r = y − Xβ − ZΛu,
for each element θ_j of θ, over the entries (a, b) of Λθ that hold it:

    ∂log|A|/∂θ_j = 2 Σ (A⁻¹P)_ba                      (ML)
    ∂log|M|/∂θ_j = 2 Σ [(A⁻¹P)_ba + (E(F'P − X'Z))_ba]  (REML: M the whole system, log|M| = log|A| + log|S_X|)
    ∂r²/∂θ_j     = −2 Σ (Z'r)_a u_b                    (envelope: r² is a minimum over u and β)

with F = A⁻¹Λ'Z'X and E = F S_X⁻¹; the REML term is the fixed block's share
of M⁻¹ (its random block is A⁻¹ + E F'). No division by θ: it holds on
the boundary too.
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.linalg
import scipy.sparse as sp

from ..design.random_design import RandomDesign, TermBlock
from .deviance import ProfiledCriterion, Solution
from .block_factor import BlockFactor, BlockSystem, block_eliminable
from .dense_factor import DENSE_COLUMNS, DenseFactor, DenseSystem
from .sparse_factor import Factoriser

# Solutions kept for θ asked again: a search's last point is followed by its stencil of differences (2k points for
# k elements of θ) before the fit solves there once more.
RECENT_SOLUTIONS = 8


class SparseProfiledDeviance(ProfiledCriterion):
    """−2 log-likelihood (ML) or the REML criterion as a function of θ (lme4's layout, ``RandomDesign``)."""

    def __init__(self, design: RandomDesign, X: np.ndarray, y: np.ndarray, reml: bool):
        self.design = design
        self.reml = reml
        self.n_obs, self.n_fixed = X.shape
        # the response less its mean keeps y'y − c'A⁻¹c accurate; where the fixed columns span a constant
        # (Xδ = 1), β absorbs the shift as y_shift·δ
        delta = np.linalg.lstsq(X, np.ones(len(y)), rcond=None)[0] if len(y) else np.zeros(self.n_fixed)
        self._spans_constant = len(y) > 0 and np.allclose(X @ delta, 1.0, atol=1e-8)
        self.shift_direction = delta if self._spans_constant else np.zeros(self.n_fixed)
        self.lead_term = block_lead(design)
        if self.lead_term is not None:
            head = np.arange(self.lead_term.offset, self.lead_term.offset + self.lead_term.n_levels * self.lead_term.nc)
        else:
            head = diagonal_lead(design)
        self.columns = lead_first(design, head)
        self.factorise = Factoriser(0 if self.lead_term is not None else len(head))
        Z = design.Z[:, self.columns]
        self.ztz = (Z.T @ Z).tocsc()
        self.ztz.sort_indices()
        self.ztx = np.asarray(Z.T @ X)
        self.xtx = X.T @ X
        self._x = X
        position = np.argsort(self.columns)   # of each of Z's columns among the permuted ones
        if design.diagonal_factor:   # Λθ diagonal: A's values are Z'Z's scaled, on Z'Z's pattern
            coo_rows = np.repeat(np.arange(self.ztz.shape[1]), np.diff(self.ztz.indptr))
            self._pattern = (self.ztz.indices, coo_rows)
            # Λθ's diagonal in the permuted columns is θ[_scale_index], and Z'Z's entry (r, c) is scaled by
            # θ_a θ_b, entry _pairs of θθ' (a, b the elements of θ of r and c); where Z'Z holds its whole diagonal
            # (every level observed), A = Λ'Z'ZΛ + I is Z'Z's values so scaled with 1 added at _diagonal_at
            self._scale_index = np.empty(design.q, dtype=np.intp)
            self._scale_index[position[design.lambda_rows]] = design.lambda_index
            self._pairs = self._scale_index[self.ztz.indices] * design.n_theta + self._scale_index[coo_rows]
            self._diagonal_pattern = (np.arange(design.q, dtype=np.int32), np.arange(design.q + 1, dtype=np.int32))
            diagonal_at = np.flatnonzero(self.ztz.indices == coo_rows)
            self._diagonal_at = diagonal_at if len(diagonal_at) == design.q else None
        self._entries = (position[design.lambda_rows], position[design.lambda_cols], design.lambda_index)
        self._dense = DenseSystem(self.ztz.toarray(), *self._entries) if 0 < design.q <= DENSE_COLUMNS else None
        self.has_exact_gradient = self.lead_term is not None or self._dense is not None
        self._blocks = BlockSystem(self.ztz, self.lead_term.n_levels, self.lead_term.nc) \
            if self.lead_term is not None and self._dense is None else None
        self._set_response(y)

    def _set_response(self, y: np.ndarray) -> None:
        """The cross-products with the response (all that changes between refits of one design to new data)."""
        self.y_shift = float(y.mean()) if self._spans_constant else 0.0
        y = y - self.y_shift
        self.zty = np.asarray(self.design.Z.T @ y).ravel()[self.columns]
        self.xty = self._x.T @ y
        self.yty = float(y @ y)
        self._recent: dict[bytes, Solution] = {}

    def with_response(self, y: np.ndarray) -> "SparseProfiledDeviance":
        """The same criterion for another response on the same rows, sharing every product that does not
        involve it (a parametric bootstrap refits one design to many simulated responses)."""
        other = copy.copy(self)
        other._set_response(y)
        return other

    @property
    def n_theta(self) -> int:
        return self.design.n_theta

    def penalized_matrix(self, theta: np.ndarray) -> tuple[sp.csc_matrix, sp.csc_matrix]:
        """A = Λ'Z'ZΛ + I and Λθ, in the permuted columns."""
        if self.design.diagonal_factor and self._diagonal_at is not None:
            if np.all(theta > 0):   # no entry of A vanishes: its pattern is Z'Z's, and the sum with I is in place
                scale = theta[self._scale_index]
                values = self.ztz.data * np.outer(theta, theta).ravel()[self._pairs]
                values[self._diagonal_at] += 1.0
                return (sp.csc_matrix((values, self.ztz.indices, self.ztz.indptr), shape=self.ztz.shape),
                        sp.csc_matrix((scale, *self._diagonal_pattern), shape=self.ztz.shape))
        lam = self.design.relative_factor(theta)[self.columns][:, self.columns]
        if self.design.diagonal_factor:
            scale = lam.diagonal()
            rows, cols = self._pattern
            a = sp.csc_matrix((self.ztz.data * scale[rows] * scale[cols], self.ztz.indices, self.ztz.indptr),
                              shape=self.ztz.shape)
        else:
            a = (lam.T @ self.ztz @ lam).tocsc()
        return (a + sp.identity(a.shape[0], format="csc")).tocsc(), lam

    def solve(self, theta: np.ndarray, with_gradient: bool = False) -> Solution:
        theta = np.asarray(theta, dtype=float)
        key = theta.tobytes()
        known = self._recent.get(key)
        if known is not None and (known.gradient is not None or not with_gradient):
            return known
        if with_gradient and not self.has_exact_gradient:
            raise ValueError("the exact gradient needs a dense system or a lead term eliminated blockwise "
                             "(has_exact_gradient)")
        if self._dense is not None:
            lam = self._dense.relative_factor(theta)
            factor = self._dense.factorise(lam)
        elif self._blocks is None:
            a, lam = self.penalized_matrix(theta)
            factor = self.factorise(a)
        else:
            lam = self.design.relative_factor(theta)[self.columns][:, self.columns]
            lead = self._blocks.lead
            factor = self._blocks.factorise(self.lead_term.factor_of(theta), lam[lead:, lead:].tocsc())
        lzx = np.asarray(lam.T @ self.ztx)
        lzy = np.asarray(lam.T @ self.zty).ravel()
        solved = factor.solve(np.column_stack([lzx, lzy]))
        a_inv_zx, c = solved[:, :-1], solved[:, -1]
        fixed_schur = self.xtx - lzx.T @ a_inv_zx
        g = self.xty - lzx.T @ c
        try:
            chol = scipy.linalg.cholesky(fixed_schur, lower=True)
        except scipy.linalg.LinAlgError as exc:
            raise np.linalg.LinAlgError(str(exc)) from None
        beta = scipy.linalg.cho_solve((chol, True), g)
        r2 = self.yty - float(lzy @ c) - float(g @ beta)
        if r2 <= 0:
            raise np.linalg.LinAlgError("non-positive residual sum of squares")
        spherical = c - a_inv_zx @ beta
        gradient = None
        if with_gradient:
            gradient = self._gradient(factor, lam, a_inv_zx, chol, beta, spherical, r2)
        solution = Solution(theta=theta, r2=r2, logdet_random=factor.logdet,
                            logdet_fixed=float(2.0 * np.log(np.diag(chol)).sum()),
                            beta=beta + self.y_shift * self.shift_direction, fixed_precision=chol @ chol.T,
                            gradient=gradient, spherical=spherical)
        if len(self._recent) >= RECENT_SOLUTIONS:
            del self._recent[next(iter(self._recent))]
        self._recent[key] = solution
        return solution

    def _gradient(self, factor: BlockFactor | DenseFactor, lam, a_inv_zx, chol, beta, spherical, r2) -> np.ndarray:
        """The criterion's exact gradient in θ (the formulas of the module's note), β and u of the shifted y."""
        rows, cols, index = self._entries
        log_det = factor.inverse_products(rows, cols)
        if self.reml:
            e = scipy.linalg.cho_solve((chol, True), a_inv_zx.T).T           # E = F S_X⁻¹
            k = factor.transposed_products(a_inv_zx) - self.ztx.T            # F'P − X'Z
            log_det += np.einsum("ij,ji->i", e[cols], k[:, rows])
        gram = self._dense.gram if self._dense is not None else self.ztz
        z_residual = self.zty - self.ztx @ beta - gram @ (lam @ spherical)
        dof = self.n_obs - self.n_fixed if self.reml else self.n_obs
        per_entry = 2.0 * log_det - 2.0 * dof * z_residual[rows] * spherical[cols] / r2
        return np.bincount(index, weights=per_entry, minlength=self.n_theta)


def diagonal_lead(design: RandomDesign) -> np.ndarray:
    """Z's columns of the largest one-column term: its block of A is diagonal (each row is in one level), whatever
    its column, so the factor eliminates it first for free; none without such a term."""
    lead = max((b for b in design.blocks if b.nc == 1), key=lambda b: b.n_levels, default=None)
    return np.arange(lead.offset, lead.offset + lead.n_levels) if lead is not None else np.zeros(0, dtype=int)


def lead_first(design: RandomDesign, head: np.ndarray) -> np.ndarray:
    """Z's columns reordered: ``head`` first, the others after in their order."""
    return np.concatenate([head, np.setdiff1d(np.arange(design.q), head)])


def block_lead(design: RandomDesign) -> TermBlock | None:
    """The term with most columns, where eliminating its levels blockwise leaves a dense Schur complement small
    enough (``block_factor.block_eliminable``); None otherwise."""
    if not design.blocks:
        return None
    lead = max(design.blocks, key=lambda b: b.n_levels * b.nc)
    columns = lead.n_levels * lead.nc
    return lead if block_eliminable(columns, design.q - columns) else None
