"""REML (or ML) for crossed random intercepts at millions of rows: average-information steps with Monte Carlo traces.

The REML score of each variance σ_k² (the residual's included) is

    s_k = −½ tr(P V_k) + ½ y'P V_k P y,      V_k = Z_k Z_k' (the residual's: I),

with P = V⁻¹ − V⁻¹X(X'V⁻¹X)⁻¹X'V⁻¹, and the average information (Gilmour,
Thompson & Cullis 1995) AI_kl = ½ y'P V_k P V_l P y; a step is σ² += AI⁻¹ s.
Every product with V⁻¹ goes through Henderson's equations with the largest
factor eliminated and conjugate gradients on the others' Schur complement
(``crossed_system.py``), so nothing grows with the square of any level count.

Only the traces are not products with vectors. With C = Z'Z + Γ⁻¹ and V = σ²H,

    tr(H⁻¹ V_k) = q_k/γ_k − tr(C⁻¹_kk)/γ_k²,

and tr(C⁻¹_kk) is estimated from random ±1 vectors z over factor k's levels,
E z'C⁻¹_kk z = tr(C⁻¹_kk) (Hutchinson's estimator; the ±1 entries make the
estimate exact for the diagonal of a diagonal matrix, and C⁻¹_kk is dominated
by its diagonal in sparse crowd designs, so far fewer vectors are needed than
with vectors drawn from the model); the residual's trace follows from
tr(P H) = n − p. The vectors are drawn once and kept for every iteration
(Matilainen et al. 2013; BOLT-REML, Loh et al. 2015), so the estimated score
is a smooth function of σ² and the steps converge to the root of one fixed
equation. That root differs from the exact REML estimate by the Monte Carlo
error of the traces, reported as its linearisation: with s_j the score from
vector j alone, the root moves by AI⁻¹ (s̄ − s_j), so its Monte Carlo
covariance is AI⁻¹ Cov(s_j) AI⁻¹ / m for m vectors. The standard errors of the
estimates are those of AI⁻¹ (as for an exact AI-REML fit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..design import ModelFrame
from ..design.memory_estimate import ASSUMED_FLOPS_PER_SECOND, BYTES_PER_NUMBER
from ..errors import BayesreproError
from ..reliability import RESIDUAL
from .conjugate_gradients import NotConverged
from .fit_result import indented
from .lmm_fit import LmmFit

PATH = "monte-carlo"
DEFAULT_PROBES = 16
# Steps stop when every variance moves by less than this share of its standard error.
STEP_TOLERANCE = 1e-2
MAX_STEPS = 50
SOLVE_RTOL = 1e-8
# Seconds of one factorisation of the sparse core's worst case (a dense factor of the levels left after the
# largest factor, m³/3 flops at the assumed rate) above which the exact fit is not worth waiting for where the
# Monte Carlo path can run: 5,489 raters of a skewed crowd (5.5 s) stay exact (3.5 s measured), 7,960 of a uniform
# one (17 s; 134 s measured for the fit) do not.
SPARSE_FACTOR_SECONDS = 10.0
# The smallest variance a step may reach, as a share of the response's variance: the boundary.
FLOOR = 1e-8


@dataclass(kw_only=True)
class MonteCarloFields:
    """What a fit with Monte Carlo traces reports beyond its exact counterpart: the standard errors of the
    variances, their Monte Carlo errors and the ±1 vectors per factor. Mixed in before the fit's class, whose
    ``to_dict`` it extends."""

    variance_se: dict[str, float] = field(default_factory=dict)
    monte_carlo_se: dict[str, float] = field(default_factory=dict)
    probes: int = 0

    def path_fields(self) -> dict:
        """The path, the standard errors of the variances, their Monte Carlo errors and the vectors of the traces."""
        return {"path": PATH, "variance_se": dict(self.variance_se), "monte_carlo_se": dict(self.monte_carlo_se),
                "probes": self.probes}

    def to_dict(self) -> dict:
        """The fit's dictionary with ``path_fields`` added."""
        return {**super().to_dict(), **self.path_fields()}


@dataclass(kw_only=True)
class MonteCarloFit(MonteCarloFields, LmmFit):
    """An ``LmmFit`` whose variances solve the REML (ML) score equations with Monte Carlo traces: their standard
    errors from the average information and the Monte Carlo error of each estimate."""

    steps: int = 0

    exact: ClassVar[bool] = False

    @property
    def title(self) -> str:
        return (f"Linear mixed model fit by {self.method.upper()} with Monte Carlo traces (conjugate gradients): "
                f"{self.formula}")

    def __str__(self) -> str:
        table = self.vca().assign(std_error=[self.variance_se.get(name, np.nan) for name in self.variances],
                                  monte_carlo_error=[self.monte_carlo_se.get(name, np.nan) for name in self.variances])
        return "\n".join(self.head() + [f"  note: {note}" for note in self.notes] + [
            "Variance components (standard errors from the average information; Monte Carlo error of each estimate):",
            indented(table), "Fixed effects:", indented(self.fixed_effects())])


@dataclass(frozen=True)
class Evaluation:
    """The estimated score, the average information and what the fit reports, at one σ²."""

    sigma2: np.ndarray
    score: np.ndarray              # mean over the probes
    probe_scores: np.ndarray       # (m, K+1): the score from each probe alone
    information: np.ndarray        # the average information, (K+1) × (K+1)
    beta: np.ndarray
    beta_covariance: np.ndarray
    iterations: int                # conjugate-gradient iterations, the slowest column of either solve

    def standard_errors(self) -> np.ndarray:
        """The standard errors of the variances: the square roots of AI⁻¹'s diagonal."""
        return np.sqrt(np.diag(np.linalg.inv(self.information)))

    def monte_carlo_errors(self) -> np.ndarray:
        """The Monte Carlo standard error of the root of the estimated score (its linearisation, see the module)."""
        m = len(self.probe_scores)
        inverse = np.linalg.inv(self.information)
        spread = np.atleast_2d(np.cov(self.probe_scores, rowvar=False)) / m
        return np.sqrt(np.maximum(np.diag(inverse @ spread @ inverse), 0.0))


class MonteCarloScore:
    """The REML (ML) score of crossed random intercepts with traces from fixed ±1 vectors, and its average
    information.

    Parameters
    ----------
    codes : list of numpy.ndarray
        Each factor's level of every row.
    sizes : list of int
        Each factor's levels.
    X : numpy.ndarray
        The fixed-effects design (n × p).
    y : numpy.ndarray
        The response.
    reml : bool
        REML (True) or ML.
    probes : int
        The ±1 vectors per factor.
    seed : int
        Seed of the vectors.
    """

    def __init__(self, codes: list[np.ndarray], sizes: list[int], X: np.ndarray, y: np.ndarray, reml: bool,
                 probes: int, seed: int):
        from .crossed_system import CrossedSystem

        self.system = CrossedSystem(codes, sizes)
        self.codes, self.sizes, self.X, self.y, self.reml = codes, list(sizes), X, y, reml
        self.n_obs, self.n_fixed = X.shape
        self.zty = self._level_sums(y[:, None])[:, 0]
        self.ztx = self._level_sums(X)
        self.xtx, self.xty = X.T @ X, X.T @ y
        rng = np.random.default_rng(seed)
        self.n_probes = m = int(probes)
        system = self.system
        # ±1 vectors over the lead factor's levels, and over each other factor's levels (zero on the rest of the
        # other factors' levels, in the Schur complement's order)
        self.lead_probes = rng.choice([-1.0, 1.0], size=(sizes[system.lead], m))
        self.rest_probes = np.zeros((system.n_rest, len(system.rest) * m))
        for index, k in enumerate(system.rest):
            rows = slice(system.offsets[k], system.offsets[k] + sizes[k])
            self.rest_probes[rows, index * m:(index + 1) * m] = rng.choice([-1.0, 1.0], size=(sizes[k], m))
        self._starts: dict[str, np.ndarray] = {}

    def _level_sums(self, columns: np.ndarray) -> np.ndarray:
        """Z'A for a block of row-space columns: each factor's sums over its levels, stacked."""
        return np.concatenate([np.stack([np.bincount(c, weights=a, minlength=s) for a in columns.T], axis=1)
                               for c, s in zip(self.codes, self.sizes)])

    def _solve(self, rhs: np.ndarray, name: str) -> tuple[np.ndarray, int]:
        """C⁻¹ rhs (all levels stacked), warm-started from the last solve of the same name."""
        solved, start, iterations = self.system.solve(rhs, self._starts.get(name), SOLVE_RTOL)
        self._starts[name] = start
        return solved, iterations

    def evaluate(self, sigma2: np.ndarray) -> Evaluation:
        """The estimated score, its per-probe parts and the average information at ``sigma2`` (the factors'
        variances, the residual's last)."""
        sigma2 = np.asarray(sigma2, dtype=float)
        residual_variance = sigma2[-1]
        gamma = sigma2[:-1] / residual_variance
        system, p, m = self.system, self.n_fixed, self.n_probes
        system.set_ratios(gamma)
        # one solve with S for the data's columns (Z'y, Z'X) and every probe: a lead probe v enters as W'D⁻¹v,
        # whose quadratic form with S⁻¹ is v'C⁻¹_11 v − tr(D⁻¹); a rest probe as itself
        data_lead, data_rest = system.split(np.column_stack([self.zty, self.ztx]))
        lead_images = system.eliminated(self.lead_probes)
        rhs = np.column_stack([data_rest - system.eliminated(data_lead), lead_images, self.rest_probes])
        rest, first = system.solve_schur(rhs, self._starts.get("first"), SOLVE_RTOL)
        self._starts["first"] = rest
        solved = system.join(system.back_substitute(data_lead, rest[:, :1 + p]), rest[:, :1 + p])
        x_y, x_x = solved[:, 0], solved[:, 1:]
        xhx = self.xtx - self.ztx.T @ x_x                     # X'H⁻¹X
        beta = np.linalg.solve(xhx, self.xty - self.ztx.T @ x_y)
        effects = x_y - x_x @ beta                            # the BLUPs û = C⁻¹Z'(y − Xβ)
        effect_blocks = system.factor_blocks(effects)
        residual = self.y - self.X @ beta - sum(u[c] for u, c in zip(effect_blocks, self.codes))   # H⁻¹(y − Xβ)
        data_terms = np.array([u @ u for u in effect_blocks] + [residual @ residual]) / sigma2 ** 2

        # Hutchinson's estimates of tr(C⁻¹_kk) from each probe, then τ_k = tr(P_H V_k) (P_H = σ²P), less the fixed
        # effects' share for REML
        inverse_traces = np.empty((m, len(self.sizes)))
        inverse_traces[:, system.lead] = np.sum(1.0 / system.lead_diagonal) + np.einsum(
            "ij,ij->j", lead_images, rest[:, 1 + p:1 + p + m])
        rest_solutions = rest[:, 1 + p + m:]
        for index, k in enumerate(system.rest):
            columns = slice(index * m, (index + 1) * m)
            inverse_traces[:, k] = np.einsum("ij,ij->j", self.rest_probes[:, columns], rest_solutions[:, columns])
        traces = np.asarray(self.sizes) / gamma - inverse_traces / gamma ** 2
        xhx_inverse = np.linalg.inv(xhx)
        if self.reml:
            for k, block in enumerate(system.factor_blocks(x_x)):
                share = block / gamma[k]                      # Z_k'H⁻¹X
                traces[:, k] -= np.einsum("ij,jk,ik->", share, xhx_inverse, share)
        residual_trace = (self.n_obs - (p if self.reml else 0) - traces @ gamma) / residual_variance
        probe_scores = 0.5 * (data_terms - np.column_stack([traces / residual_variance, residual_trace]))

        information, second = self._average_information(effect_blocks, residual, sigma2, xhx_inverse)
        return Evaluation(sigma2, probe_scores.mean(axis=0), probe_scores, information, beta,
                          residual_variance * xhx_inverse, max(first, second))

    def _average_information(self, effect_blocks, residual, sigma2, xhx_inverse) -> tuple[np.ndarray, int]:
        """AI_kl = ½ u_k'P u_l with u_k = V_k P y: Z_k û_k / σ_k² for a factor, the residual H⁻¹(y − Xβ)/σ² for
        the residual's variance (``P_H = σ²P``)."""
        residual_variance = sigma2[-1]
        k_factors = len(self.sizes)
        n_levels = self.system.n_levels
        edges = np.cumsum([0] + self.sizes)
        weights = np.zeros((n_levels, k_factors))
        for k, u in enumerate(effect_blocks):
            weights[edges[k]:edges[k + 1], k] = u / sigma2[k]
        zu = np.column_stack([self.system.gram_product(weights),
                              np.concatenate([u / (sigma2[k] / residual_variance) for k, u in enumerate(effect_blocks)])
                              / residual_variance])             # Z'u: Z'Z a, and Z'H⁻¹r/σ² = Γ⁻¹û/σ²
        xu = np.column_stack([self.ztx.T @ weights, np.zeros(self.n_fixed)])   # X'u (X'H⁻¹r = 0 at β̂)
        gram = np.empty((k_factors + 1, k_factors + 1))
        gram[:k_factors] = weights.T @ zu
        gram[k_factors, :k_factors] = gram[:k_factors, k_factors]
        gram[k_factors, k_factors] = residual @ residual / residual_variance ** 2
        solved, iterations = self._solve(zu, "information")
        quadratic = gram - zu.T @ solved                      # U'H⁻¹U
        if self.reml:
            projected = xu - self.ztx.T @ solved              # X'H⁻¹U
            quadratic -= projected.T @ xhx_inverse @ projected
        return 0.5 * (quadratic + quadratic.T) / (2.0 * residual_variance), iterations


def fit_monte_carlo(frame: ModelFrame, method: str = "reml", probes: int = DEFAULT_PROBES, seed: int = 0,
                    reason: str = "") -> MonteCarloFit:
    """Variance components of a random-intercept model by REML or ML with Monte Carlo traces.

    Parameters
    ----------
    frame : ModelFrame
        A frame with its rows in memory and random intercepts only.
    method : {"reml", "ml"}, default "reml"
        The criterion whose score equations are solved.
    probes : int, default 16
        The ±1 vectors per grouping factor that estimate the traces.
    seed : int, default 0
        Seed of the vectors.
    reason : str, default ""
        Why this path was taken, added to the note.

    Returns
    -------
    MonteCarloFit
        The estimates with their standard errors and Monte Carlo errors.
    """
    _require_model(frame)
    if probes < 2:
        raise BayesreproError(f"the Monte Carlo traces need at least 2 probe vectors, not {probes}")
    codes = [g.codes for g in frame.groups]
    sizes = [g.n_levels for g in frame.groups]
    score = MonteCarloScore(codes, sizes, frame.X, frame.y, method == "reml", probes, seed)
    sigma2 = start_values(frame)
    floor = FLOOR * max(float(np.var(frame.y)), np.finfo(float).tiny)
    converged, steps, iterations = False, 0, 0
    try:
        for steps in range(1, MAX_STEPS + 1):
            evaluation = score.evaluate(sigma2)
            iterations = max(iterations, evaluation.iterations)
            moved, held = held_step(evaluation.information, evaluation.score, sigma2, floor)
            step, sigma2 = moved - sigma2, moved
            if np.all(np.abs(step) <= STEP_TOLERANCE * evaluation.standard_errors()):
                converged = True
                sigma2[held] = 0.0     # on the boundary: the score still points below zero
                break
    except (NotConverged, np.linalg.LinAlgError) as error:
        raise BayesreproError(f"the Monte Carlo {method.upper()} fit of {frame.formula!r} failed ({error}); fit "
                              "fewer levels (--where a subset)") from None
    message = (f"{steps} average-information steps{'' if converged else ' without convergence'}; at most "
               f"{iterations} conjugate-gradient iterations a solve")
    names = [g.name for g in frame.groups] + [RESIDUAL]
    notes = list(frame.notes) + [
        f"method: {method.upper()} with Monte Carlo traces ({probes} ±1 vectors per factor, seed {seed}; conjugate "
        f"gradients on the Schur complement of the largest factor){'; ' + reason if reason else ''}; standard "
        "errors of the variances from the average information; no likelihood is computed"]
    return MonteCarloFit(
        formula=frame.formula, method=method, n_obs=frame.n_obs, variances=dict(zip(names, map(float, sigma2))),
        fixed_names=list(frame.fixed_names), beta=evaluation.beta, covariance=evaluation.beta_covariance,
        criterion=float("nan"), converged=converged, message=message,
        theta=np.sqrt(sigma2[:-1] / sigma2[-1]), n_levels={g.name: g.n_levels for g in frame.groups}, notes=notes,
        variance_se=dict(zip(names, map(float, evaluation.standard_errors()))),
        monte_carlo_se=dict(zip(names, map(float, evaluation.monte_carlo_errors()))), probes=probes, steps=steps)


def start_values(frame: ModelFrame) -> np.ndarray:
    """Moment estimates of the variances (``moments.moment_design``) from the least-squares residuals, each at
    least a twentieth of the residuals' variance over the components."""
    from .moments import moment_design

    residual = frame.y - frame.X @ np.linalg.lstsq(frame.X, frame.y, rcond=None)[0]
    estimate = moment_design(frame).estimate(residual, [g.codes for g in frame.groups])
    share = max(float(residual @ residual) / len(residual), np.finfo(float).tiny) / (len(estimate) * 20)
    return np.maximum(estimate, share)


def held_step(information: np.ndarray, score: np.ndarray, sigma2: np.ndarray,
              floor: float) -> tuple[np.ndarray, np.ndarray]:
    """σ² after the average-information step, every variance the step would take below a tenth of its value held
    there and the others stepping given that move; also which were held (they approach the boundary tenfold a
    step)."""
    held = np.zeros(len(sigma2), dtype=bool)
    move = np.zeros(len(sigma2))
    for _ in range(len(sigma2)):
        move[held] = np.maximum(0.1 * sigma2[held], floor) - sigma2[held]
        free = ~held
        move[free] = np.linalg.solve(information[np.ix_(free, free)],
                                     score[free] - information[np.ix_(free, held)] @ move[held])
        low = free & (sigma2 + move < 0.1 * sigma2)
        if not low.any() or low.sum() == free.sum():
            break
        held |= low
    return np.maximum(sigma2 + move, floor), held


def exact_factor_quick(levels: int, limit: int) -> tuple[bool, int, float]:
    """Is the sparse core's factor of ``levels`` levels (those left after the largest factor) small and quick enough
    for an exact fit: its worst case, a dense factor kept as L and U, within a quarter of the memory limit, and one
    factorisation (m³/3 flops at the assumed rate) within ``SPARSE_FACTOR_SECONDS``? Also that bound and time."""
    from .core_memory import SPARSE_FACTOR_COPIES

    bound = SPARSE_FACTOR_COPIES * BYTES_PER_NUMBER * levels * levels
    seconds = float(levels) ** 3 / 3.0 / ASSUMED_FLOPS_PER_SECOND
    return bound <= limit / 4 and seconds <= SPARSE_FACTOR_SECONDS, bound, seconds


def monte_carlo_model(frame: ModelFrame) -> bool:
    """Can this path fit the frame: random intercepts of two factors or more, the rows in memory?"""
    return frame.has_rows and not frame.spec.has_slopes and len(frame.groups) >= 2


def monte_carlo_bytes(frame: ModelFrame, probes: int = DEFAULT_PROBES) -> int:
    """The peak memory of this path's solves for the frame (``crossed_system.iterative_bytes``)."""
    sizes = [g.n_levels for g in frame.groups]
    return iterative_bytes(frame.n_obs, sizes, frame.n_fixed, 1 + frame.n_fixed + len(sizes) * probes)


def iterative_bytes(n_obs: int, sizes: list[int], n_fixed: int, columns: int) -> int:
    """The peak memory of a fit with ``columns`` right-hand sides, estimated from the counts before anything is
    built: the rows' codes, work vectors and sparse matrices while W is built (about 20 numbers a row and factor),
    W and its transposed and squared copies (at most one non-zero a row, 5 numbers each with their indices), the
    blocks of conjugate gradients over the other factors' levels (8 copies) and the lead factor's blocks (4)."""
    lead = max(sizes)
    rest = sum(sizes) - lead
    numbers = n_obs * (20 * len(sizes) + n_fixed) + 5 * n_obs + columns * (8 * rest + 4 * lead)
    return BYTES_PER_NUMBER * int(numbers)


def _require_model(frame: ModelFrame) -> None:
    if frame.spec.has_slopes or len(frame.groups) < 2:
        raise BayesreproError(f"the Monte Carlo REML path covers random intercepts of two grouping factors or more, "
                              f"not {frame.formula!r}")
    frame.require_rows("the Monte Carlo REML path")
