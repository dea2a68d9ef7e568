"""glmer's Laplace criterion (nAGQ = 1) for binary GLMMs of any random-effects structure, on sparse Z and Λθ.

With spherical random effects u ~ N(0, I), η = Xβ + ZΛθu and the binomial
log-likelihood ℓ(η) of every row, glmer minimises over (θ, β)

    f(θ, β) = −2 ℓ(η(û)) + ‖û‖² + log|Λ'Z'WZΛ + I|,

û the conditional mode of u (penalized IRLS), W the IRLS weights (expected
information) at û; −f/2 is the Laplace approximation of the log-likelihood,
binomial coefficients included (Bates et al. 2015, J. Stat. Softw. 67(1);
lme4's ``glmerLaplace``). The layout of Z and Λθ is the Gaussian core's
(``design.random_design``) and the penalized matrix is factorised by its
``Factoriser``, the levels of the largest one-column term eliminated first as
a diagonal block (that block stays diagonal under any weights). Z'WZ is
formed at every weight vector by one product with a map from the rows'
weights to its non-zeros, and A = Λ'Z'WZΛ + I from Z'WZ by a second map from
the products of θ's elements (both built once: A's pattern does not depend on
θ or W, so no sparse product is formed per evaluation).
"""

from __future__ import annotations

import copy

import numpy as np
import scipy.sparse as sp

from ..design.random_design import RandomDesign
from ..errors import NotConvergedError
from ..links import Link, log_binomial_coefficient
from .conjugate_gradients import NotConverged, solve_many
from .laplace import FULL_STEPS, MAX_ITERATIONS, halved_step
from .selected_inverse import OutsidePattern
from .sparse_factor import Factor, Factoriser
from .sparse_deviance import diagonal_lead, lead_first

# Penalized IRLS stops once a Newton step's decrement (twice the penalized deviance it removes) is below this and
# takes that step: Newton's quadratic convergence leaves a decrement of order 1e-14 after it, below f's rounding.
MODE_TOLERANCE = 1e-7
# Penalized IRLS's Newton steps are solved by conjugate gradients to this relative residual, in at most this many
# iterations (else by a factorisation).
STEP_TOLERANCE = 1e-8
STEP_ITERATIONS = 20
# Relative step of the central differences of f where no selected inverse gives its gradient.
DIFFERENCE_STEP = 1e-6


class SparseLaplaceDeviance:
    """f(θ, β) over the packed vector (θ, β), infinite where penalized IRLS fails (a trial step gone astray)."""

    def __init__(self, design: RandomDesign, X: np.ndarray, successes: np.ndarray, trials: np.ndarray, link: Link,
                 log_coefficient: float):
        self.design, self.X, self.link = design, X, link
        self.y, self.n = successes, trials
        self.constant = -2.0 * log_coefficient
        self.n_theta = design.n_theta
        head = diagonal_lead(design)
        columns = lead_first(design, head)
        position = np.argsort(columns)
        self._lambda_at = (position[design.lambda_rows], position[design.lambda_cols])
        self.Z = design.Z[:, columns].tocsr()
        self.Zt = self.Z.T.tocsr()
        cross, self._weights_to_cross = _weighted_cross_product(self.Z)
        self._penalized_pattern, self._products, self._diagonal = _penalized_product(
            cross, *self._lambda_at, design.lambda_index)
        self._upper_at, self._upper_of = _upper_triangle(self._penalized_pattern)
        self.factorise = Factoriser(len(head))
        self._forget_response()

    def _forget_response(self) -> None:
        """Start afresh the state that depends on the response: the last mode and what is kept of it."""
        self._u = np.zeros(self.design.q)
        self.exact_gradient = True   # whether the last gradient was (not: a dense tail, a variance exactly zero)
        self._last: tuple[bytes, float, np.ndarray] | None = None   # the search, its test and the Hessian repeat it
        self._last_mode: tuple[bytes, tuple] | None = None   # (θ, β) and ``_at_mode``'s result there
        self._sensitivity: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None   # see _keep_sensitivity

    def with_response(self, successes: np.ndarray) -> "SparseLaplaceDeviance":
        """The criterion of other successes out of the same trials (the design's maps are shared, not rebuilt)."""
        other = copy.copy(self)
        other.y = successes
        other.constant = -2.0 * float(log_binomial_coefficient(successes, self.n).sum())
        other._forget_response()
        return other

    @property
    def bounded(self) -> np.ndarray:
        """Which parameters are bounded below by 0: the diagonal of Λθ (β is free)."""
        return np.concatenate([self.design.diagonal, np.zeros(self.X.shape[1], dtype=bool)])

    def __call__(self, params: np.ndarray) -> float:
        try:
            return self.evaluate(params)[0]
        except (np.linalg.LinAlgError, NotConvergedError):
            return np.inf

    def value_and_gradient(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        """f and its gradient over (θ, β) (see ``_gradient``; central differences of f where the factorisation
        gives no selected inverse); infinite where penalized IRLS fails."""
        params = np.asarray(params, dtype=float)
        if self._last is not None and self._last[0] == params.tobytes():
            return self._last[1], self._last[2].copy()
        try:
            theta, beta = params[:self.n_theta], params[self.n_theta:]
            lam = self._lambda(theta)
            u, terms, factor = self._at_mode(theta, beta, lam)
            value = self._penalized(terms.kernel, u) + factor.logdet
            gradient = self._gradient(theta, beta, lam, u, terms, factor) if factor.inverse_at is not None else None
        except OutsidePattern:   # a component exactly at zero: A's pattern, and its factor's, lost its entries
            gradient = None
        except (np.linalg.LinAlgError, NotConvergedError):
            return np.inf, np.zeros(len(params))
        self.exact_gradient = gradient is not None
        if gradient is None:
            gradient = self._difference_gradient(params)
        self._last = (params.tobytes(), value, gradient)
        return value, gradient.copy()

    def _gradient(self, theta: np.ndarray, beta: np.ndarray, lam: sp.csc_matrix, u: np.ndarray, terms,
                  factor: Factor) -> np.ndarray:
        """∂f/∂(θ, β) at the mode û.

        The derivatives of −2ℓ + ‖u‖² through û vanish there (û minimises them), so those terms give −2 s'∂η/∂p
        (s the rows' scores). d log|A|/dp = tr(A⁻¹ dA/dp), A⁻¹ needed on A's pattern only: A's non-zeros depend on
        θ directly (the products map) and on the rows' weights W(η̂), η̂ moving with p and with û: dû/dp = A_o⁻¹
        ∂F/∂p for F = Λ'Z's − u (A_o: A at the observed information), taken by one adjoint solve for all p."""
        target, first, second, entry = self._products
        inverse = factor.inverse_at(*self._upper_at)[self._upper_of[target]]   # A⁻¹ is symmetric: one triangle
        cross = self._weights_to_cross @ terms.weight
        explicit = (np.bincount(first, weights=inverse * cross[entry] * theta[second], minlength=self.n_theta)
                    + np.bincount(second, weights=inverse * cross[entry] * theta[first], minlength=self.n_theta))
        by_weight = self._weights_to_cross.T @ np.bincount(entry, weights=inverse * theta[first] * theta[second],
                                                          minlength=len(cross))
        slope = by_weight * terms.weight_slope
        observed = factor if terms.observed_weight is terms.weight else \
            self.factorise(self._penalized_matrix(theta, terms.observed_weight))
        scores = self.Zt @ terms.score
        adjoint = observed.solve(lam.T @ (self.Zt @ slope))
        adjusted = slope - terms.observed_weight * (self.Z @ (lam @ adjoint))
        moved = self.Zt @ adjusted
        rows, cols = self._lambda_at
        self._keep_sensitivity(theta, beta, lam, u, terms, scores, observed)
        through_entries = (moved[rows] - 2.0 * scores[rows]) * u[cols] + scores[rows] * adjoint[cols]
        gradient_theta = explicit + np.bincount(self.design.lambda_index, weights=through_entries,
                                                minlength=self.n_theta)
        return np.concatenate([gradient_theta, self.X.T @ (adjusted - 2.0 * terms.score)])

    def _keep_sensitivity(self, theta, beta, lam, u, terms, scores, observed: Factor) -> None:
        """dû/d(θ, β) = A_o⁻¹ ∂F/∂(θ, β), kept with (θ, β, û): the next mode search starts from û moved along it."""
        rows, cols = self._lambda_at
        lambda_mode = self._by_theta(u[cols], rows)                                     # dΛ_k û
        moved = np.hstack([self.Z @ lambda_mode, self.X]) * terms.observed_weight[:, None]
        derivative = -(lam.T @ (self.Zt @ moved))
        derivative[:, :self.n_theta] += self._by_theta(scores[rows], cols)              # dΛ_k'Z's
        self._sensitivity = (np.concatenate([theta, beta]), u, observed.solve(derivative))

    def _by_theta(self, values: np.ndarray, at: np.ndarray) -> np.ndarray:
        """The (q, n_θ) array with Λ's entries' ``values`` summed at (``at``, the θ element of the entry)."""
        q, n_theta = self.design.q, self.n_theta
        return np.bincount(at * n_theta + self.design.lambda_index, weights=values,
                           minlength=q * n_theta).reshape(q, n_theta)

    def _difference_gradient(self, params: np.ndarray) -> np.ndarray:
        steps = DIFFERENCE_STEP * np.maximum(1.0, np.abs(params))
        return np.array([(self(params + h * e) - self(params - h * e)) / (2.0 * h)
                         for h, e in zip(steps, np.eye(len(params)))])

    def evaluate(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        """f and R_X'R_X, the fixed effects' block of the penalized precision at û (û kept for the next start)."""
        params = np.asarray(params, dtype=float)
        theta, beta = params[:self.n_theta], params[self.n_theta:]
        lam = self._lambda(theta)
        u, terms, factor = self._at_mode(theta, beta, lam)
        weighted = lam.T @ (self.Zt @ (self.X * terms.weight[:, None]))
        fixed_precision = self.X.T @ (self.X * terms.weight[:, None]) - weighted.T @ factor.solve(weighted)
        return self._penalized(terms.kernel, u) + factor.logdet, fixed_precision

    def _lambda(self, theta: np.ndarray) -> sp.csc_matrix:
        return sp.csc_matrix((theta[self.design.lambda_index], self._lambda_at), shape=(self.design.q,) * 2)

    def _at_mode(self, theta: np.ndarray, beta: np.ndarray, lam: sp.csc_matrix):
        """û (kept for the next start), the rows' terms at η̂ and the factor of A there; kept for the last point,
        where the search starts after its scaling's evaluation and the fit's end asks for R_X'R_X."""
        key = np.concatenate([theta, beta]).tobytes()
        if self._last_mode is not None and self._last_mode[0] == key:
            return self._last_mode[1]
        offset = self.X @ beta
        start = self._u.copy()
        if self._sensitivity is not None:
            base, mode, sensitivity = self._sensitivity
            start = mode + sensitivity @ (np.concatenate([theta, beta]) - base)
        u = self._mode(theta, lam, offset, start)
        terms = self.link.terms(self.y, self.n, offset + self.Z @ (lam @ u))
        factor = self.factorise(self._penalized_matrix(theta, terms.weight))
        self._u = u
        self._last_mode = (key, (u, terms, factor))
        return u, terms, factor

    def _penalized_matrix(self, theta: np.ndarray, weights: np.ndarray) -> sp.csc_matrix:
        """Λ'Z'WZΛ + I."""
        cross = self._weights_to_cross @ weights
        target, first, second, entry = self._products
        a = self._penalized_pattern.copy()
        a.data = np.bincount(target, weights=theta[first] * theta[second] * cross[entry], minlength=a.nnz)
        a.data[self._diagonal] += 1.0
        return a

    def _penalized(self, kernel: np.ndarray, u: np.ndarray) -> float:
        """−2 log p(y | u) + ‖u‖², binomial coefficients included."""
        return float(-2.0 * kernel.sum() + self.constant + u @ u)

    def _mode(self, theta: np.ndarray, lam: sp.csc_matrix, offset: np.ndarray, u: np.ndarray) -> np.ndarray:
        """û by Newton steps with the observed information (the penalized deviance is convex in u for logit and
        probit), halved until the penalized deviance decreases except near the mode, as ``laplace.py`` does."""
        eta = offset + self.Z @ (lam @ u)
        for _ in range(MAX_ITERATIONS):
            terms = self.link.terms(self.y, self.n, eta)
            rhs = lam.T @ (self.Zt @ terms.score) - u
            step = self._newton_step(theta, terms.observed_weight, rhs)
            decrement = float(rhs @ step)
            if decrement < MODE_TOLERANCE:
                return u + step   # one more quadratically convergent step: log|A| moves with û
            if decrement < FULL_STEPS:
                u = u + step
                eta = offset + self.Z @ (lam @ u)
                continue
            def penalized_at(trial):
                trial_eta = offset + self.Z @ (lam @ trial)
                return self._penalized(self.link.loglik_kernel(self.y, self.n, trial_eta), trial), trial_eta

            u, eta = halved_step(u, step, self._penalized(terms.kernel, u), penalized_at)
        raise NotConvergedError("penalized IRLS did not find the mode of the random effects in 100 iterations")

    def _newton_step(self, theta: np.ndarray, weights: np.ndarray, rhs: np.ndarray) -> np.ndarray:
        """A⁻¹ rhs for A at these weights: by conjugate gradients preconditioned with the factor of the last mode's
        A (a nearby point of the search: CG takes 1–5 of its solves there, and one factorisation costs as much as
        twenty), by a factorisation of A where there is no last mode or CG does not converge in a few steps."""
        a = self._penalized_matrix(theta, weights)
        if self._last_mode is not None:
            nearby_factor = self._last_mode[1][2]
            try:
                step, _ = solve_many(lambda block: a @ block, rhs[:, None], nearby_factor.solve, rtol=STEP_TOLERANCE,
                                     max_iterations=STEP_ITERATIONS)
                return step[:, 0]
            except NotConverged:   # the last mode was too far: factorise
                pass
        return self.factorise(a).solve(rhs)


def _weighted_cross_product(Z: sp.csr_matrix) -> tuple[sp.csr_matrix, sp.csr_matrix]:
    """The pattern of Z'Z and the map M with Z'WZ's non-zeros = M w for the rows' weights w."""
    n, q = Z.shape
    row_of = np.repeat(np.arange(n), np.diff(Z.indptr))
    row_end = Z.indptr[1:][row_of]
    firsts, seconds = [], []
    for shift in range(int(np.diff(Z.indptr).max(initial=0))):
        # every pair of entries of a row, the second ``shift`` entries after the row's first
        second = Z.indptr[:-1][row_of] + shift
        inside = second < row_end
        firsts.append(np.flatnonzero(inside))
        seconds.append(second[inside])
    first, second = np.concatenate(firsts), np.concatenate(seconds)
    keys = Z.indices[first].astype(np.int64) * q + Z.indices[second]
    unique, slot = np.unique(keys, return_inverse=True)
    cross_rows, cross_cols = np.divmod(unique, q)
    pattern = sp.csr_matrix((np.ones(len(unique)), cross_cols, np.searchsorted(cross_rows, np.arange(q + 1))),
                            shape=(q, q))
    weights_to_cross = sp.csr_matrix((Z.data[first] * Z.data[second], (slot, row_of[first])), shape=(len(unique), n))
    return pattern, weights_to_cross


def _upper_triangle(pattern: sp.csc_matrix) -> tuple[tuple[np.ndarray, np.ndarray], np.ndarray]:
    """The entries (i, j), i ≤ j, of a symmetric pattern, and where each of its entries or their mirror is there."""
    q = pattern.shape[0]
    rows = pattern.indices.astype(np.int64)
    cols = np.repeat(np.arange(q, dtype=np.int64), np.diff(pattern.indptr))
    keys = np.minimum(rows, cols) * q + np.maximum(rows, cols)
    upper = np.flatnonzero(rows <= cols)
    upper = upper[np.argsort(keys[upper])]
    return (rows[upper], cols[upper]), np.searchsorted(keys[upper], keys)


def _penalized_product(cross: sp.csr_matrix, lambda_rows: np.ndarray, lambda_cols: np.ndarray,
                       lambda_index: np.ndarray) -> tuple[sp.csc_matrix, tuple[np.ndarray, ...], np.ndarray]:
    """The pattern of A = Λ'BΛ + I for B of ``cross``'s pattern, and its map: A's non-zero ``target`` adds
    θ[first]·θ[second]·B[entry] (A_ij = Σ Λ_ki B_kl Λ_lj), with the positions of A's diagonal."""
    q = cross.shape[0]
    order = np.argsort(lambda_rows, kind="stable")
    cols, index = lambda_cols[order], lambda_index[order]
    start = np.searchsorted(lambda_rows[order], np.arange(q + 1))
    per_row = np.diff(start)
    k = np.repeat(np.arange(q), np.diff(cross.indptr))
    l = cross.indices
    pieces = []
    for shift_k in range(int(per_row.max(initial=0))):
        for shift_l in range(int(per_row.max(initial=0))):
            inside = np.flatnonzero((shift_k < per_row[k]) & (shift_l < per_row[l]))
            at_k, at_l = start[k[inside]] + shift_k, start[l[inside]] + shift_l
            pieces.append((cols[at_k], cols[at_l], index[at_k], index[at_l], inside))
    i, j, first, second, entry = (np.concatenate(part) for part in zip(*pieces))
    keys = np.concatenate([j.astype(np.int64) * q + i, np.arange(q, dtype=np.int64) * (q + 1)])
    unique, slot = np.unique(keys, return_inverse=True)
    pattern_cols, pattern_rows = np.divmod(unique, q)
    pattern = sp.csc_matrix((np.zeros(len(unique)), pattern_rows, np.searchsorted(pattern_cols, np.arange(q + 1))),
                            shape=(q, q))
    return pattern, (slot[:len(i)], first, second, entry), slot[len(i):]
