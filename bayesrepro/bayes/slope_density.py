"""The Gaussian model with correlated random effects as a compiled log density (non-centred).

Sampled, as one unconstrained vector x:
  1. the fixed coefficients β of the centred design: Student-t priors (Normal where ν is infinite), or flat
     where the prior SD is infinite;
  2. log σ of the residual SD: half-Student-t prior, plus the Jacobian log σ;
  3. per random-effect term of nc columns (formula order):
     - log τ_c of every column's SD: half-Student-t priors (half-normal where ν is infinite), plus log τ_c;
     - nc(nc − 1)/2 unconstrained values w, row by row of the strict lower triangle: canonical partial
       correlations tanh(w), mapped to the Cholesky factor L of the correlation matrix as Stan's
       ``cholesky_corr_constrain`` does, with the Jacobians of both maps; LKJ(η) prior on L;
     - u_l ~ N(0, I) for every level l, the effects being b_l = diag(τ) L u_l.
Likelihood: y_i ~ N(x_i'β + Σ_terms z_i' b_(term, level of row i), σ²), row by row, z_i the term's model-matrix
row. Normalising constants of the priors are left out (NUTS needs none).

Recorded per draw (``expand``): the coefficients of the uncentred design, σ, and per term the SDs τ and the
correlations of R = L L' (pairs (j, i), i > j, column by column, as lme4's VarCorr orders them).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .binary_density import float_array, int_array

F_Y, F_X, F_FIXED_MU, F_FIXED_SIGMA, F_FIXED_NU, F_Z, F_SD_NU, F_SD_SCALE, F_RESIDUAL, F_ETA, F_X_MEANS = range(11)
I_SIZES, I_COLUMNS, I_LEVELS, I_CODES = range(4)
# I_SIZES holds: rows, fixed coefficients, terms, model-matrix columns of all terms, the intercept's column (−1: none)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def half_t_log_density(log_sd, nu, scale):
    """Log density (up to a constant) of a half-Student-t (half-normal if ν is infinite) SD, in log SD with its
    Jacobian; and its derivative in log SD."""
    ratio2 = math.exp(2.0 * (log_sd - math.log(scale)))
    if math.isinf(nu):
        return -0.5 * ratio2 + log_sd, -ratio2 + 1.0
    return -0.5 * (nu + 1.0) * math.log1p(ratio2 / nu) + log_sd, -(nu + 1.0) * ratio2 / (nu + ratio2) + 1.0


@numba.njit(nogil=True, cache=True, error_model="numpy")
def correlation_factor(w, nc, eta):
    """L, dL/dw (one nc × nc slice per element of w), and the log density of w: the LKJ(η) prior on L with the
    Jacobians of w → tanh(w) → L; and its gradient in w."""
    m = len(w)
    L = np.zeros((nc, nc))
    dL = np.zeros((m, nc, nc))
    value = 0.0
    gradient = np.zeros(m)
    L[0, 0] = 1.0
    k = 0
    d_sum = np.zeros(m)   # d(sum of squares so far in the row)/dw
    for i in range(1, nc):
        total = 0.0
        d_sum[:] = 0.0
        for j in range(i):
            z = math.tanh(w[k])
            dz = 1.0 - z * z
            value += math.log(dz)                 # Jacobian of tanh
            gradient[k] += -2.0 * z
            rest = 1.0 - total
            root = math.sqrt(rest)
            if j > 0:
                value += 0.5 * math.log(rest)     # Jacobian of the partial correlations' map to L
                for r in range(m):
                    gradient[r] += -0.5 * d_sum[r] / rest
            L[i, j] = z * root
            for r in range(m):
                dL[r, i, j] = -0.5 * z * d_sum[r] / root
            dL[k, i, j] += dz * root
            total += L[i, j] * L[i, j]
            for r in range(m):
                d_sum[r] += 2.0 * L[i, j] * dL[r, i, j]
            k += 1
        rest = 1.0 - total
        L[i, i] = math.sqrt(rest)
        for r in range(m):
            dL[r, i, i] = -0.5 * d_sum[r] / L[i, i]
        # LKJ(η) on L (Stan's lkj_corr_cholesky): (nc − i − 1 + 2η − 2) log L_ii, log L_ii = ½ log(1 − total)
        weight = nc - i - 1 + 2.0 * eta - 2.0
        value += weight * 0.5 * math.log(rest)
        for r in range(m):
            gradient[r] += -weight * 0.5 * d_sum[r] / rest
    return L, dL, value, gradient


@numba.njit(nogil=True, cache=True, error_model="numpy")
def term_prior(x, o, nc, eta, sd_nu, sd_scale, gradient):
    """The correlations' Cholesky factor L of the term whose log SDs start at x[o], dL/dw, and the log density of
    its log SDs and correlation values w (priors and Jacobians); adds its gradient into ``gradient``."""
    m = nc * (nc - 1) // 2
    L, dL, value, corr_gradient = correlation_factor(x[o + nc:o + nc + m], nc, eta)
    gradient[o + nc:o + nc + m] += corr_gradient
    for c in range(nc):
        prior, d_prior = half_t_log_density(x[o + c], sd_nu[c], sd_scale[c])
        value += prior
        gradient[o + c] += d_prior
    return L, dL, value


@numba.njit(nogil=True, cache=True, error_model="numpy")
def fixed_prior(x, mu, sigma, nu, gradient):
    """Log density (up to a constant) of the coefficients x[:p] under their Student-t (Normal where ν is infinite,
    flat where the SD is) priors; adds its gradient into ``gradient``."""
    value = 0.0
    for j in range(len(mu)):
        if math.isinf(sigma[j]):
            continue
        d = (x[j] - mu[j]) / sigma[j]
        if math.isinf(nu[j]):
            value -= 0.5 * d * d
            gradient[j] -= d / sigma[j]
        else:
            value -= 0.5 * (nu[j] + 1.0) * math.log1p(d * d / nu[j])
            gradient[j] -= (nu[j] + 1.0) * d / (nu[j] + d * d) / sigma[j]
    return value


@numba.njit(nogil=True, cache=True, error_model="numpy")
def slope_logp(x, floats, ints):
    sizes = int_array(ints, I_SIZES)
    n, p, n_terms, n_columns = sizes[0], sizes[1], sizes[2], sizes[3]
    y = float_array(floats, ints, F_Y)
    X = float_array(floats, ints, F_X)
    fixed_mu = float_array(floats, ints, F_FIXED_MU)
    fixed_sigma = float_array(floats, ints, F_FIXED_SIGMA)
    fixed_nu = float_array(floats, ints, F_FIXED_NU)
    Z = float_array(floats, ints, F_Z)
    sd_nu = float_array(floats, ints, F_SD_NU)
    sd_scale = float_array(floats, ints, F_SD_SCALE)
    residual = float_array(floats, ints, F_RESIDUAL)
    eta = float_array(floats, ints, F_ETA)
    columns = int_array(ints, I_COLUMNS)
    levels = int_array(ints, I_LEVELS)
    codes = int_array(ints, I_CODES)
    gradient = np.zeros(len(x))
    value = fixed_prior(x, fixed_mu, fixed_sigma, fixed_nu, gradient)
    log_sigma = x[p]
    prior, d_prior = half_t_log_density(log_sigma, residual[0], residual[1])
    value += prior
    gradient[p] += d_prior
    # the effects b of every term and level, from τ, L and u
    offsets = np.zeros(n_terms + 1, dtype=np.int64)     # first element of x of every term
    effect_start = np.zeros(n_terms + 1, dtype=np.int64)
    offsets[0] = p + 1
    for t in range(n_terms):
        nc = columns[t]
        offsets[t + 1] = offsets[t] + nc + nc * (nc - 1) // 2 + levels[t] * nc
        effect_start[t + 1] = effect_start[t] + levels[t] * nc
    b = np.zeros(effect_start[n_terms])
    column = 0
    for t in range(n_terms):
        nc, o = columns[t], offsets[t]
        m = nc * (nc - 1) // 2
        L, _, prior = term_prior(x, o, nc, eta[t], sd_nu[column:column + nc], sd_scale[column:column + nc], gradient)
        value += prior
        u0 = o + nc + m
        for level in range(levels[t]):
            for a in range(nc):
                total = 0.0
                for c in range(a + 1):
                    total += L[a, c] * x[u0 + level * nc + c]
                b[effect_start[t] + level * nc + a] = math.exp(x[o + a]) * total
            for c in range(nc):
                value -= 0.5 * x[u0 + level * nc + c] ** 2
                gradient[u0 + level * nc + c] -= x[u0 + level * nc + c]
        column += nc
    # the likelihood, row by row; db collects its gradient in b
    inv_var = math.exp(-2.0 * log_sigma)
    db = np.zeros(len(b))
    squares = 0.0
    for i in range(n):
        fitted = 0.0
        for j in range(p):
            fitted += X[i * p + j] * x[j]
        column = 0
        for t in range(n_terms):
            start = effect_start[t] + codes[i * n_terms + t] * columns[t]
            for c in range(columns[t]):
                fitted += Z[i * n_columns + column + c] * b[start + c]
            column += columns[t]
        r = y[i] - fitted
        squares += r * r
        g = r * inv_var
        for j in range(p):
            gradient[j] += X[i * p + j] * g
        column = 0
        for t in range(n_terms):
            start = effect_start[t] + codes[i * n_terms + t] * columns[t]
            for c in range(columns[t]):
                db[start + c] += Z[i * n_columns + column + c] * g
            column += columns[t]
    value += -n * log_sigma - 0.5 * squares * inv_var
    gradient[p] += -n + squares * inv_var
    # back from b to log τ, w and u
    for t in range(n_terms):
        nc, o = columns[t], offsets[t]
        m = nc * (nc - 1) // 2
        L, dL, _, _ = correlation_factor(x[o + nc:o + nc + m], nc, eta[t])
        G = np.zeros((nc, nc))   # Σ_l dv_l u_l', the gradient in L
        u0 = o + nc + m
        for level in range(levels[t]):
            for a in range(nc):
                tau = math.exp(x[o + a])
                d_b = db[effect_start[t] + level * nc + a]
                gradient[o + a] += d_b * b[effect_start[t] + level * nc + a]
                dv = d_b * tau
                for c in range(a + 1):
                    gradient[u0 + level * nc + c] += L[a, c] * dv
                    G[a, c] += dv * x[u0 + level * nc + c]
        for r in range(m):
            total = 0.0
            for a in range(nc):
                for c in range(a + 1):
                    total += G[a, c] * dL[r, a, c]
            gradient[o + nc + r] += total
    return value, gradient


@numba.njit(nogil=True, cache=True, error_model="numpy")
def slope_expand(x, floats, ints, out):
    """Records: the uncentred coefficients, σ, then per term its SDs and its correlations."""
    sizes = int_array(ints, I_SIZES)
    p, n_terms, intercept = sizes[1], sizes[2], sizes[4]
    x_means = float_array(floats, ints, F_X_MEANS)
    eta = float_array(floats, ints, F_ETA)
    columns = int_array(ints, I_COLUMNS)
    levels = int_array(ints, I_LEVELS)
    shift = 0.0
    for j in range(p):
        out[j] = x[j]
        shift += x_means[j] * x[j]
    if intercept >= 0:
        out[intercept] = x[intercept] - shift
    out[p] = math.exp(x[p])
    position = p + 1
    o = p + 1
    for t in range(n_terms):
        nc = columns[t]
        m = nc * (nc - 1) // 2
        for c in range(nc):
            out[position] = math.exp(x[o + c])
            position += 1
        if nc > 1:
            L, _, _, _ = correlation_factor(x[o + nc:o + nc + m], nc, eta[t])
            for j in range(nc):
                for i in range(j + 1, nc):
                    total = 0.0
                    for c in range(j + 1):
                        total += L[i, c] * L[j, c]
                    out[position] = total
                    position += 1
        o += nc + m + levels[t] * nc
