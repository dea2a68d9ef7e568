"""The Gaussian and the binomial model with correlated random effects as compiled log densities (non-centred).

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
The binomial model (``binary_slope_logp``, Bernoulli rows having one trial) has no σ (no item 2) and the same
terms: y_i successes of n_i trials, y_i ~ Binomial(n_i, μ(x_i'β + Σ_terms z_i' b)), μ the inverse logit or Φ.

The binomial model is sampled in partially centred coordinates (``binary_centred_logp``, described before it):
the same posterior, each level's effects relative to the Gaussian approximation of their conditional posterior.

Recorded per draw (``expand``): the coefficients of the uncentred design, σ (Gaussian model), and per term the
SDs τ and the correlations of R = L L' (pairs (j, i), i > j, column by column, as lme4's VarCorr orders them).
Then the effects b of every term, level by level (``effect_variable``: level × column), for the level summaries.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .binary_density import LOGIT, probit_terms, softplus_and_sigmoid
from .compiled_density import float_array, int_array

(F_Y, F_X, F_FIXED_MU, F_FIXED_SIGMA, F_FIXED_NU, F_Z, F_SD_NU, F_SD_SCALE, F_RESIDUAL, F_ETA, F_X_MEANS,
 F_TRIALS) = range(12)
I_SIZES, I_COLUMNS, I_LEVELS, I_CODES = range(4)
# I_SIZES holds: rows, fixed coefficients, terms, model-matrix columns of all terms, the intercept's column (−1: none),
# and for the binomial model the link (binary_density.LINK_CODES); F_TRIALS only for the binomial model


def effect_variable(group: str) -> str:
    """The recorded effects of a term (level × column)."""
    return f"re|{group}"


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
def term_offsets(first, columns, levels):
    """The first element of x of every term (from ``first``) and the first of its effects in b; one more each."""
    n_terms = len(columns)
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    effect_start = np.zeros(n_terms + 1, dtype=np.int64)
    offsets[0] = first
    for t in range(n_terms):
        nc = columns[t]
        offsets[t + 1] = offsets[t] + nc + nc * (nc - 1) // 2 + levels[t] * nc
        effect_start[t + 1] = effect_start[t] + levels[t] * nc
    return offsets, effect_start


@numba.njit(nogil=True, cache=True, error_model="numpy")
def term_effects(x, offsets, effect_start, columns, levels, sd_nu, sd_scale, eta, gradient):
    """The effects b of every term and level, b_l = diag(τ) L u_l, and the log density of the terms' priors
    (SDs, LKJ, u ~ N(0, I)); adds its gradient."""
    value = 0.0
    b = np.zeros(effect_start[len(columns)])
    column = 0
    for t in range(len(columns)):
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
    return b, value


@numba.njit(nogil=True, cache=True, error_model="numpy", inline="always")
def row_predictor(i, x, X, p, Z, n_columns, codes, columns, effect_start, b):
    """Row i's linear predictor x_i'β + Σ_terms z_i' b."""
    n_terms = len(columns)
    fitted = 0.0
    for j in range(p):
        fitted += X[i * p + j] * x[j]
    column = 0
    for t in range(n_terms):
        start = effect_start[t] + codes[i * n_terms + t] * columns[t]
        for c in range(columns[t]):
            fitted += Z[i * n_columns + column + c] * b[start + c]
        column += columns[t]
    return fitted


@numba.njit(nogil=True, cache=True, error_model="numpy", inline="always")
def add_row_gradient(i, g, X, p, Z, n_columns, codes, columns, effect_start, gradient, db):
    """Adds g (the derivative in row i's linear predictor) times its derivatives in β (``gradient``) and b (``db``)."""
    n_terms = len(columns)
    for j in range(p):
        gradient[j] += X[i * p + j] * g
    column = 0
    for t in range(n_terms):
        start = effect_start[t] + codes[i * n_terms + t] * columns[t]
        for c in range(columns[t]):
            db[start + c] += Z[i * n_columns + column + c] * g
        column += columns[t]


@numba.njit(nogil=True, cache=True, error_model="numpy")
def add_effects_gradient(x, b, db, offsets, effect_start, columns, levels, eta, gradient):
    """The chain rule from the gradient in b (``db``) back to log τ, w and u of every term."""
    for t in range(len(columns)):
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


@numba.njit(nogil=True, cache=True, error_model="numpy")
def priors_and_effects(x, floats, ints, first):
    """The log density of the priors of the fixed coefficients and of the terms (their elements of x from
    ``first``), a new gradient holding its gradient, the effects b, and the terms' offsets in x and in b."""
    columns = int_array(ints, I_COLUMNS)
    levels = int_array(ints, I_LEVELS)
    gradient = np.zeros(len(x))
    value = fixed_prior(x, float_array(floats, ints, F_FIXED_MU), float_array(floats, ints, F_FIXED_SIGMA),
                        float_array(floats, ints, F_FIXED_NU), gradient)
    offsets, effect_start = term_offsets(first, columns, levels)
    b, terms_value = term_effects(x, offsets, effect_start, columns, levels, float_array(floats, ints, F_SD_NU),
                                  float_array(floats, ints, F_SD_SCALE), float_array(floats, ints, F_ETA), gradient)
    return value + terms_value, gradient, b, offsets, effect_start


@numba.njit(nogil=True, cache=True, error_model="numpy")
def slope_logp(x, floats, ints):
    sizes = int_array(ints, I_SIZES)
    n, p, n_columns = sizes[0], sizes[1], sizes[3]
    y, X, Z = float_array(floats, ints, F_Y), float_array(floats, ints, F_X), float_array(floats, ints, F_Z)
    columns, codes = int_array(ints, I_COLUMNS), int_array(ints, I_CODES)
    residual = float_array(floats, ints, F_RESIDUAL)
    value, gradient, b, offsets, effect_start = priors_and_effects(x, floats, ints, p + 1)
    log_sigma = x[p]
    prior, d_prior = half_t_log_density(log_sigma, residual[0], residual[1])
    value += prior
    gradient[p] += d_prior
    # the likelihood, row by row; db collects its gradient in b
    inv_var = math.exp(-2.0 * log_sigma)
    db = np.zeros(len(b))
    squares = 0.0
    for i in range(n):
        r = y[i] - row_predictor(i, x, X, p, Z, n_columns, codes, columns, effect_start, b)
        squares += r * r
        add_row_gradient(i, r * inv_var, X, p, Z, n_columns, codes, columns, effect_start, gradient, db)
    value += -n * log_sigma - 0.5 * squares * inv_var
    gradient[p] += -n + squares * inv_var
    add_effects_gradient(x, b, db, offsets, effect_start, columns, int_array(ints, I_LEVELS),
                         float_array(floats, ints, F_ETA), gradient)
    return value, gradient


@numba.njit(nogil=True, cache=True, error_model="numpy", inline="always")
def binomial_rows(n, x, y, trials, X, p, Z, n_columns, codes, columns, effect_start, b, link, gradient, db):
    """The binomial log likelihood of the ``n`` rows given the level effects ``b``; adds its gradient to ``gradient``
    (β) and ``db`` (the effects)."""
    value = 0.0
    for i in range(n):
        t = row_predictor(i, x, X, p, Z, n_columns, codes, columns, effect_start, b)
        hits, misses = y[i], trials[i] - y[i]
        if link == LOGIT:
            softplus, mu = softplus_and_sigmoid(t)
            value += hits * t - trials[i] * softplus
            g = hits - trials[i] * mu
        else:
            log_mu, log_not_mu, ratio, not_ratio = probit_terms(t)
            value += hits * log_mu + misses * log_not_mu
            g = hits * ratio - misses * not_ratio
        add_row_gradient(i, g, X, p, Z, n_columns, codes, columns, effect_start, gradient, db)
    return value


@numba.njit(nogil=True, cache=True, error_model="numpy")
def binary_slope_logp(x, floats, ints):
    """The binomial model: y_i successes of n_i trials with probability μ(η_i), the link's inverse (I_SIZES[5]:
    0 logit, 1 probit), η_i = x_i'β + Σ_terms z_i' b; no residual SD (x holds β, then the terms)."""
    sizes = int_array(ints, I_SIZES)
    n, p, n_columns, link = sizes[0], sizes[1], sizes[3], sizes[5]
    y, X, Z = float_array(floats, ints, F_Y), float_array(floats, ints, F_X), float_array(floats, ints, F_Z)
    columns, codes = int_array(ints, I_COLUMNS), int_array(ints, I_CODES)
    trials = float_array(floats, ints, F_TRIALS)
    value, gradient, b, offsets, effect_start = priors_and_effects(x, floats, ints, p)
    db = np.zeros(len(b))
    value += binomial_rows(n, x, y, trials, X, p, Z, n_columns, codes, columns, effect_start, b, link, gradient, db)
    add_effects_gradient(x, b, db, offsets, effect_start, columns, int_array(ints, I_LEVELS),
                         float_array(floats, ints, F_ETA), gradient)
    return value, gradient


@numba.njit(nogil=True, cache=True, error_model="numpy")
def expand_covariances(x, o, position, columns, levels, eta, out):
    """Writes every term's SDs and correlations into ``out`` from ``position``, the term's elements of x from ``o``;
    returns the position after them."""
    for t in range(len(columns)):
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
    return position


@numba.njit(nogil=True, cache=True, error_model="numpy")
def expand_terms(x, o, position, columns, levels, eta, out):
    """Writes every term's SDs and correlations into ``out`` from ``position``, the term's elements of x from ``o``,
    then every term's effects b_l = diag(τ) L u_l, level by level; returns the position after them."""
    position = expand_covariances(x, o, position, columns, levels, eta, out)
    for t in range(len(columns)):
        nc = columns[t]
        m = nc * (nc - 1) // 2
        L = np.eye(nc)
        if nc > 1:
            L, _, _, _ = correlation_factor(x[o + nc:o + nc + m], nc, eta[t])
        u0 = o + nc + m
        for level in range(levels[t]):
            for a in range(nc):
                total = 0.0
                for c in range(a + 1):
                    total += L[a, c] * x[u0 + level * nc + c]
                out[position] = math.exp(x[o + a]) * total
                position += 1
        o += nc + m + levels[t] * nc
    return position


@numba.njit(nogil=True, cache=True, error_model="numpy")
def expand_fixed(x, p, intercept, x_means, out):
    """The coefficients of the uncentred design into out[:p]."""
    shift = 0.0
    for j in range(p):
        out[j] = x[j]
        shift += x_means[j] * x[j]
    if intercept >= 0:
        out[intercept] = x[intercept] - shift


@numba.njit(nogil=True, cache=True, error_model="numpy")
def slope_expand(x, floats, ints, out):
    """Records: the uncentred coefficients, σ, then per term its SDs and its correlations, then the effects."""
    sizes = int_array(ints, I_SIZES)
    p = sizes[1]
    expand_fixed(x, p, sizes[4], float_array(floats, ints, F_X_MEANS), out)
    out[p] = math.exp(x[p])
    expand_terms(x, p + 1, p + 1, int_array(ints, I_COLUMNS), int_array(ints, I_LEVELS),
                 float_array(floats, ints, F_ETA), out)


@numba.njit(nogil=True, cache=True, error_model="numpy")
def binary_slope_expand(x, floats, ints, out):
    """Records: the uncentred coefficients, then per term its SDs and its correlations, then the effects."""
    sizes = int_array(ints, I_SIZES)
    p = sizes[1]
    expand_fixed(x, p, sizes[4], float_array(floats, ints, F_X_MEANS), out)
    expand_terms(x, p, p, int_array(ints, I_COLUMNS), int_array(ints, I_LEVELS), float_array(floats, ints, F_ETA),
                 out)


# The binomial model in partially centred coordinates (``binary_slope_model``). x holds β, then per term log τ, w and
# one z_l per level as above, but the effects of level l are
#     b_l = m_l + G_l^-T z_l,   P_l = Σ^-1 + H_l = G_l G_l',   m_l = P_l^-1 (h_l − K_l β),
# H_l the data's information about b_l, K_l its cross information with β and h_l − K_l β the information times the
# data's estimate of b_l given β (all three taken once, at the posterior mode): z_l is close to N(0, I) whatever Σ
# and β are. As Σ → 0 this is the non-centred b = chol(Σ^-1)^-T z, as the data outweigh the prior the centred
# b = estimate + H^-1/2 z. The density of z is that of b, N(b_l; 0, Σ), times the Jacobian |G_l|^-1.
F_INFORMATION, F_TARGET, F_CROSS = 12, 13, 14   # per level: H_l (nc × nc), h_l (nc), K_l (nc × p), level by level


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _cholesky(A, G):
    """The lower Cholesky factor of a small symmetric positive definite matrix into G (no LAPACK call per level)."""
    n = A.shape[0]
    for i in range(n):
        for j in range(n):
            if j > i:
                G[i, j] = 0.0
                continue
            total = A[i, j]
            for k in range(j):
                total -= G[i, k] * G[j, k]
            G[i, j] = math.sqrt(total) if i == j else total / G[j, j]


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _lower_solve(G, v, out):
    """G^-1 v into ``out``, G lower triangular."""
    for i in range(len(v)):
        total = v[i]
        for k in range(i):
            total -= G[i, k] * out[k]
        out[i] = total / G[i, i]


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _upper_solve(G, v, out):
    """G'^-1 v into ``out``, G lower triangular."""
    n = len(v)
    for i in range(n - 1, -1, -1):
        total = v[i]
        for k in range(i + 1, n):
            total -= G[k, i] * out[k]
        out[i] = total / G[i, i]


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _quadratic(u, A, v):
    """u' A v."""
    total = 0.0
    for i in range(len(u)):
        for j in range(len(v)):
            total += u[i] * A[i, j] * v[j]
    return total


@numba.njit(nogil=True, cache=True, error_model="numpy")
def precision_and_derivatives(x, o, nc, eta):
    """Σ^-1 of the term whose log SDs start at x[o], its derivative in every log τ_a and w_r (nc + m slices), the
    derivative of ½ log |Σ^-1| in each, and ½ log |Σ^-1| itself."""
    m = nc * (nc - 1) // 2
    L, dL, _, _ = correlation_factor(x[o + nc:o + nc + m], nc, eta)
    inverse_L = np.zeros((nc, nc))
    unit, column = np.zeros(nc), np.empty(nc)
    for c in range(nc):
        unit[:] = 0.0
        unit[c] = 1.0
        _lower_solve(L, unit, column)
        inverse_L[:, c] = column
    scale = np.empty(nc)
    half_log_det = 0.0   # ½ log |Σ^-1| = −Σ log τ − Σ log L_ii
    for a in range(nc):
        scale[a] = math.exp(-x[o + a])
        half_log_det -= x[o + a] + math.log(L[a, a])
    Q = np.zeros((nc, nc))                              # R^-1 = L^-T L^-1
    for i in range(nc):
        for j in range(nc):
            for k in range(nc):
                Q[i, j] += inverse_L[k, i] * inverse_L[k, j]
    precision = np.empty((nc, nc))
    for i in range(nc):
        for j in range(nc):
            precision[i, j] = Q[i, j] * scale[i] * scale[j]
    d_precision = np.zeros((nc + m, nc, nc))
    d_half_log_det = np.zeros(nc + m)
    for a in range(nc):
        for i in range(nc):
            for j in range(nc):
                d_precision[a, i, j] = -precision[i, j] * ((i == a) + (j == a))
        d_half_log_det[a] = -1.0
    for r in range(m):
        dR = np.zeros((nc, nc))
        for i in range(nc):
            for j in range(nc):
                for k in range(nc):
                    dR[i, j] += dL[r, i, k] * L[j, k] + L[i, k] * dL[r, j, k]
        QdR = np.zeros((nc, nc))
        for i in range(nc):
            for j in range(nc):
                for k in range(nc):
                    QdR[i, j] += Q[i, k] * dR[k, j]
        for i in range(nc):
            for j in range(nc):
                total = 0.0
                for k in range(nc):
                    total += QdR[i, k] * Q[k, j]
                d_precision[nc + r, i, j] = -total * scale[i] * scale[j]
        for i in range(nc):
            d_half_log_det[nc + r] -= dL[r, i, i] / L[i, i]
    return precision, d_precision, d_half_log_det, half_log_det


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _level_map(precision, information, target, cross, beta, z, G, mean, v, work):
    """One level: G (P = Σ^-1 + H = G G'), the mean m and v = G^-T z, written into the arrays given; returns
    −Σ log G_ii, the log Jacobian of z → b = m + v (``work``: nc × nc and two nc vectors of scratch)."""
    nc, p = len(z), len(beta)
    for i in range(nc):
        for j in range(nc):
            work[0][i, j] = precision[i, j] + information[i * nc + j]
    _cholesky(work[0], G)
    shift, half = work[1], work[2]
    for a in range(nc):
        total = target[a]
        for j in range(p):
            total -= cross[a * p + j] * beta[j]
        shift[a] = total
    _lower_solve(G, shift, half)
    _upper_solve(G, half, mean)
    _upper_solve(G, z, v)
    log_jacobian = 0.0
    for a in range(nc):
        log_jacobian -= math.log(G[a, a])
    return log_jacobian


@numba.njit(nogil=True, cache=True, error_model="numpy")
def _scratch(nc):
    """The arrays ``_level_map`` writes, allocated once per term: G, m, v and its scratch (a matrix, two vectors)."""
    return np.empty((nc, nc)), np.empty(nc), np.empty(nc), (np.empty((nc, nc)), np.empty(nc), np.empty(nc))


@numba.njit(nogil=True, cache=True, error_model="numpy")
def centred_term_effects(x, p, offsets, effect_start, columns, levels, sd_nu, sd_scale, eta, information, target,
                         cross, gradient):
    """The effects b of every term and level in partially centred coordinates and the log density of the terms'
    priors (SDs, LKJ, N(b; 0, Σ)) with the Jacobian of z → b; adds the gradient of the SD and LKJ priors only."""
    value = 0.0
    b = np.zeros(effect_start[len(columns)])
    beta = x[:p]
    column, block, vector = 0, 0, 0
    for t in range(len(columns)):
        nc, o = columns[t], offsets[t]
        m = nc * (nc - 1) // 2
        _, _, prior = term_prior(x, o, nc, eta[t], sd_nu[column:column + nc], sd_scale[column:column + nc], gradient)
        value += prior
        precision, _, _, half_log_det = precision_and_derivatives(x, o, nc, eta[t])
        G, mean, v, work = _scratch(nc)
        u0 = o + nc + m
        for level in range(levels[t]):
            value += half_log_det + _level_map(precision, information[block:block + nc * nc],
                                               target[vector:vector + nc], cross[vector * p:(vector + nc) * p], beta,
                                               x[u0 + level * nc:u0 + (level + 1) * nc], G, mean, v, work)
            start = effect_start[t] + level * nc
            for a in range(nc):
                b[start + a] = mean[a] + v[a]
            value -= 0.5 * _quadratic(b[start:start + nc], precision, b[start:start + nc])
            block += nc * nc
            vector += nc
        column += nc
    return b, value


@numba.njit(nogil=True, cache=True, error_model="numpy")
def add_centred_gradient(x, p, b, db, offsets, effect_start, columns, levels, eta, information, target, cross,
                         gradient):
    """The chain rule from the likelihood's gradient in b (``db``), plus that of N(b; 0, Σ) and of the Jacobian,
    back to β, log τ, w and z of every term."""
    beta = x[:p]
    block, vector = 0, 0
    for t in range(len(columns)):
        nc, o = columns[t], offsets[t]
        m = nc * (nc - 1) // 2
        precision, d_precision, d_half_log_det, _ = precision_and_derivatives(x, o, nc, eta[t])
        G, mean, v, work = _scratch(nc)
        q, s, w, column, row = np.empty(nc), np.empty(nc), np.empty(nc), np.empty(nc), np.empty(nc)
        A = np.empty((nc, nc))
        u0 = o + nc + m
        for level in range(levels[t]):
            K = cross[vector * p:(vector + nc) * p]
            _level_map(precision, information[block:block + nc * nc], target[vector:vector + nc], K, beta,
                       x[u0 + level * nc:u0 + (level + 1) * nc], G, mean, v, work)
            bl = b[effect_start[t] + level * nc:effect_start[t] + (level + 1) * nc]
            for i in range(nc):                             # the gradient in b, Σ and β held
                total = db[effect_start[t] + level * nc + i]
                for j in range(nc):
                    total -= precision[i, j] * bl[j]
                q[i] = total
            _lower_solve(G, q, s)                           # in z: (db/dz)' q = G^-1 q
            for a in range(nc):
                gradient[u0 + level * nc + a] += s[a]
            _upper_solve(G, s, w)                           # P^-1 q
            for j in range(p):                              # db/dβ = −P^-1 K
                total = 0.0
                for a in range(nc):
                    total += K[a * p + j] * w[a]
                gradient[j] -= total
            for r in range(nc + m):
                # dG = G Φ(G^-1 dP G^-T), Φ: the lower triangle, the diagonal halved
                for c in range(nc):
                    for i in range(nc):
                        column[i] = d_precision[r, i, c]
                    _lower_solve(G, column, row)
                    A[:, c] = row
                for c in range(nc):
                    column[:] = A[c, :]
                    _lower_solve(G, column, row)
                    A[c, :] = row
                change = d_half_log_det[r] - 0.5 * _quadratic(bl, d_precision[r], bl) - _quadratic(w, d_precision[r],
                                                                                                    mean)
                for i in range(nc):
                    A[i, i] *= 0.5
                    change -= A[i, i]                       # the Jacobian's −Σ log G_ii
                # db/dθ_r = −P^-1 dP m − G^-T dG' G^-T z: its product with q adds −(dG s)'v
                for i in range(nc):
                    for k in range(i + 1):                  # (dG s)_i = Σ_k (G Φ(A))_ik s_k
                        entry = 0.0
                        for c in range(k, i + 1):
                            entry += G[i, c] * A[c, k]
                        change -= entry * s[k] * v[i]
                gradient[o + r] += change
            block += nc * nc
            vector += nc


@numba.njit(nogil=True, cache=True, error_model="numpy")
def binary_centred_logp(x, floats, ints):
    """The binomial model of ``binary_slope_logp`` in partially centred coordinates."""
    sizes = int_array(ints, I_SIZES)
    n, p, n_columns, link = sizes[0], sizes[1], sizes[3], sizes[5]
    y, X, Z = float_array(floats, ints, F_Y), float_array(floats, ints, F_X), float_array(floats, ints, F_Z)
    columns, codes, levels = int_array(ints, I_COLUMNS), int_array(ints, I_CODES), int_array(ints, I_LEVELS)
    trials = float_array(floats, ints, F_TRIALS)
    information, target = float_array(floats, ints, F_INFORMATION), float_array(floats, ints, F_TARGET)
    cross, eta = float_array(floats, ints, F_CROSS), float_array(floats, ints, F_ETA)
    gradient = np.zeros(len(x))
    value = fixed_prior(x, float_array(floats, ints, F_FIXED_MU), float_array(floats, ints, F_FIXED_SIGMA),
                        float_array(floats, ints, F_FIXED_NU), gradient)
    offsets, effect_start = term_offsets(p, columns, levels)
    b, terms_value = centred_term_effects(x, p, offsets, effect_start, columns, levels,
                                          float_array(floats, ints, F_SD_NU), float_array(floats, ints, F_SD_SCALE),
                                          eta, information, target, cross, gradient)
    value += terms_value
    db = np.zeros(len(b))
    value += binomial_rows(n, x, y, trials, X, p, Z, n_columns, codes, columns, effect_start, b, link, gradient, db)
    add_centred_gradient(x, p, b, db, offsets, effect_start, columns, levels, eta, information, target, cross,
                         gradient)
    return value, gradient


@numba.njit(nogil=True, cache=True, error_model="numpy")
def binary_centred_expand(x, floats, ints, out):
    """Records, as ``binary_slope_expand``: the uncentred coefficients, per term its SDs and correlations, then the
    effects."""
    sizes = int_array(ints, I_SIZES)
    p = sizes[1]
    columns, levels, eta = int_array(ints, I_COLUMNS), int_array(ints, I_LEVELS), float_array(floats, ints, F_ETA)
    expand_fixed(x, p, sizes[4], float_array(floats, ints, F_X_MEANS), out)
    position = expand_covariances(x, p, p, columns, levels, eta, out)
    offsets, effect_start = term_offsets(p, columns, levels)
    b, _ = centred_term_effects(x, p, offsets, effect_start, columns, levels, float_array(floats, ints, F_SD_NU),
                                float_array(floats, ints, F_SD_SCALE), eta, float_array(floats, ints, F_INFORMATION),
                                float_array(floats, ints, F_TARGET), float_array(floats, ints, F_CROSS),
                                np.zeros(len(x)))
    for i in range(len(b)):
        out[position + i] = b[i]
