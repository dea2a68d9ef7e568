"""Variance components of large crossed random-intercept designs by the method of moments, in O(rows).

For y = μ + Σ_k b_k + ε with crossed (or nested) random intercepts, the
within-level sums of squares of each factor and the total sum of squares,

    W_k = Σ_m Σ_{i in level m of k} (y_i − ȳ_m)²,     W_0 = Σ_i (y_i − ȳ)²,

have expectations linear in the variances (Gao & Owen 2017, "Efficient
moment calculations for variance components in large unbalanced crossed
random effects models", Electron. J. Statist. 11(1); for two factors their
U-statistics are W_item, W_rater and N·W_0):

    E W_k = Σ_{l≠k} σ_l² (N − Σ_m Σ_g n_mg² / n_m) + σ_ε² (N − R_k)
    E W_0 = Σ_l σ_l² (N − Σ_g n_g² / N) + σ_ε² (N − 1),

n_mg the rows in level m of factor k and level g of factor l, R_k the levels
of k. Equating each W to its expectation gives K + 1 linear equations; their
coefficients need only the level counts and the pairwise counts, which the
grouped sums already hold, so the estimator costs one pass over the rows and
a (K+1)×(K+1) solve, whatever the number of levels. It is unbiased but not
efficient: its standard errors (a parametric bootstrap under the fitted
normal model, on the same design) say how much it loses against REML.

``fit_choice.choose_fit`` takes this path only where the Monte Carlo REML path would pass the memory limit too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from ..design import ModelFrame
from ..errors import BayesreproError
from .fit_result import indented
from .lmm_fit import LmmFit

METHOD = "moments"
DEFAULT_REPLICATES = 40


@dataclass(kw_only=True)
class MomentFit(LmmFit):
    """An ``LmmFit`` whose variances are moment estimates, with their bootstrap standard errors."""

    variance_se: dict[str, float] = field(default_factory=dict)
    replicates: int = 0

    exact: ClassVar[bool] = False

    @property
    def title(self) -> str:
        return f"Linear mixed model fit by the method of moments: {self.formula}"

    def path_fields(self) -> dict:
        """The standard errors of the variances and the simulated responses they come from."""
        return {"variance_se": dict(self.variance_se), "replicates": self.replicates}

    def to_dict(self) -> dict:
        return {**super().to_dict(), **self.path_fields()}

    def __str__(self) -> str:
        table = self.vca().assign(std_error=[self.variance_se.get(name, np.nan) for name in self.variances])
        return "\n".join(self.head() + [f"  note: {note}" for note in self.notes] + [
            "Variance components (standard errors from a parametric bootstrap):", indented(table),
            "Fixed effects (the mean of the scores):", indented(self.fixed_effects())])


@dataclass(frozen=True)
class MomentDesign:
    """The coefficients of the moment equations and the factors' codes: everything but the response."""

    coefficients: np.ndarray      # (K+1, K+1): rows W_0, W_1..W_K; columns σ_1²..σ_K², σ_ε²
    level_counts: list[np.ndarray]  # every level observed (a frame's levels are those of its rows)
    n_obs: int

    def estimate(self, y: np.ndarray, codes: list[np.ndarray]) -> np.ndarray:
        """The variances (σ_1²..σ_K², σ_ε²) solving the moment equations for the response ``y``."""
        return np.linalg.solve(self.coefficients, self.squares(y, codes))

    def squares(self, y: np.ndarray, codes: list[np.ndarray]) -> np.ndarray:
        centred = y - y.mean()
        total = float(centred @ centred)
        within = [total - float(np.bincount(c, weights=centred, minlength=len(n)) ** 2 @ (1.0 / n))
                  for c, n in zip(codes, self.level_counts)]
        return np.array([total] + within)


def moment_design(frame: ModelFrame) -> MomentDesign:
    """The moment equations of an intercept-only frame, from its grouped sums."""
    sums = frame.sums
    n = float(sums.n_obs)
    k = len(sums.sizes)
    counts = [np.bincount(part.level, weights=part.n, minlength=size) for part, size in zip(sums.factors, sums.sizes)]
    # Σ_m Σ_g n_mg² / n_m for each ordered pair (k, l)
    within_other = np.zeros((k, k))
    for (i, j), pair in sums.pairs.items():
        squares = pair.n * pair.n
        within_other[i, j] = float(np.sum(squares / counts[i][pair.first]))
        within_other[j, i] = float(np.sum(squares / counts[j][pair.second]))
    coefficients = np.zeros((k + 1, k + 1))
    coefficients[0, :k] = [n - float(c @ c) / n for c in counts]
    coefficients[0, k] = n - 1.0
    for a in range(k):
        for b in range(k):
            if a != b:
                coefficients[a + 1, b] = n - within_other[a, b]
        coefficients[a + 1, k] = n - float(np.count_nonzero(counts[a]))
    return MomentDesign(coefficients, counts, int(n))


def fit_moments(frame: ModelFrame, replicates: int = DEFAULT_REPLICATES, seed: int = 0,
                reason: str = "") -> MomentFit:
    """Variance components of an intercept-only random-intercept model by the method of moments.

    The frame must hold its rows (``--engine memory``): the standard errors come from ``replicates``
    responses simulated from the fitted normal model on the same design. ``reason`` is added to the note.
    """
    _require_moment_model(frame)
    design = moment_design(frame)
    if np.linalg.matrix_rank(design.coefficients) < len(design.coefficients):
        raise BayesreproError(
            f"the variance components of {frame.formula!r} are not identified by their moments (two factors "
            "split the rows alike, or a factor has a level per row); remove one of the factors"
        )
    codes = [g.codes for g in frame.groups]
    raw = design.estimate(frame.y, codes)
    variances_hat = np.maximum(raw, 0.0)
    rng = np.random.default_rng(seed)
    draws = np.array([design.estimate(_simulated(variances_hat, design, codes, rng), codes) for _ in range(replicates)])
    se = draws.std(axis=0, ddof=1) if replicates > 1 else np.full(len(raw), np.nan)
    names = [g.name for g in frame.groups] + ["Residual"]
    variances = dict(zip(names, map(float, variances_hat)))
    mean = float(frame.y.mean())
    # Var(ȳ) = (Σ_l σ_l² Σ_g n_g² + σ_ε² N) / N²
    mean_var = (sum(v * float(c @ c) for v, c in zip(variances_hat, design.level_counts))
                + variances_hat[-1] * design.n_obs) / design.n_obs ** 2
    sigma2 = max(float(variances_hat[-1]), np.finfo(float).tiny)
    notes = list(frame.notes) + [
        f"method: {METHOD} (Gao & Owen 2017 moment equations, O(rows)){'; ' + reason if reason else ''}; standard "
        f"errors of the variances from {replicates} responses simulated from the fitted normal model; no likelihood"
    ]
    clipped = [name for name, value in zip(names, raw) if value < 0]
    if clipped:
        notes.append(f"negative moment estimates set to 0: {', '.join(clipped)}")
    design_fields = {"formula": frame.formula, "n_obs": frame.n_obs, "fixed_names": list(frame.fixed_names),
                     "n_levels": {g.name: g.n_levels for g in frame.groups}}
    # no likelihood: the criterion is NaN (loglik null in JSON); θ = σ_k/σ as in the exact fits
    return MomentFit(method=METHOD, variances=variances, beta=np.array([mean]), covariance=np.array([[mean_var]]),
                     criterion=float("nan"), converged=True, message="closed form",
                     theta=np.sqrt(variances_hat[:-1] / sigma2), notes=notes,
                     variance_se=dict(zip(names, map(float, se))), replicates=replicates, **design_fields)


def moment_model(frame: ModelFrame) -> bool:
    """Does the method of moments fit ``frame`` (an intercept-only formula, the rows in memory)?"""
    return frame.has_rows and frame.fixed_names == ["Intercept"]


def _require_moment_model(frame: ModelFrame) -> None:
    if frame.fixed_names != ["Intercept"]:
        raise BayesreproError(
            f"the method of moments covers intercept-only formulas ('score ~ 1 + (1|item) + (1|rater)'), not "
            f"{frame.formula!r}; drop the fixed terms or fit fewer levels by REML"
        )
    frame.require_rows("the method of moments")


def _simulated(variances: np.ndarray, design: MomentDesign, codes: list[np.ndarray], rng) -> np.ndarray:
    y = rng.normal(scale=np.sqrt(variances[-1]), size=design.n_obs)
    for variance, c, counts in zip(variances[:-1], codes, design.level_counts):
        y += rng.normal(scale=np.sqrt(variance), size=len(counts))[c]
    return y
