"""Parametric-bootstrap reference distribution of a likelihood-ratio statistic, simulated in the statistics.

Data are simulated from H0's ML fit and both models refitted by ML; the
p-value is (r + 1)/(R + 1), r of R replicates reaching the observed statistic
(Davison & Hinkley 1997, ch. 4), with its Monte-Carlo standard error.

Nothing is simulated row by row. With U = [Z, X] (H1's random-effect
indicators and fixed design), the likelihood depends on a response only
through U'y and y'y, and for y = Uc + ε, ε ~ N(0, σ²I):

    U'y = Gc + U'ε,   y'y = c'Gc + 2c'U'ε + ε'ε,   G = U'U fixed,

where U'ε ~ N(0, σ²G) is drawn through the block factor of G that eliminates
the dominant factor's diagonal block, and ε'ε = σ²χ²_n splits into the part
inside span(U) (a function of the same draws) and an independent χ²_{n−rank U}.
A replicate therefore costs one pass over the levels, not over the rows, and
each refit reuses everything the criterion built from the design, starting
from the fitted θ.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from ..design import GaussianStats, ModelFrame
from ..errors import BayesreproError
from ..runtime import numerical_work
from .deviance import ProfiledDeviance
from .lmm_fit import LmmFit
from .optimise import BOUNDARY_THETA, optimise

MIN_SAMPLES = 20   # below this no p-value can fall under 5 %
MAX_SAMPLES = 1_000_000
BATCH = 200        # replicates drawn at once


@dataclass(frozen=True)
class SimulatedReference:
    """A reference distribution drawn by simulation, and the p-value of the observed statistic in it."""

    method: str                  # "bootstrap" or "exact-rlrt"
    statistic: float             # the observed statistic
    sample: np.ndarray           # its simulated null distribution
    unconverged: int = 0         # refits that failed the convergence test (kept)

    @property
    def exceed(self) -> int:
        return int(np.sum(self.sample >= self.statistic - STATISTIC_TOLERANCE))

    @property
    def p(self) -> float:
        return (self.exceed + 1) / (len(self.sample) + 1)

    @property
    def mc_se(self) -> float:
        """Monte-Carlo standard error of the p-value."""
        p = self.p
        return float(np.sqrt(p * (1 - p) / len(self.sample)))


# Statistics (−2 log L differences) closer than this are equal: the optimiser's resolution.
STATISTIC_TOLERANCE = 1e-6


def observed_statistic(criterion0: float, criterion1: float) -> float:
    """The likelihood-ratio statistic from two criteria (−2 log L), zero within the optimiser's resolution."""
    statistic = criterion0 - criterion1
    return statistic if statistic >= STATISTIC_TOLERANCE else 0.0


def bootstrap_workers(workers: int | None, samples: int) -> int:
    """Processes for a bootstrap: two where a machine has them and the run is long enough to repay the start."""
    if workers is not None:
        return max(int(workers), 1)
    return min(os.cpu_count() or 1, 2) if samples >= 400 else 1


def read_against(test, simulated: SimulatedReference, text: str, choice):
    """``test`` (a ``glrt.GlrtResult``) with the p-value of a simulated reference distribution, ``choice`` (a
    ``reference.Choice``) its method and the reason for it."""
    details = {"samples": len(simulated.sample), "exceed": simulated.exceed, "mc_se": simulated.mc_se,
               "statistic": simulated.statistic, "unconverged": simulated.unconverged}
    return dataclasses.replace(test, p=simulated.p, reference=f"{text} (Monte-Carlo SE {simulated.mc_se:.2g})",
                               method=choice.method, reason=choice.reason, details=details)


def check_samples(samples, option: str = "--bootstrap-samples") -> int:
    """The number of simulated samples, validated: a whole number from MIN_SAMPLES to MAX_SAMPLES."""
    if isinstance(samples, str) and samples.strip().isdigit():
        samples = int(samples)
    whole = isinstance(samples, (int, np.integer)) and not isinstance(samples, bool)
    if not whole or not MIN_SAMPLES <= samples <= MAX_SAMPLES:
        raise BayesreproError(
            f"{option} must be a whole number from {MIN_SAMPLES} to {MAX_SAMPLES:,}, got {samples!r}; "
            "1,000 gives a p-value near 0.05 with a Monte-Carlo standard error of 0.007"
        )
    return int(samples)


class ResponseSimulator:
    """Draws U'y and y'y of responses y = Uc + ε simulated under a model's design.

    Without rows (a frame of grouped sums) U'ε is drawn from its distribution:
    the dominant factor's part level by level, the rest through a root of its
    Schur complement, a dense block of the other factors' levels. With rows in
    memory (``for_frame``) y is simulated row by row through the sparse U,
    which costs O(rows) however many levels the factors have (crowd designs
    with thousands of raters).
    """

    def __init__(self, stats: GaussianStats, rows: sp.csr_matrix | None = None):
        if stats.n_groups == 0:
            raise BayesreproError("a parametric bootstrap of a mixed model needs a random intercept in H1")
        self.stats = stats
        self.n1 = len(stats.dominant_counts)
        self.counts = stats.dominant_counts
        self.rows = rows
        if rows is not None:
            return
        cross = sp.csr_matrix(stats.cross) if sp.issparse(stats.cross) else stats.cross
        self.coupling = sp.hstack([sp.csr_matrix(cross), sp.csr_matrix(stats.dominant_zx)], format="csr") \
            if sp.issparse(stats.cross) else np.hstack([cross, stats.dominant_zx])
        q_rest = len(stats.rest_zy)
        rest = np.zeros((q_rest + stats.n_fixed, q_rest + stats.n_fixed))
        rest[:q_rest, :q_rest] = stats.rest_gram
        rest[:q_rest, q_rest:] = stats.rest_zx
        rest[q_rest:, :q_rest] = stats.rest_zx.T
        rest[q_rest:, q_rest:] = stats.xtx
        self.rest_gram = rest
        scaled = self.coupling.multiply(1.0 / self.counts[:, None]) if sp.issparse(self.coupling) \
            else self.coupling / self.counts[:, None]
        product = self.coupling.T @ scaled
        schur = rest - (product.toarray() if sp.issparse(product) else np.asarray(product))
        values, vectors = np.linalg.eigh(0.5 * (schur + schur.T))
        keep = values > 1e-10 * max(values.max(), 1.0)
        self.root = vectors[:, keep] * np.sqrt(values[keep])      # Schur complement = root root'
        self.outside_df = stats.n_obs - self.n1 - int(keep.sum())  # ε'ε outside span(U)

    def draw(self, c: np.ndarray, sigma: float, rng: np.random.Generator):
        """U'y (rows: replicates; columns: dominant levels, other levels, fixed effects) and y'y for each column of c.

        ``c`` has one column per replicate: the coefficients of y's mean on U
        (random effects of every level, then the fixed effects).
        """
        size = c.shape[1]
        if self.rows is not None:
            y = np.asarray(self.rows @ c) + sigma * rng.standard_normal((self.rows.shape[0], size))
            return np.asarray(self.rows.T @ y).T, (y * y).sum(axis=0)
        n1 = self.n1
        z1 = rng.standard_normal((n1, size))
        z2 = rng.standard_normal((self.root.shape[1], size))
        e1 = sigma * np.sqrt(self.counts)[:, None] * z1
        e_rest = np.asarray(self.coupling.T @ (e1 / self.counts[:, None])) + sigma * (self.root @ z2)
        noise = np.vstack([e1, e_rest])                               # U'ε
        c1, c_rest = c[:n1], c[n1:]
        mean1 = self.counts[:, None] * c1 + np.asarray(self.coupling @ c_rest)
        mean_rest = np.asarray(self.coupling.T @ c1) + self.rest_gram @ c_rest
        gc = np.vstack([mean1, mean_rest])                            # Gc
        inside = (z1 * z1).sum(axis=0) + (z2 * z2).sum(axis=0)
        noise_ss = sigma**2 * (inside + rng.chisquare(self.outside_df, size) if self.outside_df > 0 else inside)
        yty = (c * gc).sum(axis=0) + 2.0 * (c * noise).sum(axis=0) + noise_ss
        return (gc + noise).T, yty


# Above this many levels of the non-dominant factors (and fixed effects) the Schur complement's dense root
# costs more than simulating rows: a frame with rows is then simulated through them.
DENSE_SCHUR_LIMIT = 1000


def simulator_for(frame: ModelFrame) -> ResponseSimulator:
    """The response simulator of a frame: through its rows when it has them and the other factors have many
    levels (a crowd design), else from its statistics."""
    stats = frame.stats()
    if not frame.has_rows or stats.n_groups == 0 or len(stats.rest_zy) + stats.n_fixed <= DENSE_SCHUR_LIMIT:
        return ResponseSimulator(stats)
    n = len(frame.y)
    blocks = [sp.csr_matrix((np.ones(n), (np.arange(n), frame.groups[k].codes)), shape=(n, frame.groups[k].n_levels))
              for k in stats.order]
    return ResponseSimulator(stats, sp.hstack([*blocks, sp.csr_matrix(frame.X)], format="csr"))


@dataclass(frozen=True)
class ModelMap:
    """How a model's response statistics follow from those of the simulation's design (H1).

    ``levels[k]`` gives, for the model's factor k (formula order), the
    positions of its levels in the simulated U'y; ``fixed`` maps H1's X'y to
    the model's (X_m = X_1 T); ``shift`` is what the model subtracts from y
    beyond what H1 subtracts.
    """

    stats: GaussianStats
    levels: list[np.ndarray]
    fixed: np.ndarray
    shift: float

    def restate(self, u_y: np.ndarray, yty: float, y_sum: float, p1: int) -> GaussianStats:
        s = self.stats
        d = self.shift
        z = [u_y[index] - d * counts for index, counts in zip(self.levels, _level_counts(s))]
        ordered = [z[k] for k in s.order]
        return dataclasses.replace(
            s,
            dominant_zy=ordered[0] if ordered else s.dominant_zy,
            rest_zy=np.concatenate(ordered[1:]) if len(ordered) > 1 else s.rest_zy,
            xty=self.fixed.T @ u_y[len(u_y) - p1:] - d * s.x_sum,
            yty=float(yty - 2.0 * d * y_sum + d * d * s.n_obs),
            y_sum=float(y_sum - d * s.n_obs),
        )


def _level_counts(stats: GaussianStats) -> list[np.ndarray]:
    """Each factor's level counts, formula order."""
    offsets = np.concatenate([[0], np.cumsum(stats.rest_sizes)]).astype(int)
    ordered = [stats.dominant_counts] + [np.diag(stats.rest_gram)[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    counts = [None] * stats.n_groups
    for position, k in enumerate(stats.order):
        counts[k] = ordered[position]
    return counts


def _level_positions(frame1: ModelFrame) -> dict[frozenset, tuple[slice, object]]:
    """Where each of H1's factors sits in the simulated U'y (dominant first, then the others in elimination order)."""
    stats = frame1.stats()
    sizes = [len(stats.dominant_counts), *stats.rest_sizes]
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(int)
    positions = {}
    for position, k in enumerate(stats.order):
        group = frame1.groups[k]
        positions[frozenset(group.columns)] = (np.arange(offsets[position], offsets[position + 1]), group)
    return positions


def model_map(frame: ModelFrame, frame1: ModelFrame, x_on_h1_cells: np.ndarray) -> ModelMap:
    """The map from H1's simulated statistics to those of ``frame`` (H0 or H1 itself), both on the same rows."""
    positions = _level_positions(frame1)
    levels = []
    for group in frame.groups:
        index, group1 = positions[frozenset(group.columns)]
        if group.columns != group1.columns:     # the same grouping written in another column order
            frame.require_rows(f"matching the levels of '{group.name}' and '{group1.name}'")
            first = np.zeros(group.n_levels, dtype=np.int64)
            first[group.codes] = group1.codes
            index = index[first]
        levels.append(index)
    fixed, *_ = np.linalg.lstsq(frame1.X_cells, x_on_h1_cells, rcond=None)
    return ModelMap(frame.stats(), levels, fixed, frame.stats().y_shift - frame1.stats().y_shift)


@dataclass(frozen=True)
class NullModel:
    """H0's ML fit written on H1's U: the SD of every level effect, the fixed coefficients, the residual SD."""

    level_sd: np.ndarray
    fixed: np.ndarray
    sigma: float

    def coefficients(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """c for ``size`` replicates: new level effects in each, the same fixed part."""
        effects = self.level_sd[:, None] * rng.standard_normal((len(self.level_sd), size))
        return np.vstack([effects, np.repeat(self.fixed[:, None], size, axis=1)])


def null_model(fit0: LmmFit, frame0: ModelFrame, frame1: ModelFrame, x0_on_h1_cells: np.ndarray) -> NullModel:
    stats1 = frame1.stats()
    to_h1, *_ = np.linalg.lstsq(frame1.X_cells, x0_on_h1_cells, rcond=None)
    fixed = to_h1 @ fit0.beta
    if stats1.y_shift:
        ones, *_ = np.linalg.lstsq(frame1.X_cells, np.ones((len(frame1.X_cells), 1)), rcond=None)
        fixed = fixed - stats1.y_shift * ones[:, 0]
    variance_of = {frozenset(g.columns): fit0.variances[g.name] for g in frame0.groups}
    sd = [np.full(frame1.groups[k].n_levels, np.sqrt(variance_of.get(frozenset(frame1.groups[k].columns), 0.0)))
          for k in stats1.order]
    return NullModel(np.concatenate(sd), fixed, float(np.sqrt(fit0.variances["Residual"])))


def reml_refits(fit: LmmFit, frame: ModelFrame, n_boot: int, rng: np.random.Generator):
    """REML refits of ``n_boot`` responses simulated from ``fit`` itself, one at a time.

    Each replicate draws new level effects of every grouping factor and new
    residuals from the fitted variances, keeps Xβ̂, and is refitted by REML from
    the fitted θ, in the statistics (no rows). Yields ``(criterion, solution,
    converged)``: the replicate's REML criterion, its ``Solution`` at the refitted
    θ (β in the frame's coordinates) and whether the search converged. A crowd design's responses are simulated
    through its rows (``simulator_for``).
    """
    simulator = simulator_for(frame)
    truth = null_model(fit, frame, frame, frame.X_cells)     # the fit itself, written on its own design
    restated = model_map(frame, frame, frame.X_cells)
    objective = ProfiledDeviance(frame.stats(), reml=True)
    start = np.where(fit.theta < BOUNDARY_THETA, 0.0, fit.theta)
    for first in range(0, n_boot, BATCH):
        u_y, yty = simulator.draw(truth.coefficients(rng, min(BATCH, n_boot - first)), truth.sigma, rng)
        for draw_u_y, draw_yty in zip(u_y, yty):
            y_sum = float(draw_u_y[:simulator.n1].sum())   # the dominant factor's levels partition the rows
            refit = objective.with_stats(restated.restate(draw_u_y, draw_yty, y_sum, frame.n_fixed))
            theta, converged, _ = optimise(refit, start, polish=False)
            yield refit, refit.solve(theta), converged


@dataclass(frozen=True)
class BootstrapJob:
    """Everything a worker needs to simulate under H0 and refit both models: no frames (rows only as the sparse
    design of a crowd-scale simulator)."""

    simulator: ResponseSimulator
    null: NullModel
    maps: tuple[ModelMap, ModelMap]       # H0, H1
    starts: tuple[np.ndarray, np.ndarray]

    def run(self, size: int, seed: np.random.SeedSequence) -> tuple[np.ndarray, int]:
        """``size`` replicates of the statistic, and how many refits failed the convergence test."""
        rng = np.random.default_rng(seed)
        objectives = [ProfiledDeviance(m.stats, reml=False) for m in self.maps]
        p1 = self.simulator.stats.n_fixed
        n1 = self.simulator.n1
        sample = np.empty(size)
        unconverged = 0
        with numerical_work():
            u_y, yty = self.simulator.draw(self.null.coefficients(rng, size), self.null.sigma, rng)
            for r in range(size):
                y_sum = float(u_y[r, :n1].sum())
                criteria = []
                for model, objective, start in zip(self.maps, objectives, self.starts):
                    refit = objective.with_stats(model.restate(u_y[r], yty[r], y_sum, p1))
                    theta, converged, _ = optimise(refit, start, polish=False)
                    unconverged += not converged
                    criteria.append(refit(theta))
                sample[r] = max(criteria[0] - criteria[1], 0.0)
        return sample, unconverged


def bootstrap_job(frame0: ModelFrame, frame1: ModelFrame, fit0: LmmFit, fit1: LmmFit,
                  x0_on_h1_cells: np.ndarray) -> BootstrapJob:
    """Simulation under H0's ML fit and refits of both models, from the fits' θ."""
    return BootstrapJob(
        simulator_for(frame1),
        null_model(fit0, frame0, frame1, x0_on_h1_cells),
        (model_map(frame0, frame1, x0_on_h1_cells), model_map(frame1, frame1, frame1.X_cells)),
        # refits start at the fitted θ, its boundary components at exactly zero
        tuple(np.where(fit.theta < BOUNDARY_THETA, 0.0, fit.theta) for fit in (fit0, fit1)),
    )


def bootstrap_lrt(frame0: ModelFrame, frame1: ModelFrame, fit0: LmmFit, fit1: LmmFit, x0_on_h1_cells: np.ndarray,
                  samples: int, seed=None, workers: int = 1) -> SimulatedReference:
    """The likelihood-ratio statistic 2(ℓ₁ − ℓ₀) of ML fits and its parametric-bootstrap null distribution.

    Replicates are drawn in chunks with seeds spawned from ``seed``, so the
    result does not depend on ``workers`` (processes sharing the chunks).
    """
    sample, unconverged = run_in_chunks(bootstrap_job(frame0, frame1, fit0, fit1, x0_on_h1_cells), samples, seed,
                                        workers)
    return SimulatedReference("bootstrap", observed_statistic(fit0.criterion, fit1.criterion), sample, unconverged)


def run_in_chunks(job, samples: int, seed, workers: int, progress=None) -> tuple[np.ndarray, int]:
    """``job.run(size, seed)`` over chunks of at most BATCH replicates, in ``workers`` processes: the statistics of
    every replicate (stacked along the first axis) and how many refits did not converge. Each chunk's seed is
    spawned from ``seed``, so the replicates do not depend on ``workers``. ``progress(fraction)`` is told how far
    it got after every chunk."""
    sizes = [min(BATCH, samples - start) for start in range(0, samples, BATCH)]
    seeds = np.random.SeedSequence(seed).spawn(len(sizes))
    parts = []
    if workers > 1 and len(sizes) > 1:
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=workers) as pool:
            for part in pool.map(job.run, sizes, seeds):
                parts.append(part)
                _report(progress, parts, samples)
    else:
        for size, chunk_seed in zip(sizes, seeds):
            parts.append(job.run(size, chunk_seed))
            _report(progress, parts, samples)
    return np.concatenate([part[0] for part in parts]), sum(part[1] for part in parts)


def _report(progress, parts: list, samples: int) -> None:
    if progress is not None:
        progress(sum(len(part[0]) for part in parts) / samples)


def sequential_p(job, statistic: float, samples: int, seed, enough: int = 10, step: int = 10) -> float:
    """p of a Monte-Carlo test of ``samples`` replicates, stopped once ``enough`` reach ``statistic``.

    For simulation studies of a bootstrap's size and power (Besag & Clifford
    1991): replicates of ``job`` (``run(size, seed)``) are drawn ``step`` at a
    time. Stopping cannot change whether p = (r + 1)/(R + 1) is below
    ``enough``/(``samples`` + 1): a stopped run's p, (r + 1)/(drawn + 1), is
    above it, and the full run's would be larger still; below it, p is that of
    all ``samples`` replicates. Under a true null most runs stop after a few
    dozen replicates.
    """
    drawn = exceed = 0
    for chunk in np.random.SeedSequence(seed).spawn(-(-samples // step)):
        sample, _ = job.run(min(step, samples - drawn), chunk)
        drawn += len(sample)
        exceed += int(np.sum(sample >= statistic - STATISTIC_TOLERANCE))
        if exceed >= enough:
            break
    return (exceed + 1) / (drawn + 1)
