"""Exact draws of the Pólya–Gamma distribution PG(b, c) for whole b, in numba.

PG(1, c) is drawn by the alternating-series method of Polson, Scott & Windle (2013,
J. Amer. Statist. Assoc. 108(504), section 4 and appendix), after Devroye: PG(1, c) = J*(1, z)/4
with z = |c|/2, and J*(1, z) is drawn by rejection from a proposal that is a truncated
inverse Gaussian IG(1/z, 1) below t = 0.64 and an exponential of rate K = π²/8 + z²/2
above it, the acceptance decided by the partial sums of J*'s density as an alternating
series (the sums bracket the density, so the decision is exact after a few terms). PG(b, c)
for a whole b is the sum of b independent PG(1, c) draws.

Every function takes a NumPy ``Generator`` (compiled by numba) so that chains run in threads with
streams of their own.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np

from ..compiled_cache import compile_cached, keyed
from .compiled_density import compile_notice

TRUNCATION = 0.64            # t: where the proposal turns from inverse Gaussian to exponential (the paper's choice)
# below this z the proposal's mixture weight is computed directly (e^{Kt} < e^{520}, erfc far from underflow), a
# third of the time of its log-scale form
DIRECT_SHARE_BELOW = 40.0
GENERATOR = numba.typeof(np.random.default_rng(0))
# compiled into the cached functions that call them (``crossed_binary_gibbs``, ``compiled_fill_pg``), not on their own
JIT = dict(nogil=True, error_model="numpy")


@numba.njit(**JIT)
def _log_normal_cdf(x):
    """log Φ(x) to full precision: erfc keeps its relative accuracy down to Φ(−37) ≈ 1e-300; below, the
    asymptotic series of Mills' ratio, whose next term is below 1e-10 there."""
    if x > -37.0:
        return math.log(0.5 * math.erfc(-x / math.sqrt(2.0)))
    inv2 = 1.0 / (x * x)
    series = 1.0 - inv2 + 3.0 * inv2 * inv2 - 15.0 * inv2 ** 3
    return -0.5 * x * x - math.log(-x) - 0.5 * math.log(2.0 * math.pi) + math.log(series)


@numba.njit(**JIT)
def _exponential_share(z):
    """The proposal's probability of the exponential part (x > t): p / (p + q) with
    p = π/(2K) e^{−Kt} and q = 2 e^{−z} P_IG(x < t) the masses of J*'s tilted leading terms, where
    P_IG(x < t | μ = 1/z, λ = 1) = Φ(√(1/t)(tz − 1)) + e^{2z} Φ(−√(1/t)(tz + 1))."""
    t = TRUNCATION
    k = math.pi * math.pi / 8.0 + 0.5 * z * z
    root = math.sqrt(1.0 / t)
    if z < DIRECT_SHARE_BELOW:
        tilt = math.exp(-z)
        below = 0.5 * math.erfc(-root * (t * z - 1.0) / math.sqrt(2.0))
        above = 0.5 * math.erfc(root * (t * z + 1.0) / math.sqrt(2.0))
        return 1.0 / (1.0 + 4.0 / math.pi * k * math.exp(k * t) * (tilt * below + above / tilt))
    base = math.log(k) + k * t   # every factor on the log scale: e^{Kt} would overflow
    q_over_p = 4.0 / math.pi * (math.exp(base - z + _log_normal_cdf(root * (t * z - 1.0)))
                                + math.exp(base + z + _log_normal_cdf(-root * (t * z + 1.0))))
    return 1.0 / (1.0 + q_over_p)


@numba.njit(**JIT)
def _truncated_inverse_gaussian(z, rng):
    """IG(μ = 1/z, λ = 1) truncated to (0, t)."""
    t = TRUNCATION
    if z < 1.0 / t:
        # μ > t: x = 1/χ²₁ truncated below t (drawn as t/(1 + E₁t)² with E₁²t < 2E₂), accepted with e^{−z²x/2}
        while True:
            e1 = rng.standard_exponential()
            e2 = rng.standard_exponential()
            while e1 * e1 > 2.0 * e2 / t:
                e1 = rng.standard_exponential()
                e2 = rng.standard_exponential()
            x = t / ((1.0 + e1 * t) ** 2)
            if rng.random() <= math.exp(-0.5 * z * z * x):
                return x
    mu = 1.0 / z
    while True:
        # Michael, Schucany & Haas (1976): an IG(μ, 1) draw, repeated until below t
        y = rng.standard_normal()
        y = mu * y * y
        x = mu + 0.5 * mu * y - 0.5 * mu * math.sqrt(4.0 * y + y * y)
        if rng.random() > mu / (mu + x):
            x = mu * mu / x
        if x < t:
            return x


@numba.njit(**JIT)
def _series_term(n, x):
    """a_n(x), the n-th term of J*(1, 0)'s density as an alternating series, in its form for x ≤ t or x > t."""
    k = (n + 0.5) * math.pi
    if x > TRUNCATION:
        return k * math.exp(-0.5 * k * k * x)
    if x <= 0.0:
        return 0.0
    return math.exp(-1.5 * (math.log(0.5 * math.pi) + math.log(x)) + math.log(k) - 2.0 * (n + 0.5) ** 2 / x)


@numba.njit(**JIT)
def draw_pg1(c, rng):
    """One draw of PG(1, c)."""
    z = 0.5 * abs(c)
    k = math.pi * math.pi / 8.0 + 0.5 * z * z
    share = _exponential_share(z)
    while True:
        if rng.random() < share:
            x = TRUNCATION + rng.standard_exponential() / k
        else:
            x = _truncated_inverse_gaussian(z, rng)
        total = _series_term(0, x)
        u = rng.random() * total
        n = 0
        while True:
            n += 1
            if n % 2 == 1:
                total -= _series_term(n, x)
                if u <= total:
                    return 0.25 * x
            else:
                total += _series_term(n, x)
                if u > total:
                    break


@numba.njit(**JIT)
def draw_pg(b, c, rng):
    """One draw of PG(b, c) for a whole b ≥ 1: the sum of b draws of PG(1, c)."""
    total = 0.0
    for _ in range(b):
        total += draw_pg1(c, rng)
    return total


def fill_pg(b, c, rng, out) -> None:
    """``out[i]`` ~ PG(b[i], c[i]), independently, drawn with the NumPy ``Generator`` ``rng`` (b whole, ≥ 1)."""
    compiled_fill_pg()(np.ascontiguousarray(b, dtype=np.int64), np.ascontiguousarray(c, dtype=float), rng, out)


@functools.cache
def compiled_fill_pg():
    """``fill_pg``'s loop compiled, or loaded from numba's cache, once per process."""
    signature = numba.void(numba.int64[::1], numba.float64[::1], GENERATOR, numba.float64[::1])
    with compile_notice():
        return compile_cached(lambda cache: numba.njit(signature, cache=cache, **JIT)(keyed(_fill_loop)),
                              "the Polya-Gamma sampler")


def _fill_loop(key):
    def fill(b, c, rng, out):
        key  # noqa: B018 -- in the closure: numba's cache tells versions of this file apart
        for i in range(len(c)):
            out[i] = draw_pg(b[i], c[i], rng)

    return fill


def pg_mean(b, c):
    """E PG(b, c) = b tanh(c/2) / (2c) (b/4 at c = 0)."""
    c = np.abs(np.asarray(c, dtype=float))
    small = c < 1e-6
    safe = np.where(small, 1.0, c)
    return np.asarray(b) * np.where(small, 0.25, np.tanh(safe / 2.0) / (2.0 * safe))


def pg_variance(b, c):
    """Var PG(b, c) = b (sinh c − c) / (4 c³ cosh²(c/2)) (b/24 at c = 0)."""
    c = np.abs(np.asarray(c, dtype=float))
    small = c < 1e-3
    safe = np.where(small, 1.0, c)
    return np.asarray(b) * np.where(small, 1.0 / 24.0, (np.sinh(safe) - safe) / (4.0 * safe**3 * np.cosh(safe / 2.0) ** 2))


def pg_laplace(b, c, s):
    """E exp(−s ω) for ω ~ PG(b, c): cosh^b(c/2) / cosh^b(√(c²/4 + s/2)), finite for s > −c²/2 − π²/4 (below 0,
    cosh of an imaginary root is a cosine)."""
    root = np.emath.sqrt(np.asarray(c, dtype=float) ** 2 / 4.0 + np.asarray(s, dtype=float) / 2.0)
    return (np.cosh(np.asarray(c, dtype=float) / 2.0) / np.cosh(root).real) ** b
