"""Resampling significance tests for two systems scored on the same items.

* ``paired_bootstrap_test``: the paired bootstrap with the shift method
  (resample items with replacement; centre the bootstrap differences on the
  observed difference so that they describe the null hypothesis).
* ``permutation_test``: approximate randomization; within every item the
  two systems' rows are swapped with probability 1/2.
* ``multi_bootstrap_test``: several trained instances (seeds) per system;
  every resample draws items (shared by both systems, so the comparison stays
  paired) and, independently per system, instances with replacement.

Scores are rows per item: a 1-D array of item scores, or a 2-D array of
per-item statistics that ``metric`` turns into one number (a corpus-level
metric computed from sufficient statistics). The default metric is the mean
of the item scores.

p-values use the add-one convention p = (r + 1) / (R + 1), where r counts the
resamples at least as extreme as the observed difference among R resamples;
it is never 0 and is a valid p-value for any R. Its Monte-Carlo standard
error is the binomial one, sqrt(p (1 - p) / R).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from .. import limits
from ..errors import BayesreproError

ALTERNATIVES = ("two-sided", "greater", "less")
_CHUNK_CELLS = 2_000_000  # resamples x items handled per vectorised block
# Bounds that keep a run within minutes on one core: a paired bootstrap draws
# about 15 million resampled items a second, so 2e9 of them take about two
# minutes; 1e7 resamples resolve p-values far below any threshold in use.
MAX_RESAMPLES = limits.RESAMPLES.high
MAX_RESAMPLED_CELLS = 2_000_000_000


@dataclass(frozen=True)
class ResamplingResult:
    """Outcome of one resampling test; ``statistic`` is metric(a) − metric(b)."""

    method: str
    statistic: float
    p_value: float
    mc_standard_error: float
    n_extreme: int
    n_resamples: int
    n_items: int
    alternative: str
    seed: int | None

    def to_dict(self) -> dict:
        return asdict(self)


def paired_bootstrap_test(scores_a, scores_b, metric: Callable | None = None, *, n_resamples: int = 10_000,
                          seed: int | None = None, alternative: str = "two-sided",
                          progress: Callable[[float], None] | None = None) -> ResamplingResult:
    """Paired bootstrap test (shift method) of metric(a) = metric(b); ``progress(fraction)`` is told how far it got."""
    a, b = _paired_rows(scores_a, scores_b, metric)
    n = a.shape[0]
    _check_options(n_resamples, alternative, seed, n)
    rng = np.random.default_rng(seed)
    observed = _metric(metric, a) - _metric(metric, b)
    if metric is None:
        diff = a - b
        draws = _in_chunks(n_resamples, n, progress,
                           lambda size: rng.multinomial(n, np.full(n, 1.0 / n), size=size) @ diff / n)
    else:
        def one(_):
            idx = rng.integers(0, n, n)
            return _metric(metric, a[idx]) - _metric(metric, b[idx])

        draws = _one_by_one(n_resamples, progress, one)
    return _result("paired bootstrap (shift method)", observed, draws - observed, alternative,
                   n, seed)


def permutation_test(scores_a, scores_b, metric: Callable | None = None, *, n_resamples: int = 10_000,
                     seed: int | None = None, alternative: str = "two-sided",
                     progress: Callable[[float], None] | None = None) -> ResamplingResult:
    """Approximate randomization test: swap the systems' rows within items."""
    a, b = _paired_rows(scores_a, scores_b, metric)
    n = a.shape[0]
    _check_options(n_resamples, alternative, seed, n)
    rng = np.random.default_rng(seed)
    observed = _metric(metric, a) - _metric(metric, b)
    if metric is None:
        diff = a - b
        draws = _in_chunks(n_resamples, n, progress,
                           lambda size: (rng.integers(0, 2, size=(size, n)) * 2 - 1) @ diff / n)
    else:
        shape = (n,) + (1,) * (a.ndim - 1)

        def one(_):
            swap = rng.integers(0, 2, n).astype(bool).reshape(shape)
            return _metric(metric, np.where(swap, b, a)) - _metric(metric, np.where(swap, a, b))

        draws = _one_by_one(n_resamples, progress, one)
    return _result("approximate randomization", observed, draws, alternative, n, seed)


def multi_bootstrap_test(instances_a, instances_b, metric: Callable | None = None, *,
                         n_resamples: int = 10_000, seed: int | None = None,
                         alternative: str = "two-sided",
                         progress: Callable[[float], None] | None = None) -> ResamplingResult:
    """Multi-bootstrap (shift method) over items and instances together.

    ``instances_a`` has one row block per trained instance: shape
    (n_instances, n_items) for item scores, or (n_instances, n_items, k) for
    per-item statistics. A system's value is the mean over its instances of
    metric(instance rows).
    """
    a = _instance_block(instances_a, "instances_a", metric)
    b = _instance_block(instances_b, "instances_b", metric)
    if a.shape[1:] != b.shape[1:]:
        raise BayesreproError(
            f"instances_a has items x statistics {a.shape[1:]} but instances_b has {b.shape[1:]}; "
            "both systems must be scored on the same items"
        )
    m_a, n = a.shape[:2]
    m_b = b.shape[0]
    _check_options(n_resamples, alternative, seed, n * (m_a + m_b))
    rng = np.random.default_rng(seed)
    observed = _instance_mean(metric, a) - _instance_mean(metric, b)
    if metric is None:
        def block(size):
            items = rng.multinomial(n, np.full(n, 1.0 / n), size=size) / n      # (size, n)
            seeds_a = rng.multinomial(m_a, np.full(m_a, 1.0 / m_a), size=size) / m_a
            seeds_b = rng.multinomial(m_b, np.full(m_b, 1.0 / m_b), size=size) / m_b
            return np.einsum("rj,jr->r", seeds_a, a @ items.T) - np.einsum("rj,jr->r", seeds_b, b @ items.T)

        draws = _in_chunks(n_resamples, n, progress, block)
    else:
        def one(_):
            idx = rng.integers(0, n, n)
            ja = rng.integers(0, m_a, m_a)
            jb = rng.integers(0, m_b, m_b)
            return _instance_mean(metric, a[ja][:, idx]) - _instance_mean(metric, b[jb][:, idx])

        draws = _one_by_one(n_resamples, progress, one)
    return _result("multi-bootstrap over items and instances (shift method)", observed,
                   draws - observed, alternative, n, seed)


def _result(method, observed, null_draws, alternative, n_items, seed) -> ResamplingResult:
    # Resampled statistics equal to the observed one up to rounding count as
    # extreme (ties are frequent for discrete metrics and for swaps).
    tol = 1e-12 * max(1.0, abs(observed))
    if alternative == "two-sided":
        extreme = np.abs(null_draws) >= abs(observed) - tol
    elif alternative == "greater":
        extreme = null_draws >= observed - tol
    else:
        extreme = null_draws <= observed + tol
    n_resamples = len(null_draws)
    r = int(extreme.sum())
    p = (r + 1) / (n_resamples + 1)
    return ResamplingResult(
        method=method, statistic=float(observed), p_value=float(p),
        mc_standard_error=float(np.sqrt(p * (1 - p) / n_resamples)), n_extreme=r,
        n_resamples=n_resamples, n_items=int(n_items), alternative=alternative, seed=seed,
    )


def _in_chunks(total: int, n_items: int, progress, block) -> np.ndarray:
    """``block(size)`` returns ``size`` resampled statistics; called in chunks of bounded memory."""
    size = max(1, _CHUNK_CELLS // max(1, n_items))
    parts, done = [], 0
    while done < total:
        parts.append(block(min(size, total - done)))
        done += len(parts[-1])
        if progress is not None:
            progress(done / total)
    return np.concatenate(parts)


def _one_by_one(total: int, progress, one) -> np.ndarray:
    draws = np.empty(total)
    for r in range(total):
        draws[r] = one(r)
        if progress is not None:
            progress((r + 1) / total)
    return draws


def check_resamples(n_resamples, cells_per_resample: int, option: str = "--resamples") -> None:
    """A whole number of resamples that can finish in minutes: at most MAX_RESAMPLES and MAX_RESAMPLED_CELLS draws."""
    if isinstance(n_resamples, str):
        raise BayesreproError(limits.RESAMPLES.refusal(n_resamples))
    n_resamples = limits.RESAMPLES.check(n_resamples)
    if n_resamples * cells_per_resample > MAX_RESAMPLED_CELLS:
        most = MAX_RESAMPLED_CELLS // max(1, cells_per_resample)
        raise BayesreproError(
            f"{option} {n_resamples} would draw {n_resamples * cells_per_resample:,} values, more than the "
            f"{MAX_RESAMPLED_CELLS:,} that finish in a few minutes; use at most {most:,} resamples here"
        )


def check_seed(seed) -> None:
    if seed is not None:
        if isinstance(seed, str):
            raise BayesreproError(limits.SEED.refusal(seed))
        limits.SEED.check(seed)


def _check_options(n_resamples, alternative, seed, cells_per_resample: int) -> None:
    check_resamples(n_resamples, cells_per_resample)
    check_seed(seed)
    if alternative not in ALTERNATIVES:
        raise BayesreproError(f"--alternative must be one of {', '.join(ALTERNATIVES)}, "
                              f"not {alternative!r}")


def _as_float_array(values, name: str) -> np.ndarray:
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise BayesreproError(f"{name} must hold numbers only") from None
    if not np.all(np.isfinite(array)):
        raise BayesreproError(f"{name} has missing or infinite values; remove those items first")
    return array


def _paired_rows(scores_a, scores_b, metric):
    a = _as_float_array(scores_a, "scores_a")
    b = _as_float_array(scores_b, "scores_b")
    if a.ndim == 0 or a.shape != b.shape:
        raise BayesreproError(
            f"scores_a has shape {a.shape} and scores_b {b.shape}; give one row per item, "
            "the same items in the same order for both systems"
        )
    if a.shape[0] < 2:
        raise BayesreproError("at least 2 items are needed for a resampling test")
    if metric is None and a.ndim != 1:
        raise BayesreproError(
            "rows of per-item statistics need a metric that turns them into one number; "
            "pass metric=... or give one score per item"
        )
    return a, b


def _instance_block(values, name, metric):
    block = _as_float_array(values, name)
    if block.ndim < 2:
        raise BayesreproError(f"{name} must have shape (instances, items[, statistics]), not {block.shape}")
    if metric is None and block.ndim != 2:
        raise BayesreproError(f"{name} holds per-item statistics; pass a metric that turns them into one number")
    if block.shape[1] < 2:
        raise BayesreproError(f"{name} has {block.shape[1]} item(s); at least 2 are needed")
    return block


def _metric(metric, rows) -> float:
    if metric is None:
        return float(rows.mean())
    try:
        value = metric(rows)
    except Exception as exc:  # the user's function: report it as one line
        raise BayesreproError(f"the metric raised {type(exc).__name__}: {exc}") from None
    value = np.asarray(value, dtype=float)
    if value.ndim != 0 or not np.isfinite(value):
        raise BayesreproError(f"the metric must return one finite number, it returned {value!r}")
    return float(value)


def _instance_mean(metric, block) -> float:
    return float(np.mean([_metric(metric, rows) for rows in block]))
