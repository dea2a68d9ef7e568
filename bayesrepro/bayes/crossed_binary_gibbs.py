"""A Gibbs sampler for crossed random intercepts of 0/1 (or binomial) scores whose cost per sweep grows with the cells.

For the logit model η = μ + Σ_k b_k with the binary fast path's priors (Bambi's:
μ ~ Normal(0, 1.5), σ_k ~ HalfNormal(2.5)), the fast path integrates the largest
factor's levels out numerically and samples every other level by NUTS, each gradient
a pass over the data: on a crowd of thousands of raters that is hours. Here the
likelihood is made Gaussian by data augmentation, and the updates of ``crossed_gibbs``
(the Gaussian crossed sampler) carry over:

* logit: Pólya–Gamma augmentation (Polson, Scott & Windle 2013, J. Amer. Statist.
  Assoc. 108(504)): given ω_c ~ PG(n_c, η_c) for a cell of n_c trials and s_c successes,
  the cell's likelihood in η_c is exp(κ_c η_c − ω_c η_c²/2), κ_c = s_c − n_c/2: a Gaussian
  observation κ_c/ω_c of η_c with weight (precision) ω_c;
* probit: Albert & Chib (1993, J. Amer. Statist. Assoc. 88(422)): every trial a latent
  N(η_c, 1) positive for a success, negative otherwise; the cell is their sum with weight n_c.

A sweep draws the augmentation, then, factor by factor, (μ, b_k) jointly (μ with b_k
integrated out: the weighted level means of the partial residual are independent
N(μ, σ_k² + 1/W_m), W_m the level's weight; then each b_km from its scalar conditional)
and σ_k by interweaving its centred and standardised steps (Yu & Meng 2011), as in
``crossed_gibbs``; there is no residual SD to draw. A sweep is O(cells × factors),
compiled with numba; chains run in threads. A kept draw is taken every ``SWEEPS_PER_DRAW``
sweeps after ``tune`` sweeps. Kept per draw: μ (``fixed``, the intercept) and every σ_k;
the level effects are not kept.
"""

from __future__ import annotations

import concurrent.futures
import functools
import math
import threading
import time

import numba
import numpy as np

from ..compiled_cache import compile_cached, keyed
from ..errors import BayesreproError
from . import polya_gamma
from .binary_model import sd_name
from .compiled_density import compile_notice
from .draws import Draws
from .polya_gamma import GENERATOR, JIT, draw_pg

LINK_CODES = {"logit": 0, "probit": 1}
# Sweeps per kept draw: measured on the 40,000-row binary crowd (20,000 items × 8,000 raters, skewed), where the
# rater SD has the slowest chain (see benchmarks/README.md, bench_crowd.py).
SWEEPS_PER_DRAW = 10
BLOCK_SECONDS = 0.25   # a chain's work between two looks at the clock (progress) and at a stop request
PROGRESS_EVERY = 2.0   # seconds between progress lines


def sample_crossed_binary(cells, priors, link: str, settings) -> Draws:
    """``settings.chains`` chains of ``settings.tune`` sweeps and ``settings.draws`` kept draws of the crossed
    intercept-only model of ``cells`` (``design.BinomialCells``) with ``priors`` (``binary_priors.BinaryPriors``) and
    ``link``; the SD of every factor (``1|g_sigma``) and the intercept (``fixed``) per draw, as a ``Draws``."""
    data = _data(cells, priors, link)
    chains, draws, tune = settings.chains, settings.draws, settings.tune
    n_factors = len(cells.group_names)
    kept = np.empty((chains, draws, n_factors + 1))
    streams = np.random.SeedSequence(settings.seed).spawn(chains)
    sweeps = _compiled_sweeps()
    done = [0] * chains
    stop = threading.Event()

    def chain(index: int) -> None:
        _run_chain(sweeps, data, kept[index], tune, np.random.default_rng(streams[index]), done, index, stop)

    _run_chains(chain, chains, settings.n_cores, done, chains * (tune + draws), settings.show_progress, stop)
    result = Draws({sd_name(name): kept[:, :, k] for k, name in enumerate(cells.group_names)})
    result.add("fixed", kept[:, :, -1:], ("fixed_effect",), {"fixed_effect": list(cells.fixed_names)})
    return result


def _data(cells, priors, link: str) -> dict:
    if cells.n_fixed != 1 or not np.all(cells.X_fixed == 1.0) or priors.intercept_index != 0:
        raise BayesreproError("the crossed Gibbs sampler of binary scores covers intercept-only formulas, "
                              f"not {cells.formula!r}; drop the fixed terms")
    small = [name for name, size in zip(cells.group_names, cells.sizes) if size < 2]
    if small:
        raise BayesreproError(f"grouping factor '{small[0]}' has a single level; drop its (1|{small[0]}) term")
    trials = np.ascontiguousarray(cells.trials, dtype=np.int64)
    successes = np.ascontiguousarray(cells.successes, dtype=float)
    logit = link == "logit"
    return dict(
        successes=successes,
        trials=trials,
        codes=np.ascontiguousarray(np.stack(cells.codes), dtype=np.int64),
        offsets=np.concatenate([[0], np.cumsum(cells.sizes)]).astype(np.int64),
        scales=np.array([priors.group_sigma[name] for name in cells.group_names], dtype=float),
        prior=np.array([priors.fixed_mu[0], priors.fixed_sigma[0]], dtype=float),
        link=LINK_CODES[link],
        # the cells' Gaussian form: logit, weights ω drawn and pseudo-totals κ fixed; probit, the reverse
        weights=np.zeros(len(trials)) if logit else trials.astype(float),
        pseudo=successes - 0.5 * trials if logit else np.zeros(len(trials)),
        start_mean=_link_of_mean(float(successes.sum() / trials.sum()), link),
    )


def _link_of_mean(p: float, link: str) -> float:
    from scipy.special import ndtri

    p = min(max(p, 1e-3), 1 - 1e-3)
    return math.log(p / (1 - p)) if link == "logit" else float(ndtri(p))


def _run_chain(sweeps, data: dict, out: np.ndarray, tune: int, rng, done: list, index: int, stop) -> None:
    """One chain from a dispersed start: SDs uniform on (0.04, 0.8) prior scales, the intercept within ±1 of the
    link of the mean score, the level effects from their prior given the SDs."""
    n_factors = len(data["scales"])
    sizes = np.diff(data["offsets"])
    state = np.empty(n_factors + 1)
    state[:n_factors] = data["scales"] * rng.uniform(0.04, 0.8, n_factors)
    state[n_factors] = data["start_mean"] + rng.uniform(-1.0, 1.0)
    effects = np.concatenate([state[k] * rng.standard_normal(size) for k, size in enumerate(sizes)])
    fitted = np.zeros(len(data["trials"]))
    for k in range(n_factors):
        fitted += effects[data["offsets"][k] + data["codes"][k]]
    weights, pseudo = data["weights"].copy(), data["pseudo"].copy()
    work = np.zeros((2, int(sizes.max())))
    arguments = (data["successes"], data["trials"], data["codes"], data["offsets"], data["scales"], data["prior"],
                 data["link"], state, effects, fitted, weights, pseudo, work)
    block = 1
    for rows, every in ((np.empty((tune, n_factors + 1)), 1), (out, SWEEPS_PER_DRAW)):
        position = 0
        while position < len(rows):
            if stop.is_set():
                return
            count = min(block, len(rows) - position)
            start = time.perf_counter()
            sweeps(*arguments, rows[position : position + count], every, rng)
            position += count
            done[index] += count
            # blocks of about BLOCK_SECONDS: the first of one sweep, then scaled by the time taken
            block = max(1, int(count * BLOCK_SECONDS / max(time.perf_counter() - start, 1e-6)))


def _run_chains(chain, chains: int, cores: int, done: list, total: int, show: bool, stop) -> None:
    """``chain(i)`` for every chain on ``cores`` threads (the compiled sweeps release the GIL); a progress line every
    ``PROGRESS_EVERY`` seconds when ``show``; a Ctrl-C stops every chain at its next block and is raised."""
    from ..progress import sampling_lines

    write = sampling_lines() if show else None
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(cores, chains))) as pool:
        futures = [pool.submit(chain, index) for index in range(chains)]
        try:
            while True:
                finished, waiting = concurrent.futures.wait(futures, timeout=PROGRESS_EVERY)
                if write is not None:
                    write(f"{sum(done)}/{total}")
                if not waiting:
                    break
        except BaseException:
            stop.set()
            raise
    for future in futures:
        future.result()


@functools.cache
def _compiled_sweeps():
    """The sweeps compiled, or loaded from numba's cache, once per process."""
    f8, i8 = numba.float64[::1], numba.int64[::1]
    signature = numba.void(f8, i8, numba.int64[:, ::1], i8, f8, f8, numba.int64, f8, f8, f8, f8, f8,
                           numba.float64[:, ::1], numba.float64[:, ::1], numba.int64, GENERATOR)
    with compile_notice():
        return compile_cached(lambda cache: numba.njit(signature, cache=cache, **JIT)(keyed(_sweeps, polya_gamma)),
                              "the crossed Gibbs sampler of binary scores")


def _sweeps(key):
    def sweeps(successes, trials, codes, offsets, scales, prior, link, state, effects, fitted, weights, pseudo,
               work, out, every, rng):
        """``every`` sweeps per row of ``out``, each row then set to the SDs and μ (``state``'s layout)."""
        key  # noqa: B018 -- in the closure: numba's cache tells versions of the sampler's files apart
        n_factors, n_cells = codes.shape[0], codes.shape[1]
        level_weight, level_total = work[0], work[1]
        prior_precision = 1.0 / (prior[1] * prior[1])
        for row in range(out.shape[0]):
            for _ in range(every):
                mu = state[n_factors]
                _augment(successes, trials, link, mu, fitted, weights, pseudo, rng)
                for k in range(n_factors):
                    first, size, code = offsets[k], offsets[k + 1] - offsets[k], codes[k]
                    for m in range(size):
                        level_weight[m] = 0.0
                        level_total[m] = 0.0
                    for c in range(n_cells):   # the level sums of the partial residual, b_k taken out of fitted
                        m = code[c]
                        fitted[c] -= effects[first + m]
                        level_weight[m] += weights[c]
                        level_total[m] += pseudo[c] - weights[c] * fitted[c]
                    sd, scale = state[k], scales[k]
                    # μ with b_k integrated out: level means T/W are N(μ, σ² + 1/W), weight W/(σ²W + 1)
                    precision, total = prior_precision, prior[0] * prior_precision
                    for m in range(size):
                        divisor = sd * sd * level_weight[m] + 1.0
                        precision += level_weight[m] / divisor
                        total += level_total[m] / divisor
                    mu = total / precision + rng.standard_normal() / math.sqrt(precision)
                    squares = 0.0
                    for m in range(size):
                        variance = 1.0 / (level_weight[m] + 1.0 / (sd * sd))
                        b = variance * (level_total[m] - level_weight[m] * mu) + math.sqrt(variance) * rng.standard_normal()
                        effects[first + m] = b
                        squares += b * b
                    sd = _centred_sd(squares, size, sd, scale, rng)
                    sd = _standardised_sd(effects[first : first + size], level_weight, level_total, mu, sd, scale,
                                          rng)
                    state[k] = sd
                    for c in range(n_cells):
                        fitted[c] += effects[first + code[c]]
                state[n_factors] = mu
            for j in range(n_factors + 1):
                out[row, j] = state[j]

    return sweeps


@numba.njit(**JIT)
def _augment(successes, trials, link, mu, fitted, weights, pseudo, rng):
    """The latent variables given η: logit, the cells' Pólya–Gamma weights; probit, their sums of truncated normals."""
    for c in range(len(trials)):
        eta = mu + fitted[c]
        if link == 0:
            weights[c] = draw_pg(trials[c], eta, rng)
        else:
            total = 0.0
            wins = int(successes[c])
            for j in range(trials[c]):
                total += _positive_normal(eta, 1.0, rng) if j < wins else -_positive_normal(-eta, 1.0, rng)
            pseudo[c] = total


@numba.njit(**JIT)
def _centred_sd(squares, size, sd, scale, rng):
    """σ_k given b_k: proposal from the likelihood (σ_k² inverse gamma), accepted by the half-normal prior's ratio."""
    proposal = math.sqrt(0.5 * squares / rng.standard_gamma(0.5 * (size - 1)))
    if math.log(rng.random()) < (sd * sd - proposal * proposal) / (2.0 * scale * scale):
        return proposal
    return sd


@numba.njit(**JIT)
def _standardised_sd(effects, level_weight, level_total, mu, sd, scale, rng):
    """σ_k given z = b_k/σ_k: the weighted partial residual less μ is σ_k z + noise, so with the HalfNormal(scale)
    prior σ_k is a normal truncated at 0; the effects move with it (b_k = σ_k z, rescaled in place)."""
    information, score = 1.0 / (scale * scale), 0.0
    for m in range(len(effects)):
        z = effects[m] / sd
        information += level_weight[m] * z * z
        score += z * (level_total[m] - level_weight[m] * mu)
    new = _positive_normal(score / information, 1.0 / math.sqrt(information), rng)
    ratio = new / sd
    for m in range(len(effects)):
        effects[m] *= ratio
    return new


@numba.njit(**JIT)
def _positive_normal(mean, sd, rng):
    """N(mean, sd²) truncated to (0, ∞): plain rejection when the cut lies below the mean, else Robert's (1995,
    Statist. Comput. 5) exponential proposal for the standard normal's tail beyond a = −mean/sd."""
    a = -mean / sd
    if a < 0.0:
        while True:
            x = rng.standard_normal()
            if x > a:
                return mean + sd * x
    rate = 0.5 * (a + math.sqrt(a * a + 4.0))
    while True:
        x = a + rng.standard_exponential() / rate
        if rng.random() <= math.exp(-0.5 * (x - rate) ** 2):
            return mean + sd * x
