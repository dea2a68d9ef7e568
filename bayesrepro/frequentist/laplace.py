"""glmer's Laplace criterion for binomial random-intercept models, with its exact gradient.

With spherical random effects u ~ N(0, I), b = Λu, η = Xβ + ZΛu and the
binomial log-likelihood ℓ(η) of every cell, glmer (nAGQ = 1) minimises

    f(θ, β) = −2 ℓ(η(û)) + ‖û‖² + log|Λ'Z'WZΛ + I|,

where û is the conditional mode of u (found by penalized IRLS) and W the
IRLS weights (expected information) at û, as in lme4's factor L; −f/2 is the
Laplace approximation of the log-likelihood (binomial coefficients included,
as in lme4's ``logLik``).

As in the second stage of glmer's default fit, f is minimised over (θ, β)
jointly, θ ≥ 0, here by the optimiser of the Gaussian engine with the
exact gradient; û of the previous evaluation starts penalized IRLS at the
next, so an evaluation near the last costs one or two Newton steps.

Exact gradient at the mode (h_c the cells' leverages [ZΛA⁻¹ΛZ']_cc, s the
score, W' = dW/dη, H = Λ'Z'W_obs ZΛ + I with the observed information, which
for the logit link equals A):

    ∂f/∂β   = −2X's + X'ρ,                       ρ = h∘W' − W_obs∘(ZΛa),  a = H⁻¹Λ'Z'(h∘W')
    ∂f/∂θ_k = −2u_k'Z_k's + ρ'Z_k u_k + a_k'Z_k's + 2(q_k − tr(A⁻¹)_kk)/θ_k    (0 at θ_k = 0)

The first terms are the explicit derivatives of the penalized deviance
(û is stationary), the others the derivative of log|A| through W, which
moves with η directly and through dû = H⁻¹(…) (implicit function theorem).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..design import BinomialCells
from ..errors import BayesreproError, NotConvergedError
from ..links import Link
from .cell_products import CellLayout
from .penalized_system import PenalizedSystem

# Penalized IRLS stops when the Newton decrement (the deviance a full step would still gain) is below this.
MODE_TOLERANCE = 1e-11
MAX_ITERATIONS = 100
# Below this Newton decrement penalized IRLS takes full steps without checking the deviance.
FULL_STEPS = 1e-2
# Newton steps of the fixed effects of a model without random effects (a GLM), the start of the search;
# a linear predictor beyond ±SEPARATED means a probability within 1e-13 of 0 or 1 for logit (1e-300
# for probit): the data separate the outcomes.
GLM_TOLERANCE = 1e-10
SEPARATED = 30.0


def halved_step(u: np.ndarray, step: np.ndarray, value: float, penalized_at) -> tuple[np.ndarray, np.ndarray]:
    """u + α·step with α halved from 1 until the penalized deviance does not increase (or α < 1e-6), and η there;
    ``penalized_at(trial)`` returns the penalized deviance and η at ``trial``."""
    alpha = 1.0
    while True:
        trial = u + alpha * step
        trial_value, trial_eta = penalized_at(trial)
        if trial_value <= value + 1e-12 * abs(value) or alpha < 1e-6:
            return trial, trial_eta
        alpha /= 2.0


@dataclass(frozen=True)
class LaplacePoint:
    """The criterion and its gradient at one (θ, β), at the conditional mode û."""

    theta: np.ndarray            # formula order
    beta: np.ndarray
    u: np.ndarray                # spherical random effects, elimination order
    deviance: float              # f(θ, β) = −2 × Laplace log-likelihood
    gradient_theta: np.ndarray   # formula order
    gradient_beta: np.ndarray
    fixed_precision: np.ndarray  # R_X'R_X at û


class LaplaceDeviance:
    """f(θ, β) and its gradient, for the optimiser (``optimise.optimise``) over the packed vector (θ, β)."""

    def __init__(self, cells: BinomialCells, link: Link):
        self.layout = CellLayout(cells)
        self.link = link
        self.y, self.n = cells.successes, cells.trials
        self.constant = -2.0 * cells.log_coefficient
        self.n_components = len(cells.sizes)
        self.n_fixed = cells.n_fixed
        self.fixed_names = cells.fixed_names
        # what the optimiser reads: the number of parameters, and which are bounded below by 0
        self.n_theta = self.n_components + self.n_fixed
        self.bounded = np.arange(self.n_theta) < self.n_components
        self._u = np.zeros(self.layout.q)
        self._cache: dict[bytes, LaplacePoint] = {}

    # --- the interface of optimise.optimise ----------------------------------------------------------------

    def __call__(self, params: np.ndarray) -> float:
        return self.value_and_gradient(params)[0]

    def value_and_gradient(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        """f and its gradient; infinite where the criterion cannot be evaluated (a trial step gone astray)."""
        try:
            point = self.point(params)
        except (np.linalg.LinAlgError, NotConvergedError):
            return np.inf, np.zeros(self.n_theta)
        return point.deviance, np.concatenate([point.gradient_theta, point.gradient_beta])

    @property
    def last_mode(self) -> np.ndarray:
        """û of the last evaluation (elimination order), where the next search for the mode starts."""
        return self._u.copy()

    # --- evaluations ----------------------------------------------------------------------------------------

    def point(self, params: np.ndarray) -> LaplacePoint:
        """The criterion at (θ, β) packed in one vector, with û warm-started from the last evaluation."""
        params = np.asarray(params, dtype=float)
        key = params.tobytes()
        if key not in self._cache:
            if len(self._cache) > 64:
                self._cache.clear()
            self._cache[key] = point = self.at(params[: self.n_components], params[self.n_components :])
            self._u = point.u
        return self._cache[key]

    def at(self, theta: np.ndarray, beta: np.ndarray, u: np.ndarray | None = None) -> LaplacePoint:
        """The criterion and its gradient at a given (θ, β), from ``u`` (default: the last mode)."""
        theta, beta = np.asarray(theta, dtype=float), np.asarray(beta, dtype=float)
        u = self._u.copy() if u is None else u.copy()
        return self._point(theta, beta, self.mode(theta, beta, u))

    def glm_start(self) -> np.ndarray:
        """β of the model without random effects (a GLM), by Newton steps: where the search for β starts."""
        beta = np.zeros(self.n_fixed)
        fixed = self.layout.X_fixed
        for _ in range(MAX_ITERATIONS):
            eta = self.fixed_part(beta)
            weights = np.bincount(self.layout.fixed_cell, weights=self.link.observed_weight(self.y, self.n, eta),
                                  minlength=self.layout.n_fixed_cells)
            try:
                step = np.linalg.solve(fixed.T @ (fixed * weights[:, None]),
                                       self.layout.fixed_sums(self.link.score(self.y, self.n, eta)))
            except np.linalg.LinAlgError:
                break
            beta = beta + step
            if np.abs(fixed @ beta).max() > SEPARATED:
                break
            if np.abs(step).max(initial=0.0) < GLM_TOLERANCE * (1.0 + np.abs(beta).max(initial=0.0)):
                return beta
        raise BayesreproError(self._separation_message())

    def _separation_message(self) -> str:
        successes = np.bincount(self.layout.fixed_cell, weights=self.y, minlength=self.layout.n_fixed_cells)
        trials = np.bincount(self.layout.fixed_cell, weights=self.n, minlength=self.layout.n_fixed_cells)
        pure = np.flatnonzero((successes == 0) | (successes == trials))
        example = ""
        if len(pure):
            terms = [name for name, x in zip(self.fixed_names, self.layout.X_fixed[pure[0]]) if x and name != "Intercept"]
            outcome = "successes" if successes[pure[0]] else "failures"
            example = (f": {len(pure)} of the {len(trials)} distinct fixed-design rows have only successes or only "
                       f"failures (the row of {', '.join(terms) or 'the intercept'}: only {outcome})")
        return ("the fixed effects separate the successes from the failures, so their estimates are infinite" + example
                + "; drop or merge the level that always (or never) succeeds, or model it as a random effect")

    # --- penalized IRLS ---------------------------------------------------------------------------------------

    def lam(self, theta: np.ndarray) -> np.ndarray:
        """Λ's diagonal in elimination order."""
        return np.repeat(theta[self.layout.order], self.layout.sizes) if self.n_components else np.zeros(0)

    def fixed_part(self, beta: np.ndarray) -> np.ndarray:
        """Xβ of every cell, from the distinct fixed-design rows (cells.X would be a cells × p product)."""
        return (self.layout.X_fixed @ beta)[self.layout.fixed_cell]

    def eta(self, theta: np.ndarray, beta: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.fixed_part(beta) + self.layout.expand(self.lam(theta) * u)

    def mode(self, theta: np.ndarray, beta: np.ndarray, u: np.ndarray) -> np.ndarray:
        """û: the mode of the random effects given (θ, β), by Newton steps.

        The steps use the observed information (the penalized deviance is convex in u for logit and
        probit alike), so the search converges quadratically also where Fisher scoring would not.
        Steps are halved until the penalized deviance decreases, except near the mode (Newton
        decrement below ``FULL_STEPS``), where full steps are safe.
        """
        lam = self.lam(theta)
        eta = self.eta(theta, beta, u)
        for _ in range(MAX_ITERATIONS):
            score, observed_weight = self.link.mode_terms(self.y, self.n, eta)
            system = PenalizedSystem(self.layout, lam, observed_weight, with_fixed=False)
            rhs = lam * self.layout.level_sums(score) - u
            step = system.solve(rhs)
            decrement = float(rhs @ step)
            if decrement < MODE_TOLERANCE:
                # one more (quadratically convergent) step: f is not stationary in u (log|A| moves with it),
                # so û must be exact to the last digits, not just to the deviance's
                return u + step
            if decrement < FULL_STEPS:
                u = u + step
                eta = self.eta(theta, beta, u)
                continue
            def penalized_at(trial):
                trial_eta = self.eta(theta, beta, trial)
                return self._penalized(self.link.loglik_kernel(self.y, self.n, trial_eta), trial), trial_eta

            current = self._penalized(self.link.loglik_kernel(self.y, self.n, eta), u)
            u, eta = halved_step(u, step, current, penalized_at)
        raise NotConvergedError("penalized IRLS did not find the mode of the random effects in 100 iterations")

    def _penalized(self, kernel: np.ndarray, u: np.ndarray) -> float:
        """−2 log p(y | u) + ‖u‖², binomial coefficients of the rows included."""
        return float(-2.0 * kernel.sum() + self.constant + u @ u)

    # --- the criterion and its gradient at the mode ------------------------------------------------------------

    def _point(self, theta: np.ndarray, beta: np.ndarray, u: np.ndarray) -> LaplacePoint:
        layout, link = self.layout, self.link
        lam = self.lam(theta)
        terms = link.terms(self.y, self.n, self.eta(theta, beta, u))
        score, observed = terms.score, terms.observed_weight
        system = PenalizedSystem(layout, lam, terms.weight, with_fixed=True)
        deviance = self._penalized(terms.kernel, u) + system.logdet_random
        leverages, traces = system.leverages_and_traces()
        v = leverages * terms.weight_slope
        curvature = system if link.name == "logit" else PenalizedSystem(layout, lam, observed, with_fixed=False)
        a = curvature.solve(lam * layout.level_sums(v))
        rho = v - observed * layout.expand(lam * a)
        gradient_beta = layout.fixed_sums(rho - 2.0 * score)
        z_score = layout.level_sums(score)
        gradient_ordered = np.zeros(self.n_components)
        for i in range(self.n_components):
            block = slice(layout.offsets[i], layout.offsets[i + 1])
            t = theta[layout.order[i]]
            if t > 0:
                u_k = u[block]
                cell_u = u[layout.position[i]]
                explicit = 2.0 * (layout.sizes[i] - traces[i]) / t
                gradient_ordered[i] = (-2.0 * u_k @ z_score[block] + rho @ cell_u + a[block] @ z_score[block]
                                       + explicit)
        gradient_theta = np.empty(self.n_components)
        gradient_theta[layout.order] = gradient_ordered
        return LaplacePoint(theta, beta, u, deviance, gradient_theta, gradient_beta, system.fixed_precision)
