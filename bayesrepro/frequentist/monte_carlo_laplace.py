"""The Laplace criterion of 0/1 scores with crossed random intercepts at millions of rows: its score with Monte
Carlo traces, solved by average-information steps.

For η = Xβ + Zb, b ~ N(0, G) (G = diag(v_k) on factor k's levels), logit link,
the Laplace log-likelihood (glmer's, nAGQ = 1) is

    ℓ_L = f(b̂) − ½ log|G| − ½ log|C|,  f(b) = Σ[yη − log(1 + e^η)] − ½ b'G⁻¹b,  C = Z'WZ + G⁻¹,

b̂ the mode of f and W = diag(μ(1 − μ)) there. Its exact score (the mode
moves with the parameters, and W with it: db̂/dv_k = C⁻¹E_k b̂ / v_k²,
db̂/dβ = −C⁻¹Z'WX) is

    ∂ℓ_L/∂v_k = ½‖b̂_k‖²/v_k² − ½ q_k/v_k + ½ tr(C⁻¹_kk)/v_k² − ½ Σ_i h_i w'_i (Z db̂/dv_k)_i
    ∂ℓ_L/∂β   = X'(y − μ) − ½ Σ_i h_i w'_i (X + Z db̂/dβ)_i

with w' = μ(1 − μ)(1 − 2μ) and h_i = (ZC⁻¹Z')_ii the rows' leverages. The
mode is found by Newton steps, each a solve with C (``crossed_system.py``:
the largest factor eliminated, conjugate gradients on the rest). tr(C⁻¹_kk) and
h come from the same fixed ±1 vectors z over each factor's levels:
z'C⁻¹z for the traces, and (ZC⁻¹z) ⊙ (Zz) summed over the factors for h
(E zz' is the identity on the factor's block). The steps use the average
information of the working linear model (V = W⁻¹ + ZGZ'), the
variances' block ½ u_k'V⁻¹u_l with u_k = Z_k b̂_k / v_k and β's X'V⁻¹X; they
converge to the root of the estimated score. That information is not the
Laplace score's slope, so the slope is taken by forward differences at the
root (the same vectors: a smooth function): its inverse gives the standard
errors, and the Monte Carlo error is linearised with it as in
``monte_carlo_reml``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import pandas as pd
from scipy.special import expit

from ..design import Family, ModelFrame
from ..design.binomial import binomial_cells
from ..errors import BayesreproError
from ..links import get_link
from ..runtime import numerical_work
from .conjugate_gradients import NotConverged
from .fit_result import indented
from .glmm_fit import GlmmFit, fixed_rows
from .laplace import LaplaceDeviance
from .monte_carlo_reml import DEFAULT_PROBES, FLOOR, MonteCarloFields

MODE_TOLERANCE = 1e-9
MAX_NEWTON = 50
MAX_STEPS = 60
STEP_TOLERANCE = 1e-2
SOLVE_RTOL = 1e-9
ROW_CHUNK = 1 << 16
# The variances' start on the latent scale (the logit's residual is π²/3 ≈ 3.3): the steps take it from there.
START_VARIANCE = 0.5


@dataclass(frozen=True)
class LaplaceEvaluation:
    """The estimated Laplace score at (v, β), its per-probe parts and the blocks of the average information."""

    variances: np.ndarray
    beta: np.ndarray
    score: np.ndarray              # variances' then β's
    probe_scores: np.ndarray       # (m, K + p)
    information: np.ndarray        # block-diagonal: the variances' AI and X'V⁻¹X

    def standard_errors(self) -> np.ndarray:
        """The standard errors by the average information of the working model (the scale of the steps)."""
        return np.sqrt(np.diag(np.linalg.inv(self.information)))

    def monte_carlo_errors(self, curvature: np.ndarray) -> np.ndarray:
        """The Monte Carlo standard error of the root, with ``curvature`` = −∂score/∂(v, β) there:
        the root moves by curvature⁻¹ (s̄ − s_j) for probe j alone."""
        inverse = np.linalg.inv(curvature)
        spread = np.atleast_2d(np.cov(self.probe_scores, rowvar=False)) / len(self.probe_scores)
        return np.sqrt(np.maximum(np.diag(inverse @ spread @ inverse.T), 0.0))


class MonteCarloLaplace:
    """The Laplace score of 0/1 scores (logit link) with crossed random intercepts, traces from fixed ±1 vectors.

    Parameters
    ----------
    codes : list of numpy.ndarray
        Each factor's level of every row.
    sizes : list of int
        Each factor's levels.
    X : numpy.ndarray
        The fixed-effects design.
    y : numpy.ndarray
        The 0/1 scores.
    probes : int
        The ±1 vectors per factor.
    seed : int
        Seed of the vectors.
    """

    def __init__(self, codes, sizes, X, y, probes: int, seed: int):
        from .crossed_system import CrossedSystem

        self.system = CrossedSystem(codes, sizes)
        self.codes, self.sizes, self.X, self.y = codes, list(sizes), X, y.astype(float)
        self.n_probes = int(probes)
        rng = np.random.default_rng(seed)
        m, k_factors = self.n_probes, len(sizes)
        self.probes = np.zeros((sum(sizes), k_factors * m))
        for k, block in enumerate(self.system.factor_blocks(self.probes)):
            block[:, k * m:(k + 1) * m] = rng.choice([-1.0, 1.0], size=(sizes[k], m))
        self.effects = np.zeros(sum(sizes))
        self._starts: dict[str, np.ndarray] = {}

    def _rows(self, levels: np.ndarray) -> np.ndarray:
        """Z a for a block over all levels (n × columns)."""
        blocks = self.system.factor_blocks(levels)
        return sum(block[c] for block, c in zip(blocks, self.codes))

    def _level_sums(self, rows: np.ndarray) -> np.ndarray:
        """Z'r for row-space columns."""
        rows = rows.reshape(len(rows), -1)
        return np.concatenate([np.stack([np.bincount(c, weights=r, minlength=s) for r in rows.T], axis=1)
                               for c, s in zip(self.codes, self.sizes)])

    def _solve(self, rhs: np.ndarray, name: str) -> np.ndarray:
        solved, start, _ = self.system.solve(rhs, self._starts.get(name), SOLVE_RTOL)
        self._starts[name] = start
        return solved

    def _penalty(self, variances: np.ndarray) -> np.ndarray:
        return np.repeat(1.0 / variances, self.sizes)

    def mode(self, variances: np.ndarray, beta: np.ndarray) -> np.ndarray:
        """The mode b̂ of f by Newton steps (halved while f does not increase), C left weighted at it."""
        penalty = self._penalty(variances)
        offset = self.X @ beta
        b = self.effects.copy()

        def objective(b):
            eta = offset + self._rows(b[:, None])[:, 0]
            return float(self.y @ eta - np.logaddexp(0.0, eta).sum() - 0.5 * b @ (penalty * b)), eta

        value, eta = objective(b)
        for _ in range(MAX_NEWTON):
            mu = expit(eta)
            self.system.reweight(np.maximum(mu * (1.0 - mu), 1e-12))
            self.system.set_ratios(variances)
            gradient = self._level_sums(self.y - mu)[:, 0] - penalty * b
            step = self._solve(gradient[:, None], "mode")[:, 0]
            for _ in range(30):
                proposed, proposed_eta = objective(b + step)
                if proposed >= value - 1e-12 * abs(value):
                    break
                step = step / 2.0
            b, value, eta = b + step, proposed, proposed_eta
            if np.max(np.abs(step)) < MODE_TOLERANCE * (1.0 + np.max(np.abs(b))):
                break
        else:
            raise NotConverged(f"the mode of the random effects was not found in {MAX_NEWTON} Newton steps")
        mu = expit(eta)
        self.system.reweight(np.maximum(mu * (1.0 - mu), 1e-12))
        self.system.set_ratios(variances)
        self.effects = b
        return b

    def evaluate(self, variances: np.ndarray, beta: np.ndarray) -> LaplaceEvaluation:
        """The estimated score (variances' then β's), its per-probe parts and the average information at the mode
        for (``variances``, ``beta``)."""
        variances, beta = np.asarray(variances, float), np.asarray(beta, float)
        b = self.mode(variances, beta)
        k_factors, p, m = len(self.sizes), len(beta), self.n_probes
        eta = self.X @ beta + self._rows(b[:, None])[:, 0]
        mu = expit(eta)
        weights = mu * (1.0 - mu)
        slope = weights * (1.0 - 2.0 * mu)                   # w'
        blocks = self.system.factor_blocks(b)
        edges = np.cumsum([0] + self.sizes)
        moved_by_variance = np.zeros((sum(self.sizes), k_factors))   # E_k b̂ / v_k²
        information_vectors = np.zeros((sum(self.sizes), k_factors))  # a_k = b̂_k / v_k on block k
        for k, block in enumerate(blocks):
            moved_by_variance[edges[k]:edges[k + 1], k] = block / variances[k] ** 2
            information_vectors[edges[k]:edges[k + 1], k] = block / variances[k]
        weighted_x = self._level_sums(weights[:, None] * self.X)        # Z'WX
        gram_a = self.system.gram_product(information_vectors)          # Z'WZ a
        rhs = np.column_stack([self.probes, moved_by_variance, weighted_x, gram_a])
        solved = self._solve(rhs, "evaluation")
        km = k_factors * m
        x_probes = solved[:, :km]
        d_variance = solved[:, km:km + k_factors]
        d_beta = -solved[:, km + k_factors:km + k_factors + p]
        solved_gram = solved[:, km + k_factors + p:]

        # each probe's estimate of tr(C⁻¹_kk) and of the leverages h
        probe_blocks = self.system.factor_blocks(self.probes)
        solved_blocks = self.system.factor_blocks(x_probes)
        traces = np.empty((m, k_factors))
        for k in range(k_factors):
            columns = slice(k * m, (k + 1) * m)
            traces[:, k] = np.einsum("ij,ij->j", probe_blocks[k][:, columns], solved_blocks[k][:, columns])
        moved_eta = np.column_stack([self._rows(d_variance), self.X + self._rows(d_beta)]) * slope[:, None]
        log_det_terms = np.zeros((m, k_factors + p))                     # Σ_i h_i w'_i dη_i, each probe's h
        for first in range(0, len(self.y), ROW_CHUNK):                   # h in chunks of rows: n × m at once is large
            rows = slice(first, first + ROW_CHUNK)
            leverage = np.zeros((min(ROW_CHUNK, len(self.y) - first), m))
            for k in range(k_factors):
                columns = slice(k * m, (k + 1) * m)
                gathered = sum(block[c[rows]] for block, c in zip(self.system.factor_blocks(x_probes[:, columns]),
                                                                  self.codes))
                leverage += gathered * probe_blocks[k][:, columns][self.codes[k][rows]]
            log_det_terms += leverage.T @ moved_eta[rows]
        sizes = np.asarray(self.sizes, float)
        data = np.concatenate([0.5 * np.array([blk @ blk for blk in blocks]) / variances ** 2 - 0.5 * sizes / variances,
                               self.X.T @ (self.y - mu)])
        probe_scores = data - 0.5 * log_det_terms
        probe_scores[:, :k_factors] += 0.5 * traces / variances ** 2

        variance_information = 0.5 * (information_vectors.T @ gram_a - gram_a.T @ solved_gram)
        beta_information = self.X.T @ (weights[:, None] * self.X) - weighted_x.T @ (-d_beta)
        information = np.zeros((k_factors + p, k_factors + p))
        information[:k_factors, :k_factors] = 0.5 * (variance_information + variance_information.T)
        information[k_factors:, k_factors:] = 0.5 * (beta_information + beta_information.T)
        return LaplaceEvaluation(variances, beta, probe_scores.mean(axis=0), probe_scores, information)


def solve_laplace(score: MonteCarloLaplace, variances: np.ndarray, beta: np.ndarray, floor: float):
    """Average-information steps from (``variances``, ``beta``) to the root of the estimated Laplace score: the last
    evaluation, the variances and β reached, whether the steps converged and how many were taken."""
    from .monte_carlo_reml import held_step

    k_factors = len(variances)
    for steps in range(1, MAX_STEPS + 1):
        evaluation = score.evaluate(variances, beta)
        information, gradient = evaluation.information, evaluation.score
        moved, held = held_step(information[:k_factors, :k_factors], gradient[:k_factors], variances, floor)
        beta_step = np.linalg.solve(information[k_factors:, k_factors:], gradient[k_factors:])
        step = np.concatenate([moved - variances, beta_step])
        variances, beta = moved, beta + beta_step
        if np.all(np.abs(step) <= STEP_TOLERANCE * evaluation.standard_errors()):
            variances[held] = 0.0
            return evaluation, variances, beta, True, steps
    return evaluation, variances, beta, False, MAX_STEPS


def score_curvature(score: MonteCarloLaplace, evaluation: LaplaceEvaluation) -> np.ndarray:
    """−∂score/∂(v, β) of the estimated score (the same vectors) by forward differences of a twentieth of each
    standard error: the average information of the working model is not the Laplace score's slope, and the Monte
    Carlo error of the root needs the slope."""
    k_factors = len(evaluation.variances)
    point = np.concatenate([evaluation.variances, evaluation.beta])
    steps = 0.05 * evaluation.standard_errors()
    curvature = np.empty((len(point), len(point)))
    for index, h in enumerate(steps):
        moved = point.copy()
        moved[index] += h
        shifted = score.evaluate(moved[:k_factors], moved[k_factors:])
        curvature[:, index] = -(shifted.score - evaluation.score) / h
    return curvature


def monte_carlo_binary_model(frame: ModelFrame, family: Family, nagq: int) -> bool:
    """Can this path fit the frame: 0/1 scores with the logit link, Laplace's approximation, random intercepts of
    two factors or more, the rows in memory?"""
    return (frame.has_rows and nagq == 1 and family.link == "logit" and not frame.spec.has_slopes
            and len(frame.groups) >= 2 and frame.trials is None and frame.is_binary())


@dataclass(kw_only=True)
class MonteCarloGlmmFit(MonteCarloFields, GlmmFit):
    """A ``GlmmFit`` whose variances and β solve the Laplace score equations with Monte Carlo traces: their standard
    errors from the slope of the estimated score and the Monte Carlo error of each estimate."""

    exact: ClassVar[bool] = False

    @property
    def approximation(self) -> str:
        return "Laplace, Monte Carlo traces"

    def __str__(self) -> str:
        table = pd.DataFrame({"variance": self.variances, "std_error": self.variance_se,
                              "monte_carlo_error": self.monte_carlo_se})
        return "\n".join([super().__str__(), "Variances (standard errors from the slope of the estimated score; Monte "
                           "Carlo error of each estimate):", indented(table)])


def fit_monte_carlo_laplace(frame: ModelFrame, family: Family, notes: list[str], probes: int = DEFAULT_PROBES,
                            seed: int = 0, reason: str = "") -> MonteCarloGlmmFit:
    """The Laplace ML fit of 0/1 scores with crossed random intercepts, by its score with Monte Carlo traces.

    Parameters
    ----------
    frame : ModelFrame
        A frame with its rows in memory, 0/1 scores and random intercepts of two factors or more.
    family : Family
        The resolved family (logit link).
    notes : list of str
        The notes of the frame and the family.
    probes : int, default 16
        The ±1 vectors per grouping factor.
    seed : int, default 0
        Seed of the vectors.
    reason : str, default ""
        Why this path was taken, added to the note.

    Returns
    -------
    MonteCarloGlmmFit
        The estimates with their standard errors and Monte Carlo errors.
    """
    if not monte_carlo_binary_model(frame, family, 1):
        raise BayesreproError(f"the Monte Carlo Laplace path covers 0/1 scores with the logit link and random "
                              f"intercepts of two grouping factors or more, not {frame.formula!r}")
    fixed_cells = binomial_cells(dataclasses.replace(frame, groups=[]))
    beta = LaplaceDeviance(fixed_cells, get_link("logit")).glm_start()
    score = MonteCarloLaplace([g.codes for g in frame.groups], [g.n_levels for g in frame.groups], frame.X,
                              frame.y, probes, seed)
    start = np.full(len(frame.groups), START_VARIANCE)
    try:
        with numerical_work():
            evaluation, variances, beta, converged, steps = solve_laplace(score, start, beta, FLOOR)
            curvature = score_curvature(score, evaluation)
    except (NotConverged, np.linalg.LinAlgError) as error:
        raise BayesreproError(f"the Monte Carlo Laplace fit of {frame.formula!r} failed ({error}); fit fewer levels "
                              "(--where a subset)") from None
    names = [g.name for g in frame.groups]
    k_factors = len(names)
    # the observed information of the estimated score: its slope, symmetrised
    covariance = np.linalg.inv(0.5 * (curvature + curvature.T))
    errors, monte_carlo = np.sqrt(np.diag(covariance)), evaluation.monte_carlo_errors(curvature)
    note = (f"method: ML by Laplace's approximation with Monte Carlo traces ({probes} ±1 vectors per factor, seed "
            f"{seed}; conjugate gradients on the Schur complement of the largest factor)"
            f"{'; ' + reason if reason else ''}"
            "; standard errors from the slope of the estimated score (forward differences); no likelihood "
            "is computed")
    return MonteCarloGlmmFit(
        formula=frame.formula, family=family.name, link=family.link, n_obs=frame.n_obs, n_cells=frame.n_obs, nagq=1,
        variances=dict(zip(names, map(float, variances))), fixed_names=list(frame.fixed_names), beta=beta,
        covariance=covariance[k_factors:, k_factors:], loglik=float("nan"), converged=converged,
        message=f"{steps} average-information steps" if converged else f"no convergence in {steps} steps",
        theta=np.sqrt(variances), n_levels={g.name: g.n_levels for g in frame.groups},
        **fixed_rows(fixed_cells, beta), notes=list(notes) + [note],
        variance_se=dict(zip(names, map(float, errors[:k_factors]))),
        monte_carlo_se=dict(zip(names, map(float, monte_carlo[:k_factors]))), probes=probes)
