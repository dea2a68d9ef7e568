"""The binary fast path's log density and gradient, compiled: everything numba runs per leapfrog step.

All of it lives in this one file on purpose: numba's on-disk cache is invalidated
when a function's own file changes, not when a function it calls in another file
does, so kernels that call each other share a file.

Part 1, the dominant factor's effects integrated out to rounding error.

For one level of the dominant factor (an item) with effect u ~ N(0, σ²), scored in the
configurations j of its profile (see ``binary_layout``) with linear predictors η_j,
trials n_j and successes y_j, the integral is

    I = ∫ exp(h(u)) du,   h(u) = Σ_j [y_j log μ(η_j + u) + (n_j − y_j) log(1 − μ(η_j + u))] − u²/(2σ²) − log(σ√(2π)).

h is strictly concave for both links (log μ and log(1 − μ) are concave), and the
integrals of a profile are taken with the trapezoid rule on one uniform grid, the
link's transcendental functions computed once per grid point and configuration and
reused by every item of the profile.

Logit: h = Σ_j y_j η_j + s u − A(u) − ..., A(u) = Σ_j n_j log(1 + exp(η_j + u)), so the
integral depends on the item's successes only through their total s (the Σ y η part
adds up per configuration, outside the integral): items of a profile share one
integral per distinct s.
Probit: μ = Φ, and h depends on the whole pattern (y_j): items of a profile share
one integral per distinct pattern. log Φ and the Mills ratio φ/Φ are evaluated
stably in both tails (``probit_terms``).

For integrands analytic in a strip and decaying at both ends the trapezoid rule
converges geometrically in the step (the error of a Gaussian of SD τ at step d is
about exp(−2π²τ²/d²)); the step is SPACING times the smallest SD any item can have,
1 / sqrt(c Σ n_j + 1/σ²), c the largest information of one trial (1/4 for logit, 1 for
probit), and the grid runs from where the smallest item's integrand has fallen by
exp(−DROP) below its peak to where the largest's has. Every other item lies between
them: the integrands are ordered by likelihood ratio in s (logit) and in the pattern,
element by element (probit: the lowest and highest patterns are the element-wise
minimum and maximum of the profile's patterns). Measured against adaptive quadrature
to 1e-13, the error of log I stays below 1e-9 (1e-12 typically) for σ from 0.05 to 4 and
1 to 60 trials (tests/test_binary_density.py).

The gradient is that of the exact integral, by differentiating under it, with E the
expectation under the normalised integrand, taken on the same grid:
    ∂ log I / ∂η_j = E[y_j (d/dt) log μ − (n_j − y_j) (d/dt) log(1/(1 − μ))],   ∂ log I / ∂ log σ = E[u²]/σ² − 1.

Part 2, the density of everything sampled (see ``binary_model`` for the coordinates):
fixed coefficients, log σ of every factor, and z of every sampled level, with the
packed arrays read by position (``compiled_density.pack``'s layout).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .compiled_density import float_array, int_array

DROP = 36.0     # the grid ends where the outermost integrands have fallen by e^-36 below their peaks
SPACING = 0.8   # grid step, in units of the smallest possible SD of an integrand
# A grid longer than this is refused: the log density is returned as −∞, so NUTS rejects the point.
# The grid's length grows with σ√(trials per item); with 60 trials per item the cut lies at
# σ = 244 (logit), with 1,000 at σ = 60, where the HalfNormal(2.5) prior's log density is below −280.
MAX_GRID = 20_000
LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)
SQRT_HALF = math.sqrt(0.5)
# Beyond this, erfc underflows; Φ(−a) is taken from its asymptotic series, whose first
# omitted term (10395 / a¹²) is below 1e-15 there.
TAIL_SERIES = 37.0
LOGIT, PROBIT = 0, 1
LINK_CODES = {"logit": LOGIT, "probit": PROBIT}


@numba.njit(nogil=True, cache=True, error_model="numpy", inline="always")
def softplus_and_sigmoid(t):
    """log(1 + e^t) and 1 / (1 + e^-t), without overflow."""
    if t >= 0.0:
        e = math.exp(-t)
        return t + math.log1p(e), 1.0 / (1.0 + e)
    e = math.exp(t)
    return math.log1p(e), e / (1.0 + e)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def probit_terms(t):
    """log Φ(t), log Φ(−t) and the Mills ratios φ(t)/Φ(t), φ(t)/Φ(−t), accurate in both tails."""
    a = abs(t)
    log_density = -0.5 * a * a - LOG_SQRT_2PI
    if a < TAIL_SERIES:
        tail = math.log(0.5 * math.erfc(a * SQRT_HALF))              # log Φ(−a)
        tail_ratio = math.exp(log_density - tail)
    else:  # Φ(−a) = φ(a)/a · (1 − 1/a² + 3/a⁴ − 15/a⁶ + 105/a⁸ − 945/a¹⁰ + …)
        z = 1.0 / (a * a)
        series = 1.0 - z * (1.0 - 3.0 * z * (1.0 - 5.0 * z * (1.0 - 7.0 * z * (1.0 - 9.0 * z))))
        tail = log_density - math.log(a) + math.log(series)
        tail_ratio = a / series
    body = math.log1p(-math.exp(tail))                                # log Φ(a)
    body_ratio = math.exp(log_density - body)
    if t >= 0.0:
        return body, tail, body_ratio, tail_ratio
    return tail, body, tail_ratio, body_ratio


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _log_integrand(link, s, y, u, inv_var, eta, config, trials, start, stop):
    """h(u) without its constant, h'(u) and −h''(u) of one item of the profile [start, stop).

    Logit: the item's total successes ``s`` (and h without Σ y η); probit: its successes ``y``
    per entry (indexed as the profile arrays).
    """
    h = -0.5 * u * u * inv_var
    slope = -u * inv_var
    curvature = inv_var
    if link == LOGIT:
        h += s * u
        slope += s
        product = 1.0  # Π (1 + e^−|t|) over the single trials: one log for all of them (see ``softplus_products``)
        for j in range(start, stop):
            t = eta[config[j]] + u
            n = trials[j]
            if t >= 0.0:
                e = math.exp(-t)
                mu = 1.0 / (1.0 + e)
                h -= n * t
            else:
                e = math.exp(t)
                mu = e / (1.0 + e)
            if n == 1.0:
                if product > 1e300:
                    h -= math.log(product)
                    product = 1.0
                product *= 1.0 + e
            else:
                h -= n * math.log1p(e)
            slope -= n * mu
            curvature += n * mu * (1.0 - mu)
        return h - math.log(product), slope, curvature
    for j in range(start, stop):
        t = eta[config[j]] + u
        log_mu, log_not_mu, ratio, not_ratio = probit_terms(t)
        hits, misses = y[j], trials[j] - y[j]
        h += hits * log_mu + misses * log_not_mu
        slope += hits * ratio - misses * not_ratio
        curvature += hits * ratio * (t + ratio) + misses * not_ratio * (not_ratio - t)
    return h, slope, curvature


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _mode(link, s, y, total_trials, inv_var, eta, config, trials, start, stop):
    """The peak of h and its value: Newton's method inside a bracket that always holds the root of h'.

    Logit: h'(u) > 0 below (s − Σ n) σ², < 0 above s σ² (A' lies in [0, Σ n]). Any link: as
    h'' ≤ −1/σ², the root lies between 0 and σ² h'(0).
    """
    if link == LOGIT:
        low = (s - total_trials) / inv_var
        high = s / inv_var
    else:
        slope = _log_integrand(link, s, y, 0.0, inv_var, eta, config, trials, start, stop)[1]
        low, high = min(0.0, slope / inv_var), max(0.0, slope / inv_var)
    u = 0.0  # inside the bracket (at one of its ends where s is 0 or Σ n, or under probit), and where h' is known
    h = 0.0
    for _ in range(200):
        h, slope, curvature = _log_integrand(link, s, y, u, inv_var, eta, config, trials, start, stop)
        if slope > 0.0:
            low = u
        else:
            high = u
        proposal = u + slope / curvature
        if not low < proposal < high:
            proposal = 0.5 * (low + high)
        if abs(proposal - u) <= 1e-9 * (1.0 + abs(u)):
            return proposal, h
        u = proposal
    return u, h


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _grid_end(link, s, y, peak, peak_value, side, sigma, inv_var, eta, config, trials, start, stop, tolerance):
    """Where h has fallen by DROP below its peak on ``side`` (±1), or a little beyond.

    h'' ≤ −1/σ², so the point σ√(2 DROP) from the peak is already beyond; Newton's
    method from there on the concave h approaches the crossing from outside and
    never passes it, so stopping early only widens the grid.
    """
    u = peak + side * sigma * math.sqrt(2.0 * DROP)
    target = peak_value - DROP
    for _ in range(50):
        h, slope, _ = _log_integrand(link, s, y, u, inv_var, eta, config, trials, start, stop)
        if h >= target or slope == 0.0:
            break
        step = (target - h) / slope
        u += step
        if abs(step) < tolerance:
            break
    return u


@numba.njit(nogil=True, cache=True, error_model="numpy")
def profile_grid(link, p, log_sigma, eta, profile_start, profile_config, profile_trials, pair_start, pair_successes,
                 profile_low, profile_high):
    """The integration grid of profile ``p``: first point, step and number of points.

    Its ends are those of the lowest and the highest item of the profile: the smallest and
    largest total successes (logit), the element-wise smallest and largest patterns
    ``profile_low`` and ``profile_high`` (probit).
    """
    sigma = math.exp(log_sigma)
    inv_var = 1.0 / (sigma * sigma)
    start, stop = profile_start[p], profile_start[p + 1]
    total_trials = 0.0
    for j in range(start, stop):
        total_trials += profile_trials[j]
    information = 0.25 if link == LOGIT else 1.0  # the largest information of one trial about η
    step = SPACING / math.sqrt(information * total_trials + inv_var)
    lowest = highest = 0.0
    if link == LOGIT:
        lowest, highest = pair_successes[pair_start[p]], pair_successes[pair_start[p + 1] - 1]
    peak, value = _mode(link, lowest, profile_low, total_trials, inv_var, eta, profile_config, profile_trials,
                        start, stop)
    left = _grid_end(link, lowest, profile_low, peak, value, -1.0, sigma, inv_var, eta, profile_config,
                     profile_trials, start, stop, step)
    peak, value = _mode(link, highest, profile_high, total_trials, inv_var, eta, profile_config, profile_trials,
                        start, stop)
    right = _grid_end(link, highest, profile_high, peak, value, 1.0, sigma, inv_var, eta, profile_config,
                      profile_trials, start, stop, step)
    length = (right - left) / step
    if not (math.isfinite(length) and length < MAX_GRID):
        return left, step, MAX_GRID + 1
    return left, step, int(math.ceil(length)) + 1


@numba.njit(nogil=True, cache=True, error_model="numpy")
def dominant_marginal(eta, log_sigma, profile_start, profile_config, profile_trials, pair_start, pair_successes,
                      pair_count, gradient_eta):
    """Logit: Σ over (profile, s) pairs of count × log I_s; adds ∂/∂η to ``gradient_eta``, returns (value, ∂/∂ log σ).

    Returns (−∞, 0) where the grid cannot be laid (σ or η not finite, or a grid longer than MAX_GRID).
    The grid's points are evenly spaced, so exp(η_j + u) is a power series along it: taken once per block of
    points and multiplied by the powers of the step within it, and A(u) collects Π_j (1 + e^(η_j + u)) as
    one product per point (``softplus_products``). Each s sums its integrand only where it lies within
    e^-DROP of its peak (it falls off faster than geometrically beyond), so a pair costs the width of its own
    integrand, not the grid's.
    """
    sigma = math.exp(log_sigma)
    inv_var = 1.0 / (sigma * sigma)
    total = 0.0
    d_log_sigma = 0.0
    unused = np.empty(0)
    for p in range(len(profile_start) - 1):
        start, stop = profile_start[p], profile_start[p + 1]
        left, step, n = profile_grid(LOGIT, p, log_sigma, eta, profile_start, profile_config, profile_trials,
                                     pair_start, pair_successes, unused, unused)
        if n < 1 or n > MAX_GRID:
            return -np.inf, 0.0
        u = np.empty(n)
        for q in range(n):
            u[q] = left + q * step
        penalty, mu = softplus_products(eta, u, step, inv_var, profile_config, profile_trials, start, stop)
        weight = np.zeros(n)        # Σ_s count_s × normalised integrand of s at each point
        w = np.empty(n)
        top = 0                     # the peak's point of the previous s: it moves right as s grows
        used_low, used_high = n, 0
        for k in range(pair_start[p], pair_start[p + 1]):
            s = pair_successes[k]
            # s u − A(u) − u²/(2σ²) is concave: climb to its peak from the previous one
            while top + 1 < n and s * u[top + 1] - penalty[top + 1] >= s * u[top] - penalty[top]:
                top += 1
            while top > 0 and s * u[top - 1] - penalty[top - 1] > s * u[top] - penalty[top]:
                top -= 1
            peak = s * u[top] - penalty[top]
            low = top
            while low > 0 and s * u[low - 1] - penalty[low - 1] - peak > -DROP:
                low -= 1
            high = top
            while high + 1 < n and s * u[high + 1] - penalty[high + 1] - peak > -DROP:
                high += 1
            mass = 0.0
            second = 0.0
            for q in range(low, high + 1):
                value = math.exp(s * u[q] - penalty[q] - peak)
                w[q] = value
                mass += value
                second += value * u[q] * u[q]
            count = pair_count[k]
            total += count * (math.log(step * mass) + peak - log_sigma - LOG_SQRT_2PI)
            d_log_sigma += count * (second / mass * inv_var - 1.0)
            scale = count / mass
            for q in range(low, high + 1):
                weight[q] += scale * w[q]
            used_low, used_high = min(used_low, low), max(used_high, high)
        for j in range(start, stop):
            expected = 0.0
            for q in range(used_low, used_high + 1):
                expected += weight[q] * mu[j - start, q]
            gradient_eta[profile_config[j]] -= profile_trials[j] * expected
    return total, d_log_sigma


POWER_BLOCK = 16     # e^−|η_j + u| is taken afresh every this many grid points, multiplied by e^(−k·step) between
PRODUCT_FLUSH = 512  # factors 1 + e^−|t| ≤ 2 multiplied into one product before its log is taken (2^512 < 1e155)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def softplus_products(eta, u, step, inv_var, config, trials, start, stop):
    """On the evenly spaced grid ``u``: A(u) + u²/(2σ²), A(u) = Σ_j n_j log(1 + e^(η_j + u)), and μ(η_j + u)
    (entry j − start, point).

    With t = η_j + u, log(1 + e^t) = log(1 + e^−|t|) + max(t, 0): e^−|t| ≤ 1 comes from e^(±t) at the start of
    each block of POWER_BLOCK points times the powers of e^(∓step) (a few ulps of relative error, never an
    overflow), and the logs of the points' factors 1 + e^−|t| are taken once per point as the log of their
    product (an entry of n_j ≠ 1 trials adds its own log1p). Each block is anchored at its largest e^−|t|, so a
    power can only underflow where e^−|t| itself does.
    """
    n = len(u)
    width = stop - start
    powers = np.empty(POWER_BLOCK)
    for k in range(POWER_BLOCK):
        powers[k] = math.exp(-k * step)
    penalty = np.empty(n)
    product = np.ones(n)
    for q in range(n):
        penalty[q] = 0.5 * u[q] * u[q] * inv_var
    mu = np.empty((width, n))
    unit = 0
    for j in range(start, stop):
        e_j = eta[config[j]]
        n_j = trials[j]
        row = mu[j - start]
        # the first point where t ≥ 0: points before rise towards it, points after fall away from it
        cross = int(min(max(math.ceil((-e_j - u[0]) / step), 0.0), float(n)))
        for block in range(0, cross, POWER_BLOCK):
            last = min(block + POWER_BLOCK, cross)
            # rising: e^t = e^(t at the block's last point) · e^(−k·step), k points before it
            top = math.exp(e_j + u[last - 1])
            for q in range(block, last):
                e = top * powers[last - 1 - q]
                one = 1.0 + e
                row[q] = e / one
                if n_j == 1.0:
                    product[q] *= one
                else:
                    penalty[q] += n_j * math.log1p(e)
        for block in range(cross, n, POWER_BLOCK):
            last = min(block + POWER_BLOCK, n)
            # falling: e^−t = e^(−t at the block's first point) · e^(−k·step), k points after it
            first = math.exp(-(e_j + u[block]))
            for q in range(block, last):
                e = first * powers[q - block]
                one = 1.0 + e
                row[q] = 1.0 / one
                penalty[q] += n_j * (e_j + u[q])
                if n_j == 1.0:
                    product[q] *= one
                else:
                    penalty[q] += n_j * math.log1p(e)
        if n_j == 1.0:
            unit += 1
            if unit == PRODUCT_FLUSH:
                for q in range(n):
                    penalty[q] += math.log(product[q])
                    product[q] = 1.0
                unit = 0
    for q in range(n):
        penalty[q] += math.log(product[q])
    return penalty, mu


@numba.njit(nogil=True, cache=True, error_model="numpy")
def dominant_marginal_probit(eta, log_sigma, profile_start, profile_config, profile_trials, profile_low, profile_high,
                             pair_start, pattern_start, pattern_entry, pattern_successes, pair_count, gradient_eta):
    """Probit: Σ over (profile, pattern) pairs of count × log I; adds ∂/∂η to ``gradient_eta``, returns (value, ∂/∂ log σ).

    A pattern lists the entries of its profile with successes (``pattern_entry``, indexing the
    profile arrays) and their successes; every other entry of the profile has none.
    Returns (−∞, 0) where the grid cannot be laid.
    """
    sigma = math.exp(log_sigma)
    inv_var = 1.0 / (sigma * sigma)
    total = 0.0
    d_log_sigma = 0.0
    unused = np.empty(0)
    for p in range(len(profile_start) - 1):
        start, stop = profile_start[p], profile_start[p + 1]
        left, step, n = profile_grid(PROBIT, p, log_sigma, eta, profile_start, profile_config, profile_trials,
                                     pair_start, unused, profile_low, profile_high)
        if n < 1 or n > MAX_GRID:
            return -np.inf, 0.0
        width = stop - start
        u = np.empty(n)
        base = np.empty(n)                 # Σ_j n_j log Φ(−t) − u²/(2σ²): the item with no successes
        odds = np.empty((width, n))        # log Φ(t) − log Φ(−t): what one success adds (entry, point)
        odds_slope = np.empty((width, n))  # its derivative in t
        miss_slope = np.empty((width, n))  # φ(t)/Φ(−t): −d/dt log Φ(−t)
        for q in range(n):
            uq = left + q * step
            u[q] = uq
            b = -0.5 * uq * uq * inv_var
            for j in range(start, stop):
                log_mu, log_not_mu, ratio, not_ratio = probit_terms(eta[profile_config[j]] + uq)
                b += profile_trials[j] * log_not_mu
                odds[j - start, q] = log_mu - log_not_mu
                odds_slope[j - start, q] = ratio + not_ratio
                miss_slope[j - start, q] = not_ratio
            base[q] = b
        weight = np.zeros(n)        # Σ_patterns count × normalised integrand at each point
        w = np.empty(n)
        for k in range(pair_start[p], pair_start[p + 1]):
            first, last = pattern_start[k], pattern_start[k + 1]
            w[:] = base
            for e in range(first, last):
                column = pattern_entry[e] - start
                for q in range(n):
                    w[q] += pattern_successes[e] * odds[column, q]
            peak = w.max()
            mass = 0.0
            second = 0.0
            for q in range(n):
                w[q] = math.exp(w[q] - peak)
                mass += w[q]
                second += w[q] * u[q] * u[q]
            count = pair_count[k]
            total += count * (math.log(step * mass) + peak - log_sigma - LOG_SQRT_2PI)
            d_log_sigma += count * (second / mass * inv_var - 1.0)
            for q in range(n):
                w[q] /= mass
                weight[q] += count * w[q]
            for e in range(first, last):
                column = pattern_entry[e] - start
                expected = 0.0
                for q in range(n):
                    expected += w[q] * odds_slope[column, q]
                gradient_eta[profile_config[pattern_entry[e]]] += count * pattern_successes[e] * expected
        for j in range(start, stop):
            expected = 0.0
            for q in range(n):
                expected += weight[q] * miss_slope[j - start, q]
            gradient_eta[profile_config[j]] -= profile_trials[j] * expected
    return total, d_log_sigma

# positions of the model's arrays in the packed float and integer arrays (``binary_model`` packs them)
# (the probit link's patterns are empty under logit)
F_FIXED_MU, F_FIXED_SIGMA, F_X, F_CONFIG_SUCCESSES, F_SD_SCALE, F_ESTIMATE, F_INFORMATION, F_PROFILE_TRIALS, \
    F_PAIR_SUCCESSES, F_PAIR_COUNT, F_X_MEANS, F_PROFILE_LOW, F_PROFILE_HIGH, F_PATTERN_SUCCESSES, F_COUPLING = range(15)
I_SIZES, I_CONFIG_FIXED, I_CONFIG_CODES, I_SAMPLED, I_LEVELS, I_PROFILE_START, I_PROFILE_CONFIG, I_PAIR_START, \
    I_PATTERN_START, I_PATTERN_ENTRY = range(10)
# I_SIZES holds: fixed coefficients, grouping factors, the dominant one, the intercept's column (−1: none), the link


@numba.njit(nogil=True, cache=True, error_model="numpy")
def conditional(log_sigma, information, estimate):
    """t_l(σ) and m_l(σ) of every level of one factor (their arrays)."""
    inverse_variance = math.exp(-2.0 * log_sigma)
    sd = 1.0 / np.sqrt(inverse_variance + information)
    return sd, sd * sd * information * estimate


@numba.njit(nogil=True, cache=True, error_model="numpy")
def data_estimates(x, p, estimate, coupling):
    """β_l(β) of every sampled level: the data's estimate of its effect given the fixed coefficients x[:p],
    ``estimate`` − ``coupling`` (levels × p, row-major) · x[:p]."""
    out = estimate.copy()
    for i in range(len(estimate)):
        for j in range(p):
            out[i] -= coupling[i * p + j] * x[j]
    return out


@numba.njit(nogil=True, cache=True, error_model="numpy")
def level_effects(x, p, n_groups, sampled, levels, estimate, information):
    """b of every sampled level from the unconstrained vector, given the data's estimates β_l(β)."""
    b = np.empty(len(estimate))
    offset = 0
    for k in range(len(sampled)):
        log_sigma = x[p + sampled[k]]
        level = slice(offset, offset + levels[k])
        sd, mean = conditional(log_sigma, information[level], estimate[level])
        b[level] = mean + sd * x[p + n_groups + offset : p + n_groups + offset + levels[k]]
        offset += levels[k]
    return b


@numba.njit(nogil=True, cache=True, error_model="numpy")
def binary_logp(x, floats, ints):
    sizes = int_array(ints, I_SIZES)
    p, n_groups, dominant = sizes[0], sizes[1], sizes[2]
    fixed_mu = float_array(floats, ints, F_FIXED_MU)
    fixed_sigma = float_array(floats, ints, F_FIXED_SIGMA)
    X = float_array(floats, ints, F_X)
    sd_scale = float_array(floats, ints, F_SD_SCALE)
    coupling = float_array(floats, ints, F_COUPLING)
    estimate = data_estimates(x, p, float_array(floats, ints, F_ESTIMATE), coupling)
    information = float_array(floats, ints, F_INFORMATION)
    config_successes = float_array(floats, ints, F_CONFIG_SUCCESSES)
    config_fixed = int_array(ints, I_CONFIG_FIXED)
    codes = int_array(ints, I_CONFIG_CODES)
    sampled = int_array(ints, I_SAMPLED)
    levels = int_array(ints, I_LEVELS)
    n_configs = len(config_fixed)
    gradient = np.zeros(len(x))
    value = 0.0
    for j in range(p):
        z = (x[j] - fixed_mu[j]) / fixed_sigma[j]
        value -= 0.5 * z * z
        gradient[j] -= z / fixed_sigma[j]
    for g in range(n_groups):
        ratio = math.exp(x[p + g]) / sd_scale[g]
        value += x[p + g] - 0.5 * ratio * ratio
        gradient[p + g] += 1.0 - ratio * ratio
    b = level_effects(x, p, n_groups, sampled, levels, estimate, information)
    gradient_b = np.empty(len(b))  # ∂/∂b of the prior N(0, σ²) and, below, of the likelihood
    offset = 0
    for k in range(len(sampled)):
        g = p + sampled[k]
        inverse_variance = math.exp(-2.0 * x[g])
        for i in range(offset, offset + levels[k]):
            sd = 1.0 / math.sqrt(inverse_variance + information[i])
            value += -0.5 * b[i] * b[i] * inverse_variance - x[g] + math.log(sd)  # prior and Jacobian t_l(σ)
            gradient[g] += b[i] * b[i] * inverse_variance - 1.0 + sd * sd * inverse_variance
            gradient_b[i] = -b[i] * inverse_variance
        offset += levels[k]
    eta = np.empty(n_configs)
    for c in range(n_configs):
        e = 0.0
        row = config_fixed[c] * p
        for j in range(p):
            e += X[row + j] * x[j]
        offset = 0
        for k in range(len(sampled)):
            e += b[offset + codes[k * n_configs + c]]
            offset += levels[k]
        eta[c] = e
    if sizes[4] == LOGIT:  # Σ y η lies outside the integrals
        for c in range(n_configs):
            value += config_successes[c] * eta[c]
        gradient_eta = config_successes.copy()
        marginal, d_log_sigma = dominant_marginal(
            eta, x[p + dominant], int_array(ints, I_PROFILE_START), int_array(ints, I_PROFILE_CONFIG),
            float_array(floats, ints, F_PROFILE_TRIALS), int_array(ints, I_PAIR_START),
            float_array(floats, ints, F_PAIR_SUCCESSES), float_array(floats, ints, F_PAIR_COUNT), gradient_eta,
        )
    else:
        gradient_eta = np.zeros(n_configs)
        marginal, d_log_sigma = dominant_marginal_probit(
            eta, x[p + dominant], int_array(ints, I_PROFILE_START), int_array(ints, I_PROFILE_CONFIG),
            float_array(floats, ints, F_PROFILE_TRIALS), float_array(floats, ints, F_PROFILE_LOW),
            float_array(floats, ints, F_PROFILE_HIGH), int_array(ints, I_PAIR_START),
            int_array(ints, I_PATTERN_START), int_array(ints, I_PATTERN_ENTRY),
            float_array(floats, ints, F_PATTERN_SUCCESSES), float_array(floats, ints, F_PAIR_COUNT), gradient_eta,
        )
    value += marginal
    gradient[p + dominant] += d_log_sigma
    for c in range(n_configs):
        row = config_fixed[c] * p
        for j in range(p):
            gradient[j] += X[row + j] * gradient_eta[c]
        offset = 0
        for k in range(len(sampled)):
            gradient_b[offset + codes[k * n_configs + c]] += gradient_eta[c]
            offset += levels[k]
    offset = 0
    for k in range(len(sampled)):  # chain rule through b = m(σ, β) + t(σ) z
        g = p + sampled[k]
        inverse_variance = math.exp(-2.0 * x[g])
        for i in range(offset, offset + levels[k]):
            sd = 1.0 / math.sqrt(inverse_variance + information[i])
            d_sd = sd * sd * sd * inverse_variance                        # dt/d log σ = t³/σ²
            d_mean = 2.0 * sd * d_sd * information[i] * estimate[i]       # dm/d log σ = 2 t (dt/d log σ) I β_l
            gradient[p + n_groups + i] += gradient_b[i] * sd
            gradient[g] += gradient_b[i] * (d_mean + d_sd * x[p + n_groups + i])
            shrink = sd * sd * information[i]                             # dm/dβ_l
            for j in range(p):
                gradient[j] -= gradient_b[i] * shrink * coupling[i * p + j]
        offset += levels[k]
    return value, gradient


@numba.njit(nogil=True, cache=True, error_model="numpy")
def binary_expand(x, floats, ints, out):
    """σ of every factor, the uncentred fixed coefficients, the sampled level effects."""
    sizes = int_array(ints, I_SIZES)
    p, n_groups = sizes[0], sizes[1]
    x_means = float_array(floats, ints, F_X_MEANS)
    for g in range(n_groups):
        out[g] = math.exp(x[p + g])
    shift = 0.0
    for j in range(p):
        out[n_groups + j] = x[j]
        shift += x_means[j] * x[j]
    if sizes[3] >= 0:  # the intercept of the uncentred design
        out[n_groups + sizes[3]] -= shift
    estimate = data_estimates(x, p, float_array(floats, ints, F_ESTIMATE), float_array(floats, ints, F_COUPLING))
    b = level_effects(x, p, n_groups, int_array(ints, I_SAMPLED), int_array(ints, I_LEVELS), estimate,
                      float_array(floats, ints, F_INFORMATION))
    for i in range(len(b)):
        out[n_groups + p + i] = b[i]


# Part 3, finite-population variance of the dominant factor: its realised effects drawn from their
# exact conditional given a posterior draw, by rejection sampling (see ``binary_effects``).

WINDOW = 40.0  # effects are drawn where their log density is within 40 of its peak (the rest has mass < e^-38)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _draw_from_envelope(link, s, y, peak, u, h, slope, first, last, inv_var, eta, config, trials, start, stop, mass):
    """One draw from exp(h) on [u[first], u[last]], h given on the grid relative to its ``peak``
    (the item's successes: ``s`` for logit, ``y`` for probit, as in ``_log_integrand``).

    The envelope is the tangent lines at the grid points (above h, which is concave), each
    interval split where its two tangents cross; the chord between grid points lies below h
    and accepts most proposals without evaluating h itself.
    """
    intervals = last - first
    while True:
        target = np.random.random() * mass[intervals - 1]
        k = np.searchsorted(mass[:intervals], target)
        q = first + k
        cross = _tangent_crossing(u, h, slope, q)
        within = target - (mass[k - 1] if k > 0 else 0.0)
        if within < _piece_mass(h[q], slope[q], u[q], u[q], cross):
            anchor, low, high = q, u[q], cross
        else:
            anchor, low, high = q + 1, cross, u[q + 1]
        b = slope[anchor]
        width = high - low
        v = np.random.random()
        x = low + v * width if abs(b * width) < 1e-12 else low + math.log1p(v * math.expm1(b * width)) / b
        envelope = h[anchor] + b * (x - u[anchor])
        chord = h[q] + (h[q + 1] - h[q]) * (x - u[q]) / (u[q + 1] - u[q])
        accept = math.log(np.random.random())
        if accept <= chord - envelope:
            return x
        exact = _log_integrand(link, s, y, x, inv_var, eta, config, trials, start, stop)[0] - peak
        if accept <= exact - envelope:
            return x


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _tangent_crossing(u, h, slope, q):
    """Where the tangents at u[q] and u[q + 1] cross (inside the interval; its middle if they are parallel)."""
    difference = slope[q] - slope[q + 1]
    if difference <= 1e-300:
        return 0.5 * (u[q] + u[q + 1])
    cross = (h[q + 1] - h[q] + slope[q] * u[q] - slope[q + 1] * u[q + 1]) / difference
    return min(max(cross, u[q]), u[q + 1])


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _piece_mass(a, b, anchor, low, high):
    """∫ exp(a + b (x − anchor)) dx over [low, high]."""
    width = high - low
    start = math.exp(a + b * (low - anchor))
    if abs(b * width) < 1e-12:
        return start * width
    return start * math.expm1(b * width) / b


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _profile_tables(link, p, log_sigma, row, profile_start, profile_config, profile_trials, pair_start,
                    pair_successes, profile_low, profile_high):
    """Profile p's grid u and, on it, h and its slope for an item with no successes; under probit also what one
    success in each entry adds to them. n > MAX_GRID: not a point of positive posterior density."""
    start, stop = profile_start[p], profile_start[p + 1]
    inv_var = math.exp(-2.0 * log_sigma)
    left, step, n = profile_grid(link, p, log_sigma, row, profile_start, profile_config, profile_trials,
                                 pair_start, pair_successes, profile_low, profile_high)
    if n > MAX_GRID:
        n = MAX_GRID + 1
        empty = np.empty(0)
        return empty, empty, empty, np.empty((0, 0)), np.empty((0, 0)), n
    u = np.empty(n)
    base = np.empty(n)         # h of an item with no successes, and its slope
    base_slope = np.empty(n)
    odds = np.empty((stop - start, n))        # probit: what one success adds to h, and to its slope
    odds_slope = np.empty((stop - start, n))
    for q in range(n):
        uq = left + q * step
        u[q] = uq
        a = -0.5 * uq * uq * inv_var
        f = -uq * inv_var
        for j in range(start, stop):
            t = row[profile_config[j]] + uq
            if link == LOGIT:
                sp, mu = softplus_and_sigmoid(t)
                a -= profile_trials[j] * sp
                f -= profile_trials[j] * mu
            else:
                log_mu, log_not_mu, ratio, not_ratio = probit_terms(t)
                a += profile_trials[j] * log_not_mu
                f -= profile_trials[j] * not_ratio
                odds[j - start, q] = log_mu - log_not_mu
                odds_slope[j - start, q] = ratio + not_ratio
        base[q] = a
        base_slope[q] = f
    return u, base, base_slope, odds, odds_slope, n


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _pair_envelope(link, k, start, u, base, base_slope, odds, odds_slope, y, pair_successes, pattern_start,
                   pattern_entry, pattern_successes):
    """The envelope of pair k's conditional (h relative to its peak, its slope, the cumulative mass of the
    envelope's pieces, the window first..last): what ``_draw_from_envelope`` reads. Under probit it writes the
    pair's pattern into ``y`` (the caller clears it)."""
    n = len(u)
    h = np.empty(n)
    slope = np.empty(n)
    mass = np.empty(n)
    s = pair_successes[k]
    if link == LOGIT:
        for q in range(n):
            h[q] = base[q] + s * u[q]
            slope[q] = base_slope[q] + s
    else:
        h[:] = base
        slope[:] = base_slope
        for e in range(pattern_start[k], pattern_start[k + 1]):
            column = pattern_entry[e] - start
            y[pattern_entry[e]] = pattern_successes[e]
            for q in range(n):
                h[q] += pattern_successes[e] * odds[column, q]
                slope[q] += pattern_successes[e] * odds_slope[column, q]
    peak = h.max()
    first, last = 0, n - 1
    while h[first] < peak - WINDOW:
        first += 1
    while h[last] < peak - WINDOW:
        last -= 1
    if last == first:  # the peak alone: widen by one point so there is an interval
        first, last = max(first - 1, 0), min(last + 1, n - 1)
    for q in range(first, last + 1):
        h[q] -= peak
    cumulative = 0.0
    for q in range(first, last):
        cross = _tangent_crossing(u, h, slope, q)
        cumulative += _piece_mass(h[q], slope[q], u[q], u[q], cross)
        cumulative += _piece_mass(h[q + 1], slope[q + 1], u[q + 1], cross, u[q + 1])
        mass[q - first] = cumulative
    return h, slope, mass, first, last, peak, s


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _clear_pattern(link, k, y, pattern_start, pattern_entry):
    if link != LOGIT:
        for e in range(pattern_start[k], pattern_start[k + 1]):
            y[pattern_entry[e]] = 0.0


@numba.njit(nogil=True, cache=True, error_model="numpy")
def dominant_effect_variance(link, eta, log_sigma, profile_start, profile_config, profile_trials, profile_low,
                             profile_high, pair_start, pair_successes, pattern_start, pattern_entry, pattern_successes,
                             pair_count, seed):
    """Realised variance (n − 1 denominator) of the dominant factor's effects, one per draw.

    ``eta`` holds the configurations' linear predictors of every draw (draws × configurations),
    ``log_sigma`` the factor's log SD of every draw. Seeded once, so a call is reproducible.
    """
    np.random.seed(seed)
    n_draws = eta.shape[0]
    out = np.empty(n_draws)
    levels = 0.0
    for k in range(len(pair_count)):
        levels += pair_count[k]
    y = np.zeros(len(profile_config))  # the successes of one probit pattern, per entry
    for d in range(n_draws):
        inv_var = math.exp(-2.0 * log_sigma[d])
        row = eta[d]
        total = 0.0
        squares = 0.0
        for p in range(len(profile_start) - 1):
            start, stop = profile_start[p], profile_start[p + 1]
            u, base, base_slope, odds, odds_slope, n = _profile_tables(
                link, p, log_sigma[d], row, profile_start, profile_config, profile_trials, pair_start, pair_successes,
                profile_low, profile_high)
            if n > MAX_GRID:  # not a point of positive posterior density: no draw to make
                total = np.nan
                break
            for k in range(pair_start[p], pair_start[p + 1]):
                h, slope, mass, first, last, peak, s = _pair_envelope(
                    link, k, start, u, base, base_slope, odds, odds_slope, y, pair_successes, pattern_start,
                    pattern_entry, pattern_successes)
                for _ in range(int(pair_count[k])):
                    x = _draw_from_envelope(link, s, y, peak, u, h, slope, first, last, inv_var, row, profile_config,
                                            profile_trials, start, stop, mass)
                    total += x
                    squares += x * x
                _clear_pattern(link, k, y, pattern_start, pattern_entry)
        out[d] = (squares - total * total / levels) / (levels - 1.0)
    return out


@numba.njit(nogil=True, cache=True, error_model="numpy")
def dominant_effect_draws(link, eta, log_sigma, profile_start, profile_config, profile_trials, profile_low,
                          profile_high, pair_start, pair_successes, pattern_start, pattern_entry, pattern_successes,
                          pair_profile, level_pair, seed):
    """One draw of each level's effect per posterior draw, (draws, levels): ``level_pair`` holds the pair of each
    level asked for, in ascending order of pair; ``pair_profile`` the profile of every pair. Seeded once."""
    np.random.seed(seed)
    n_draws = eta.shape[0]
    out = np.empty((n_draws, len(level_pair)))
    y = np.zeros(len(profile_config))
    for d in range(n_draws):
        inv_var = math.exp(-2.0 * log_sigma[d])
        row = eta[d]
        i = 0
        while i < len(level_pair):
            p = pair_profile[level_pair[i]]
            start, stop = profile_start[p], profile_start[p + 1]
            u, base, base_slope, odds, odds_slope, n = _profile_tables(
                link, p, log_sigma[d], row, profile_start, profile_config, profile_trials, pair_start, pair_successes,
                profile_low, profile_high)
            while i < len(level_pair) and pair_profile[level_pair[i]] == p:
                k = level_pair[i]
                if n > MAX_GRID:
                    out[d, i] = np.nan
                    i += 1
                    continue
                h, slope, mass, first, last, peak, s = _pair_envelope(
                    link, k, start, u, base, base_slope, odds, odds_slope, y, pair_successes, pattern_start,
                    pattern_entry, pattern_successes)
                while i < len(level_pair) and level_pair[i] == k:
                    out[d, i] = _draw_from_envelope(link, s, y, peak, u, h, slope, first, last, inv_var, row,
                                                    profile_config, profile_trials, start, stop, mass)
                    i += 1
                _clear_pattern(link, k, y, pattern_start, pattern_entry)
    return out
