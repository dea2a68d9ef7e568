"""lme4's profiled deviance for random-intercept models, from cross-products.

With relative standard deviations θ_k = σ_k/σ and Λ = diag(θ), the penalized
least-squares system of Bates et al. (2015, J. Stat. Softw. 67(1)) is

    [Λ'Z'ZΛ + I   Λ'Z'X] [u]   [Λ'Z'y]
    [X'ZΛ         X'X  ] [β] = [X'y  ]

and the ML / REML criteria need only its log-determinants and the penalized
residual sum of squares r² = y'y − c'A⁻¹c. The dominant factor's block is
diagonal, so it is eliminated first; the Schur complement S that remains has
one row per level of the other factors plus one per fixed effect, whatever N.
A Cholesky factor of S (random part first) gives log|L|² and log|R_X|².
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.linalg.lapack
import scipy.sparse as sp

from ..design import GaussianStats
from ..runtime import idle_core_threads, one_blas_thread

LOG_2PI = np.log(2.0 * np.pi)
# Dense systems from this many rows may be factored with several BLAS threads, on
# cores idle at the time (runtime.idle_core_threads): a 1,144-row Cholesky factor and
# inverse took 35 ms on one thread and 25 ms on two of an idle machine; below a few
# hundred rows the threads cost more than they save.
PARALLEL_BLAS_SIZE = 400
MAX_BLAS_THREADS = 4
# From this order a dense system is factored on one thread, wherever cores are idle. OpenBLAS's threaded Cholesky
# factor crashes the process (SIGSEGV, no error to catch) on large orders: numpy's 0.3.31 and SciPy's 0.3.30
# (scipy-openblas wheels, SkylakeX kernels, 2 threads) factored order 15,500 and crashed at 15,800 (potrf), measured
# in child processes on an AMD EPYC (docs/guide/native_crashes.md). The margin covers other kernels' block sizes;
# below it the threads' gain was measured (1,144 rows: 25 against 35 ms; 5,428 rows: benchmarks/).
THREADED_ORDER_LIMIT = 12_000
# The dominant factor's coupling is summed per distinct count when its levels outnumber those counts this often.
FEW_COUNTS_RATIO = 4


@dataclass(frozen=True)
class Solution:
    """Everything the criterion at one θ yields."""

    theta: np.ndarray        # formula order
    r2: float                # penalized residual sum of squares
    logdet_random: float     # log|L|²  = log|Λ'Z'ZΛ + I|
    logdet_fixed: float      # log|R_X|²
    beta: np.ndarray
    fixed_precision: np.ndarray  # R_X'R_X, so Var(β̂) = σ² (R_X'R_X)⁻¹
    gradient: np.ndarray | None = None  # of the criterion in θ, when asked for
    spherical: np.ndarray | None = None  # u, the spherical random effects (b = Λθu), where computed


def dense_threads(order: int) -> int:
    """BLAS threads worth asking for (on idle cores) to factor a dense system of ``order`` rows: several only from
    ``PARALLEL_BLAS_SIZE`` rows, and one again from ``THREADED_ORDER_LIMIT``, where the threaded factor crashes."""
    return MAX_BLAS_THREADS if PARALLEL_BLAS_SIZE <= order < THREADED_ORDER_LIMIT else 1


def dense_blas(order: int):
    """The BLAS threads to factor a dense system of ``order`` rows with, as a context: ``dense_threads`` on idle
    cores, and one thread from ``THREADED_ORDER_LIMIT`` even where no limit is in force around it (the package's
    numerical work sets one thread, a Python caller of a criterion may not)."""
    if order >= THREADED_ORDER_LIMIT:
        return one_blas_thread()
    return idle_core_threads(dense_threads(order))


def profiled_criterion(s: Solution, n: int, p: int, reml: bool) -> float:
    """lme4's REML criterion or ML deviance (−2 log L) with σ² profiled out."""
    if reml:
        dof = n - p
        return s.logdet_random + s.logdet_fixed + dof * (1.0 + LOG_2PI + np.log(s.r2 / dof))
    return s.logdet_random + n * (1.0 + LOG_2PI + np.log(s.r2 / n))


class ProfiledCriterion:
    """The criterion and σ̂² from a ``Solution``; subclasses give ``solve(θ)``, ``n_obs``, ``n_fixed`` and ``reml``."""

    def __call__(self, theta: np.ndarray) -> float:
        try:
            return self.criterion(self.solve(theta))
        except np.linalg.LinAlgError:
            return np.inf

    def criterion(self, s: Solution) -> float:
        return profiled_criterion(s, self.n_obs, self.n_fixed, self.reml)

    def value_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        """The criterion and its exact gradient in θ, where the subclass's ``solve`` computes one."""
        try:
            solution = self.solve(theta, with_gradient=True)
        except np.linalg.LinAlgError:
            return np.inf, np.zeros(len(theta))
        return self.criterion(solution), solution.gradient

    def sigma2(self, s: Solution) -> float:
        return s.r2 / (self.n_obs - self.n_fixed if self.reml else self.n_obs)


class ProfiledDeviance(ProfiledCriterion):
    """−2 log-likelihood (ML) or the REML criterion as a function of θ (formula order)."""

    def __init__(self, cross: GaussianStats, reml: bool):
        self.cross = cross
        self.reml = reml
        self.n_theta = cross.n_groups
        self._grouped = CountGroupedGram(cross) if sp.issparse(cross.cross) or _few_counts(cross) else None
        self._last: tuple[bytes, Solution] | None = None   # optimisers ask for the same θ more than once

    def with_stats(self, cross: GaussianStats) -> "ProfiledDeviance":
        """The criterion of statistics that differ from these only in the response (a simulated one, say):
        what was built from the design alone is shared."""
        other = copy.copy(self)
        other.cross = cross
        other._last = None
        return other

    @property
    def dense_order(self) -> int:
        """Rows of the dense system factored at every evaluation."""
        return len(self.cross.rest_zy) + self.cross.n_fixed

    @property
    def blas_threads(self) -> int:
        """BLAS threads worth using where cores are idle: more than one only for a dense system big enough to
        share out, and small enough for the threaded factor (``dense_threads``)."""
        return dense_threads(self.dense_order)

    @property
    def n_obs(self) -> int:
        return self.cross.n_obs

    @property
    def n_fixed(self) -> int:
        return self.cross.n_fixed

    def solve(self, theta: np.ndarray, with_gradient: bool = False) -> Solution:
        theta = np.asarray(theta, dtype=float)
        key = theta.tobytes()
        if self._last is not None and self._last[0] == key and (self._last[1].gradient is not None or not with_gradient):
            return self._last[1]
        with dense_blas(self.dense_order):
            solution = self._solve(theta, with_gradient)
        self._last = (key, solution)
        return solution

    def _solve(self, theta: np.ndarray, with_gradient: bool) -> Solution:
        c = self.cross
        ordered = theta[c.order] if c.order else theta[:0]
        p = c.n_fixed
        q_rest = len(c.rest_zy)
        if c.n_groups:
            t1 = ordered[0]
            diag1 = t1 * t1 * c.dominant_counts + 1.0
            lam = np.repeat(ordered[1:], c.rest_sizes)
            block = _DominantBlock(c, self._grouped, t1, lam)
            rhs1 = t1 * c.dominant_zy
            rhs_correction = block.transpose_apply(rhs1 / diag1)
            logdet_dominant = float(np.log(diag1).sum())
            r2_dominant = float(rhs1 @ (rhs1 / diag1))
        else:
            lam = np.zeros(0)
            rhs_correction = np.zeros(p)
            logdet_dominant = r2_dominant = 0.0
        schur = np.empty((q_rest + p, q_rest + p), order="F")  # LAPACK factors it in place
        schur[:q_rest, :q_rest] = lam[:, None] * c.rest_gram * lam[None, :]
        schur[:q_rest, :q_rest][np.diag_indices(q_rest)] += 1.0
        schur[:q_rest, q_rest:] = lam[:, None] * c.rest_zx
        schur[q_rest:, :q_rest] = schur[:q_rest, q_rest:].T
        schur[q_rest:, q_rest:] = c.xtx
        if c.n_groups:
            block.subtract_gram(schur, power=1)
        rhs = np.concatenate([lam * c.rest_zy, c.xty]) - rhs_correction
        factor = _cholesky_lower(schur)
        w = scipy.linalg.solve_triangular(factor, rhs, lower=True, check_finite=False)
        r2 = c.yty - r2_dominant - float(w @ w)
        if r2 <= 0:
            raise np.linalg.LinAlgError("non-positive residual sum of squares")
        log_diag = 2.0 * np.log(np.diag(factor))
        solution = scipy.linalg.solve_triangular(factor, w, lower=True, trans="T", check_finite=False)
        fixed_factor = np.tril(factor[q_rest:, q_rest:])
        beta = solution[q_rest:].copy()
        if c.y_shift:
            beta[0] += c.y_shift
        gradient = None
        if with_gradient:
            gradient = self._gradient(theta, ordered, diag1, block, rhs1, solution, factor, r2) if c.n_groups else np.zeros(0)
        return Solution(
            theta=theta,
            r2=r2,
            logdet_random=logdet_dominant + float(log_diag[:q_rest].sum()),
            logdet_fixed=float(log_diag[q_rest:].sum()),
            beta=beta,
            fixed_precision=fixed_factor @ fixed_factor.T,
            gradient=gradient,
        )

    def _gradient(self, theta, ordered, diag1, block, rhs1, solution, factor, r2) -> np.ndarray:
        """Exact gradient of the criterion in θ (formula order).

        With A the penalized system matrix and u the spherical random effects,
        for θ_k > 0:  ∂log|A|/∂θ_k = 2(q_k − tr[(A⁻¹)_kk])/θ_k  and
        ∂r²/∂θ_k = −2‖u_k‖²/θ_k (the first follows from Λ'Z'ZΛ = A − I on the
        random block, the second from the normal equations u = Λ'Z'(y − Xβ − ZΛu)).
        ML uses the random-effects block A_ZZ alone for log|L|². The criterion
        is even in θ_k: the same expressions hold for θ_k < 0, and at θ_k = 0
        the derivative is 0.
        """
        c = self.cross
        q_rest = len(c.rest_zy)
        n, p = c.n_obs, c.n_fixed
        size = q_rest + (p if self.reml else 0)
        lower = factor[:size, :size]
        inverse = _inverse_from_cholesky(lower)
        trace_dominant = float(np.sum(1.0 / diag1)) + block.trace_with_gram(inverse, power=2)
        diagonal_rest = np.diag(inverse)[:q_rest]
        u_dominant = (rhs1 - block.apply(solution)) / diag1
        u_rest = solution[:q_rest]
        offsets = np.concatenate([[0], np.cumsum(c.rest_sizes)])
        traces = [trace_dominant] + [float(diagonal_rest[a:b].sum()) for a, b in zip(offsets[:-1], offsets[1:])]
        norms = [float(u_dominant @ u_dominant)] + [float(u_rest[a:b] @ u_rest[a:b]) for a, b in zip(offsets[:-1], offsets[1:])]
        levels = [len(diag1)] + list(c.rest_sizes)
        dof = n - p if self.reml else n
        gradient_ordered = np.zeros(len(ordered))
        for k, t in enumerate(ordered):
            if t != 0:
                gradient_ordered[k] = (2.0 * (levels[k] - traces[k]) - 2.0 * dof * norms[k] / r2) / t
        gradient = np.empty_like(gradient_ordered)
        gradient[c.order] = gradient_ordered
        return gradient


def _few_counts(cross: GaussianStats) -> bool:
    """Do the dominant factor's levels share a few observation counts (a balanced or nearly balanced design)?

    Then its coupling to the rest is summed per distinct count once, and an
    evaluation costs a product over those sums instead of one over every level.
    """
    counts = cross.dominant_counts
    return len(counts) > 0 and len(np.unique(counts)) * FEW_COUNTS_RATIO <= len(counts)


def _cholesky_lower(matrix: np.ndarray) -> np.ndarray:
    """Lower Cholesky factor, in place; only the lower triangle is read and the upper is left as it was."""
    factor, info = scipy.linalg.lapack.dpotrf(matrix, lower=1, clean=0, overwrite_a=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"the penalized system is not positive definite (potrf info {info})")
    return factor


def _inverse_from_cholesky(lower: np.ndarray) -> np.ndarray:
    """Lower triangle of (LL')⁻¹ from L, with LAPACK potri (half the work of solving against the identity)."""
    if lower.shape[0] == 0:
        return np.zeros((0, 0))
    inverse, info = scipy.linalg.lapack.dpotri(lower, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"potri failed with info {info}")
    return inverse


class CountGroupedGram:
    """Σ_i w(n_i) v_i v_i' for the rows v_i of V = [Z₁'Z_r, Z₁'X], weights depending on the count n_i alone.

    The weights of the penalized system, 1/(θ₁²n_i + 1) and its square, are
    functions of the dominant factor's level counts, so the rows are grouped by
    count once: with G_k = Σ_{n_i = k} v_i v_i' (lower triangle, sparse),
    every evaluation is one product of a fixed (pairs × counts) matrix with
    the weights of the distinct counts — O(nnz), instead of a sparse
    matrix product with its symbolic phase at every θ.
    """

    def __init__(self, cross: GaussianStats):
        v = sp.hstack([cross.cross, sp.csr_matrix(cross.dominant_zx)], format="coo")
        self.size = size = v.shape[1]
        self.counts, group_of_row = np.unique(cross.dominant_counts, return_inverse=True)
        n_counts = len(self.counts)
        # one sparse product gives every G_k: row a·K + k of the left factor holds column a of the rows with count k
        by_column_and_count = sp.csr_matrix(
            (v.data, (v.col * n_counts + group_of_row[v.row], v.row)), shape=(size * n_counts, v.shape[0])
        )
        products = (by_column_and_count @ v.tocsr()).tocoo()
        column, count = np.divmod(products.row, n_counts)
        lower = column >= products.col
        pair_keys, pair_of_entry = _distinct(column[lower].astype(np.int64) * size + products.col[lower], size * size)
        self.by_count = sp.csr_matrix(
            (products.data[lower], (pair_of_entry, count[lower])), shape=(len(pair_keys), n_counts)
        )
        self.rows, self.cols = np.divmod(pair_keys, size)
        self.multiplicity = np.where(self.rows == self.cols, 1.0, 2.0)  # lower pairs stand for both triangles

    def pair_values(self, weight_of_count: np.ndarray, scale: np.ndarray) -> np.ndarray:
        """Lower-triangle entries of diag(scale) V' diag(w) V diag(scale) at (rows, cols)."""
        return (self.by_count @ weight_of_count) * scale[self.rows] * scale[self.cols]


def _distinct(keys: np.ndarray, n_keys: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and each key's position among them (np.unique's result, without its sort)."""
    if n_keys > 50_000_000:
        return np.unique(keys, return_inverse=True)
    seen = np.zeros(n_keys, dtype=bool)
    seen[keys] = True
    position = np.cumsum(seen) - 1
    return np.flatnonzero(seen), position[keys]


class _DominantBlock:
    """W = t1·[Z₁'Z_r Λ_r, Z₁'X], the coupling of the dominant factor to the rest.

    Its products are weighted by d_i^(−power) with d_i = t1²n_i + 1, the
    diagonal of the dominant factor's block of the penalized system.
    """

    def __init__(self, cross: GaussianStats, grouped: CountGroupedGram | None, t1: float, lam: np.ndarray):
        self.zx = t1 * cross.dominant_zx
        self.t1 = t1
        self.counts = cross.dominant_counts
        self.grouped = grouped
        if sp.issparse(cross.cross):
            self.zz = cross.cross.multiply(t1 * lam[None, :]).tocsr() if len(lam) else cross.cross
        else:
            self.zz = cross.cross * (t1 * lam[None, :])
        if grouped is not None:
            self.scale = t1 * np.concatenate([lam, np.ones(self.zx.shape[1])])

    def subtract_gram(self, target: np.ndarray, power: int) -> None:
        """target −= W' diag(d^−power) W (only its lower triangle when the rows are grouped by count)."""
        if self.grouped is None:
            target -= self._dense_gram(power)
            return
        g = self.grouped
        target[g.rows, g.cols] -= g.pair_values(self._count_weights(power), self.scale)

    def trace_with_gram(self, lower_inverse: np.ndarray, power: int) -> float:
        """tr(B W' diag(d^−power) W) for the leading block B of A⁻¹, given by its lower triangle."""
        size = lower_inverse.shape[0]
        if self.grouped is None:
            inverse = np.tril(lower_inverse) + np.tril(lower_inverse, -1).T
            return float(np.sum(inverse * self._dense_gram(power)[:size, :size]))
        g = self.grouped
        inside = (g.rows < size) & (g.cols < size)
        values = g.pair_values(self._count_weights(power), self.scale)[inside]
        return float(np.sum(g.multiplicity[inside] * values * lower_inverse[g.rows[inside], g.cols[inside]]))

    def _dense_gram(self, power: int) -> np.ndarray:
        w = np.hstack([self.zz, self.zx])
        return w.T @ (w * (self.t1 * self.t1 * self.counts + 1.0)[:, None] ** -power)

    def _count_weights(self, power: int) -> np.ndarray:
        return (self.t1 * self.t1 * self.grouped.counts + 1.0) ** -power

    def transpose_apply(self, v: np.ndarray) -> np.ndarray:
        return np.concatenate([self.zz.T @ v, self.zx.T @ v])

    def apply(self, b: np.ndarray) -> np.ndarray:
        q_rest = self.zz.shape[1]
        return self.zz @ b[:q_rest] + self.zx @ b[q_rest:]
