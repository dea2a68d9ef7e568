"""The Gaussian model with correlated random effects, its effects integrated out: a compiled log density.

The posterior of ``slope_density`` with the effects b marginalised analytically. Sampled, as one unconstrained
vector x: the coefficients β, log σ, and per term log τ_c of its SDs and the values w of its correlations' Cholesky
factor L (the same transforms, Jacobians and priors as ``slope_density``, which states them), no effects.

With T the block-diagonal map from standard-normal effects to b (per level of a term diag(τ) L), Σ_b = T T' and
V = σ² I + Z T T' Z', r = y − X β, the likelihood is that of y ~ N(Xβ, V):
    log p(y | β, τ, L, σ) = −(n − q) log σ − ½ log|M| − (r'r − s'b̂) / (2σ²) + const,
    M = T' A T + σ² I = C C',   A = Z'Z,   s = Z'r,   b̂ = T M⁻¹ T' s
(the matrix-determinant lemma and Woodbury's identity; b̂ is the conditional mean of b). Its gradient, with
g = Z'V⁻¹r = (s − A b̂) / σ²:
    d/dβ     = X'V⁻¹r = (X'r − X'Z b̂) / σ²,
    d/dT     = g g'T − A T M⁻¹   (of which the entries of T's blocks are summed into each term's diag(τ) L),
    d/dlog σ = (r'r − 2 s'b̂ + b̂'A b̂) / σ² − (n − q) − σ² tr M⁻¹.
The data enter through cross-products alone (X'X, X'y, Z'X, Z'y, y'y, A), taken about the least-squares fit β₀ so
that r'r does not lose digits to y's level. A is block-diagonal over the components of levels that share rows (one
component per level for a single term, one for crossed terms): M is factorised per component, densely, at a cost of
the cube of its columns.

The vector's layout is the non-centred one with no level effects, so ``slope_density.slope_expand`` records its
draws (``I_LEVELS`` holds zeros: no term has effects in x).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from .compiled_density import float_array, int_array
from .slope_density import (
    F_ETA,
    F_FIXED_MU,
    F_FIXED_NU,
    F_FIXED_SIGMA,
    F_RESIDUAL,
    F_SD_NU,
    F_SD_SCALE,
    I_COLUMNS,
    I_SIZES,
    fixed_prior,
    half_t_log_density,
    term_prior,
)

# float arrays after slope_density's eleven: the cross-products about β₀, and A's dense block of every component
F_REFERENCE, F_XTX, F_XTY, F_ZTX, F_ZTY, F_YTY, F_GRAM = range(11, 18)
# integer arrays after slope_density's four: the first column of every component (and q last), where each
# component's block of A starts in F_GRAM, and per column of Z its term, its column in the term and the first
# column of its level's effects
I_COMPONENTS, I_GRAM_STARTS, I_TERM, I_COLUMN, I_UNIT = range(4, 9)


# Not cached on its own: numba would key its cache on this file alone, while it links in slope_density's kernels.
# The sampler's C entry point around it is cached under a digest of this file and slope_density's (the file of
# slope_expand, its other half), so a change to either compiles it again.
@numba.njit(nogil=True, cache=False, error_model="numpy")
def collapsed_logp(x, floats, ints):
    sizes = int_array(ints, I_SIZES)
    n, p, n_terms = sizes[0], sizes[1], sizes[2]
    columns = int_array(ints, I_COLUMNS)
    components = int_array(ints, I_COMPONENTS)
    gram_starts = int_array(ints, I_GRAM_STARTS)
    term_of = int_array(ints, I_TERM)
    column_of = int_array(ints, I_COLUMN)
    unit_of = int_array(ints, I_UNIT)
    gram = float_array(floats, ints, F_GRAM)
    q = components[len(components) - 1]
    gradient = np.zeros(len(x))
    value = fixed_prior(x, float_array(floats, ints, F_FIXED_MU), float_array(floats, ints, F_FIXED_SIGMA),
                        float_array(floats, ints, F_FIXED_NU), gradient)
    residual = float_array(floats, ints, F_RESIDUAL)
    log_sigma = x[p]
    prior, d_prior = half_t_log_density(log_sigma, residual[0], residual[1])
    value += prior
    gradient[p] += d_prior
    # every term's D = diag(τ) L, with dL/dw for the chain rule
    sd_nu, sd_scale = float_array(floats, ints, F_SD_NU), float_array(floats, ints, F_SD_SCALE)
    eta = float_array(floats, ints, F_ETA)
    widest = 1
    for t in range(n_terms):
        widest = max(widest, columns[t])
    pairs = widest * (widest - 1) // 2
    D = np.zeros((n_terms, widest, widest))
    dLs = np.zeros((n_terms, max(pairs, 1), widest, widest))
    offsets = np.zeros(n_terms + 1, dtype=np.int64)
    offsets[0] = p + 1
    column = 0
    for t in range(n_terms):
        nc, o = columns[t], offsets[t]
        m = nc * (nc - 1) // 2
        offsets[t + 1] = o + nc + m
        L, dL, prior = term_prior(x, o, nc, eta[t], sd_nu[column:column + nc], sd_scale[column:column + nc], gradient)
        value += prior
        for a in range(nc):
            for c in range(a + 1):
                D[t, a, c] = math.exp(x[o + a]) * L[a, c]
        dLs[t, :m, :nc, :nc] = dL
        column += nc
    # cross-products of the residual r = y − Xβ, with δ = β − β₀
    XtX, Xty = float_array(floats, ints, F_XTX), float_array(floats, ints, F_XTY)
    ZtX, Zty = float_array(floats, ints, F_ZTX), float_array(floats, ints, F_ZTY)
    delta = x[:p] - float_array(floats, ints, F_REFERENCE)
    Xr = np.empty(p)
    rr = float_array(floats, ints, F_YTY)[0]
    for j in range(p):
        total = 0.0
        for k in range(p):
            total += XtX[j * p + k] * delta[k]
        Xr[j] = Xty[j] - total
        rr -= delta[j] * (Xty[j] + Xr[j])
    s = np.empty(q)
    for i in range(q):
        total = 0.0
        for k in range(p):
            total += ZtX[i * p + k] * delta[k]
        s[i] = Zty[i] - total
    sigma2 = math.exp(2.0 * log_sigma)
    largest = 0
    for k in range(len(components) - 1):
        largest = max(largest, components[k + 1] - components[k])
    AT, C, Cinv = np.empty((largest, largest)), np.empty((largest, largest)), np.empty((largest, largest))
    tv, w = np.empty(largest), np.empty(largest)
    b, g = np.empty(q), np.empty(q)
    H = np.zeros((n_terms, widest, widest))   # d/dD of every term, summed over its levels
    log_det, sb, bAb, trace = 0.0, 0.0, 0.0, 0.0
    determinant = 1.0   # |M| not yet in log_det: one logarithm per many pivots instead of one per pivot
    for k in range(len(components) - 1):
        s0, m = components[k], components[k + 1] - components[k]
        A = gram[gram_starts[k]:gram_starts[k + 1]].reshape((m, m))
        for j in range(m):   # AT = A T, T's column j holding D[t, a, c] at rows us + a, a ≥ c
            t, c, us = term_of[s0 + j], column_of[s0 + j], unit_of[s0 + j] - s0
            for i in range(m):
                total = 0.0
                for a in range(c, columns[t]):
                    total += A[i, us + a] * D[t, a, c]
                AT[i, j] = total
        for i in range(m):   # M = T'AT + σ²I, its lower triangle, factorised in place
            t, c, us = term_of[s0 + i], column_of[s0 + i], unit_of[s0 + i] - s0
            for j in range(i + 1):
                total = 0.0
                for a in range(c, columns[t]):
                    total += D[t, a, c] * AT[us + a, j]
                C[i, j] = total
            C[i, i] += sigma2
        for j in range(m):
            total = C[j, j]
            for r in range(j):
                total -= C[j, r] * C[j, r]
            if not total > 0.0:
                return -np.inf, gradient
            C[j, j] = math.sqrt(total)
            determinant *= total
            if not 1e-150 < determinant < 1e150:
                log_det += math.log(determinant)
                determinant = 1.0
            for i in range(j + 1, m):
                total = C[i, j]
                for r in range(j):
                    total -= C[i, r] * C[j, r]
                C[i, j] = total / C[j, j]
        for j in range(m):   # T's, then w = M⁻¹ T's by two triangular solves
            t, c, us = term_of[s0 + j], column_of[s0 + j], unit_of[s0 + j]
            total = 0.0
            for a in range(c, columns[t]):
                total += D[t, a, c] * s[us + a]
            tv[j] = total
        for i in range(m):
            total = tv[i]
            for r in range(i):
                total -= C[i, r] * w[r]
            w[i] = total / C[i, i]
        for i in range(m - 1, -1, -1):
            total = w[i]
            for r in range(i + 1, m):
                total -= C[r, i] * w[r]
            w[i] = total / C[i, i]
        for i in range(m):   # b̂ = T w
            t, a, us = term_of[s0 + i], column_of[s0 + i], unit_of[s0 + i] - s0
            total = 0.0
            for c in range(a + 1):
                total += D[t, a, c] * w[us + c]
            b[s0 + i] = total
        for i in range(m):
            Ab = 0.0
            for j in range(m):
                Ab += A[i, j] * b[s0 + j]
            sb += s[s0 + i] * b[s0 + i]
            bAb += b[s0 + i] * Ab
            g[s0 + i] = (s[s0 + i] - Ab) / sigma2
        for j in range(m):   # C⁻¹, lower triangular
            Cinv[j, j] = 1.0 / C[j, j]
            for i in range(j + 1, m):
                total = 0.0
                for r in range(j, i):
                    total -= C[i, r] * Cinv[r, j]
                Cinv[i, j] = total / C[i, i]
        for i in range(m):   # M⁻¹ = C⁻ᵀC⁻¹ into C's storage (lower triangle), which is no longer needed
            for j in range(i + 1):
                total = 0.0
                for r in range(i, m):
                    total += Cinv[r, i] * Cinv[r, j]
                C[i, j] = total
            trace += C[i, i]
        # d/dT = g g'T − A T M⁻¹ at the entries of T's blocks: row us + a, column us + c, c ≤ a
        for i in range(m):
            t, a, us = term_of[s0 + i], column_of[s0 + i], unit_of[s0 + i] - s0
            for c in range(a + 1):
                jc = us + c
                tg = 0.0
                for e in range(c, columns[t]):
                    tg += D[t, e, c] * g[s0 + us + e]
                total = 0.0
                for j in range(m):
                    total += AT[i, j] * (C[j, jc] if j >= jc else C[jc, j])
                H[t, a, c] += g[s0 + i] * tg - total
    log_det += math.log(determinant)
    value += -(n - q) * log_sigma - 0.5 * log_det - 0.5 * (rr - sb) / sigma2
    for j in range(p):
        total = 0.0
        for i in range(q):
            total += ZtX[i * p + j] * b[i]
        gradient[j] += (Xr[j] - total) / sigma2
    gradient[p] += (rr - 2.0 * sb + bAb) / sigma2 - (n - q) - sigma2 * trace
    for t in range(n_terms):
        nc, o = columns[t], offsets[t]
        m = nc * (nc - 1) // 2
        for a in range(nc):
            tau = math.exp(x[o + a])
            for c in range(a + 1):
                gradient[o + a] += H[t, a, c] * D[t, a, c]
                for r in range(m):
                    gradient[o + nc + r] += H[t, a, c] * tau * dLs[t, r, a, c]
    return value, gradient
