"""The Gaussian random-intercept posterior's log density and its gradient over the unconstrained SDs, in numba.

The random effects are integrated out (``marginal.py``): the density reads the
marginal statistics and the prior parameters from the arrays of
``compiled_density.pack`` (``gaussian_model`` packs them), so one compiled
function serves every model structure, data set and prior. ``gaussian_logp`` and
``gaussian_expand`` are the functions ``compiled_sampler`` wraps for the sampler;
every kernel they call, the effect draws' included, lives in this one file, whose
digest keys the cached machine code. Only the wrappers, the marginal likelihood's
C function (which ``gaussian_logp`` calls at the address packed with the data) and
the effect draws are cached (the kernels are compiled into them), so an unusable or
broken cache falls back to compiling in memory in one place,
``compiled_cache.compile_cached``. ``gaussian_compile`` makes them ready.

Unconstrained coordinates x, one per component (factors in formula order, then
the residual), and their Jacobians:

* half-normal SD priors ("scaled", "bambi"): a factor's σ_g = s_g softplus(x_g),
  s_g its prior scale, log|dσ_g/dx_g| = log s_g + log sigmoid(x_g); the residual
  σ = exp(x). Below the prior scale softplus is exp, so the long left tail of a
  weakly identified facet's log σ is kept, but above it the half-normal prior is
  a unit Gaussian wall in x rather than the super-exponential wall
  exp(−e^{2x}/2s²) of the log transform, on which a step size tuned to that
  long tail diverged (1 run in 6–10 on the annotation G-study at acceptance
  0.8–0.9).
* "r2d2": x_0 = log τ and z = x_1..x_{C−1}, the shares ω = softmax(z, −Σz)
  (PyMC's simplex transform, log|J| = log C + Σ log ω_c), σ_c = τ √ω_c.

Mapped back to PyMC's coordinates (log σ; log τ and the simplex), the density
equals that of PyMC's model of ``gaussian_model.py`` plus the log-Jacobian between
the two, which the tests check to rounding.

Gradient of the marginal log-likelihood (notation of ``marginal.py``), in
η = log SDs. With ρ = σ_a²/σ², w_k = ρ/(1 + n_k ρ), D = diag(scale),
T = I + D A D = L L', M = T⁻¹, v = D u, y = M v, and for a block J of columns
sharing one scale (a factor's levels; every column for σ):

    ∂ log|T| / ∂ log scale_J = 2 Σ_J (1 − M_jj)      (T − I = D A D, so M (T − I) = I − M)
    ∂ v'Mv   / ∂ log scale_J = 2 Σ_J y_j²
    ∂ log|T| / ∂ w_k = −tr(M D G_k D),   ∂ v'Mv / ∂ w_k = −2 y'D g_k + y'D G_k D y
    ∂ w_k / ∂ log ρ = w_k (1 − n_k w_k),  ∂ log ρ / ∂(η_a, η_σ) = (2, −2)

M = X'X with X = L⁻¹: with the Cholesky factor about 2s³/3 multiply-adds per
evaluation, s the size of the small block.
"""

from __future__ import annotations

import functools
import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from ..compiled_cache import compile_cached
from .compiled_density import compile_notice, float_array, int_array

# the arrays of ``pack``. F_PRIOR: the SD scales (components in formula order), the residual's ν, then the
# "r2d2" prior's ν, scale and concentration; F_FIXED_VAR: the fixed coefficients' prior variances; then the
# marginal statistics, F_TOTALS holding the number of observations and r'r. I_FAMILY: the prior family;
# I_SLOT_COMPONENT: the component in every slot of the likelihood; I_REST_SIZES: the levels of the small block's factors;
# I_MARGINAL: the address of the marginal likelihood's machine code (``compiled_marginal``)
F_PRIOR, F_FIXED_VAR, F_COUNTS, F_MULTIPLICITY, F_H, F_WBR, F_SMALL_G, F_WBWB, F_G, F_TOTALS = range(10)
I_FAMILY, I_SLOT_COMPONENT, I_REST_SIZES, I_MARGINAL = range(4)
HALF_NORMAL, R2D2 = 0, 1

LOG_2PI = math.log(2.0 * math.pi)
# reassociation lets LLVM vectorise the dot products; no "nnan"/"ninf": the kernels test for both
JIT_OPTIONS = dict(nogil=True, fastmath={"reassoc", "contract"}, error_model="numpy")
INNER = dict(JIT_OPTIONS, no_cpython_wrapper=True, no_cfunc_wrapper=True)
# What the first run after an installation compiles (see benchmarks/README.md) is kept small:
# * arrays are copied and scaled element by element: a whole-array assignment (``T[:, :] = A``) or
#   arithmetic (``a * b``) makes numba compile its shape-mismatch error, with the string formatting of
#   the shapes, several seconds of compiling for code that never runs;
# * every numba function called from another is compiled on its own (optimised, turned into machine code)
#   and again, linked in, in each caller up to the sampler's C entry point: ``gaussian_logp`` and
#   ``gaussian_expand`` are inlined into those entry points by numba instead (``inline="always"``), one
#   level less. Inlining ``marginal_loglik_grad`` too saved 0.4 CPU-s more but made each evaluation 5-17 %
#   slower on the annotation G-study; inlining the inner kernels made typing the one large function cost
#   more than it saved. The largest, ``marginal_loglik_grad``, is a C function of its own, which the entry
#   point calls through its address (packed with the data): its code is optimised and turned into machine
#   code once, not once on its own and again inside the entry point;
# * the kernels only ever called from other numba functions (``INNER``) are compiled without the Python and
#   C wrappers numba otherwise builds (and optimises, and turns into machine code) for every function.


@numba.njit(**INNER)
def _cholesky(a) -> bool:
    """In-place lower Cholesky factor (lower triangle read and written); False if not positive definite.

    Column by column; the dot products of four rows share the loads of row j.
    """
    n = a.shape[0]
    for j in range(n):
        d = a[j, j]
        for k in range(j):
            d -= a[j, k] * a[j, k]
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        a[j, j] = d
        inv = 1.0 / d
        i = j + 1
        while i + 3 < n:
            v0, v1, v2, v3 = a[i, j], a[i + 1, j], a[i + 2, j], a[i + 3, j]
            for k in range(j):
                ajk = a[j, k]
                v0 -= a[i, k] * ajk
                v1 -= a[i + 1, k] * ajk
                v2 -= a[i + 2, k] * ajk
                v3 -= a[i + 3, k] * ajk
            a[i, j], a[i + 1, j], a[i + 2, j], a[i + 3, j] = v0 * inv, v1 * inv, v2 * inv, v3 * inv
            i += 4
        while i < n:
            v = a[i, j]
            for k in range(j):
                v -= a[i, k] * a[j, k]
            a[i, j] = v * inv
            i += 1
    return True


@numba.njit(**INNER)
def _inverse_from_cholesky(L, X, M):
    """M = (L L')⁻¹ = X'X with X = L⁻¹, both built by row updates four rows at a time (they vectorise)."""
    n = L.shape[0]
    X[:, :] = 0.0  # the zeros above the diagonal let the unrolled updates run over whole row prefixes
    row = np.empty(n)
    for i in range(n):  # row i of X from the rows above it: L[i, :i+1] X[:i+1, :] = e_i'
        row[: i + 1] = 0.0
        row[i] = 1.0
        k = 0
        while k + 3 < i:
            a, b, c, d = L[i, k], L[i, k + 1], L[i, k + 2], L[i, k + 3]
            for j in range(k + 4):
                row[j] -= a * X[k, j] + b * X[k + 1, j] + c * X[k + 2, j] + d * X[k + 3, j]
            k += 4
        while k < i:
            a = L[i, k]
            for j in range(k + 1):
                row[j] -= a * X[k, j]
            k += 1
        inv = 1.0 / L[i, i]
        for j in range(i + 1):
            X[i, j] = row[j] * inv
    M[:, :] = 0.0
    k = 0
    while k + 3 < n:  # lower triangle of Σ_k x_k x_k', x_k the rows of X
        for i in range(k + 4):
            a, b, c, d = X[k, i], X[k + 1, i], X[k + 2, i], X[k + 3, i]
            for j in range(i + 1):
                M[i, j] += a * X[k, j] + b * X[k + 1, j] + c * X[k + 2, j] + d * X[k + 3, j]
        k += 4
    while k < n:
        for i in range(k + 1):
            a = X[k, i]
            for j in range(i + 1):
                M[i, j] += a * X[k, j]
        k += 1
    for i in range(n):
        for j in range(i):
            M[j, i] = M[i, j]


@numba.njit(**INNER)
def _factor_small_block(wbwb, G, wbr, g, w, scale, T, u) -> bool:
    """T = I + D (W_b'W_b − Σ_k w_k G_k) D, factored in place (lower Cholesky); u = W_b'r − Σ_k w_k g_k."""
    s = wbwb.shape[0]
    for i in range(s):
        u[i] = wbr[i]
        for j in range(i + 1):
            T[i, j] = wbwb[i, j]
    for k in range(w.shape[0]):
        wk = w[k]
        for i in range(s):
            u[i] -= wk * g[k, i]
            for j in range(i + 1):
                T[i, j] -= wk * G[k, i, j]
    for i in range(s):
        for j in range(i + 1):
            T[i, j] *= scale[i] * scale[j]
        T[i, i] += 1.0
    return _cholesky(T)


@numba.njit(**INNER)
def _solve_lower(L, b):
    for i in range(b.shape[0]):
        acc = b[i]
        for k in range(i):
            acc -= L[i, k] * b[k]
        b[i] = acc / L[i, i]


@numba.njit(**INNER)
def _solve_upper_transposed(L, b):
    """b ← L⁻ᵀ b."""
    for i in range(b.shape[0] - 1, -1, -1):
        acc = b[i]
        for k in range(i + 1, b.shape[0]):
            acc -= L[k, i] * b[k]
        b[i] = acc / L[i, i]


_MARGINAL_SIGNATURE = types.int64(types.int64, types.CPointer(types.float64), types.CPointer(types.float64),
                                  types.CPointer(types.float64), types.CPointer(types.float64), types.int64,
                                  types.CPointer(types.int64), types.int64)


@functools.cache
def compiled_marginal():
    """``marginal_loglik_grad`` as a C function (``_MARGINAL_SIGNATURE``), compiled or loaded from numba's cache
    once per process; ``gaussian_logp`` calls it at the address packed in ``ints``."""
    with compile_notice():
        return compile_cached(_compile_marginal)


def _compile_marginal(cache: bool):
    return numba.cfunc(_MARGINAL_SIGNATURE, cache=cache, **JIT_OPTIONS)(marginal_loglik_grad)


def marginal_in_cache() -> bool | None:
    """Whether numba's cache holds the compiled marginal likelihood of this source; None where it cannot tell (no
    usable cache location, or a numba whose cache is organised otherwise)."""
    try:  # what ``numba.cfunc(..., cache=True)`` does before it compiles
        from numba.core.caching import FunctionCache
        from numba.core.compiler_lock import global_compiler_lock
        from numba.core.registry import cpu_target

        with global_compiler_lock:
            return FunctionCache(marginal_loglik_grad).load_overload(_MARGINAL_SIGNATURE,
                                                                     cpu_target.target_context) is not None
    except Exception:
        return None


@intrinsic
def _call_marginal(typingctx, address, eta, grad, value, floats, ints):
    """``marginal_loglik_grad``'s C function at ``address`` called on the data of C-contiguous vectors."""
    vectors = zip((eta, grad, value, floats, ints), (types.float64,) * 4 + (types.int64,))
    if not (isinstance(address, types.Integer) and all(
            isinstance(a, types.Array) and a.ndim == 1 and a.layout == "C" and a.dtype == dtype for a, dtype in vectors)):
        return None

    def codegen(context, builder, signature, args):
        i64, double_p = ir.IntType(64), ir.DoubleType().as_pointer()
        function_type = ir.FunctionType(i64, [i64, double_p, double_p, double_p, double_p, i64, i64.as_pointer(), i64])
        eta_, grad_, value_, floats_, ints_ = (context.make_array(t)(context, builder, v)
                                               for t, v in zip(signature.args[1:], args[1:]))
        function = builder.inttoptr(args[0], function_type.as_pointer())
        return builder.call(function, [builder.extract_value(eta_.shape, 0), eta_.data, grad_.data, value_.data,
                                       floats_.data, floats_.nitems, ints_.data, ints_.nitems])

    return types.int64(address, eta, grad, value, floats, ints), codegen


def marginal_loglik_grad(n, eta_, grad_, value_, floats_, n_floats, ints_, n_ints):
    """Marginal log-likelihood at η = (log σ, log σ_dominant, log σ of each other factor) and its gradient.

    Compiled as a C function (``compiled_marginal``): η and the gradient are n doubles at ``eta_`` and
    ``grad_``, the packed arrays at ``floats_`` and ``ints_``; the value is written to ``value_[0]``. Returns 1,
    or 0 where T is numerically not positive definite (the value is then −inf).
    """
    eta = numba.carray(eta_, (n,))
    grad = numba.carray(grad_, (n,))
    floats = numba.carray(floats_, (n_floats,))
    ints = numba.carray(ints_, (n_ints,))
    result = numba.carray(value_, (1,))
    rest_sizes = int_array(ints, I_REST_SIZES)
    fixed_var = float_array(floats, ints, F_FIXED_VAR)
    counts = float_array(floats, ints, F_COUNTS)
    multiplicity = float_array(floats, ints, F_MULTIPLICITY)
    h = float_array(floats, ints, F_H)
    wbr = float_array(floats, ints, F_WBR)
    s, n_counts, p = wbr.shape[0], counts.shape[0], fixed_var.shape[0]
    g = float_array(floats, ints, F_SMALL_G).reshape((n_counts, s))
    wbwb = float_array(floats, ints, F_WBWB).reshape((s, s))
    G = float_array(floats, ints, F_G).reshape((n_counts, s, s))
    totals = float_array(floats, ints, F_TOTALS)
    n_obs, rr = totals[0], totals[1]
    s2 = math.exp(2.0 * eta[0])
    rho = math.exp(2.0 * (eta[1] - eta[0]))

    w = np.empty(n_counts)
    logdet_dom = 0.0
    dlogdet_dom = 0.0  # ∂/∂ log ρ
    quad_dom = 0.0
    for k in range(n_counts):
        w[k] = rho / (1.0 + counts[k] * rho)
        logdet_dom += multiplicity[k] * math.log1p(counts[k] * rho)
        dlogdet_dom += multiplicity[k] * counts[k] * w[k]
        quad_dom += w[k] * h[k]

    scale = np.empty(s)
    inv_sigma = math.exp(-eta[0])
    for j in range(p):
        scale[j] = math.sqrt(fixed_var[j]) * inv_sigma
    col = p
    for r in range(rest_sizes.shape[0]):
        value = math.exp(eta[2 + r] - eta[0])
        for level in range(rest_sizes[r]):
            scale[col] = value
            col += 1

    L = np.empty((s, s))
    u = np.empty(s)
    if not _factor_small_block(wbwb, G, wbr, g, w, scale, L, u):
        result[0] = -np.inf
        return 0
    logdet_T = 0.0
    for i in range(s):
        logdet_T += 2.0 * math.log(L[i, i])
    y = np.empty(s)  # v = D u, then y = L⁻¹ v
    for i in range(s):
        y[i] = scale[i] * u[i]
    _solve_lower(L, y)
    zz = 0.0
    for i in range(s):
        zz += y[i] * y[i]
    _solve_upper_transposed(L, y)  # y = T⁻¹ v

    Q = rr - quad_dom - zz
    value = -0.5 * (n_obs * LOG_2PI + 2.0 * n_obs * eta[0] + logdet_dom + logdet_T + Q / s2)

    X = np.empty((s, s))
    M = np.empty((s, s))
    _inverse_from_cholesky(L, X, M)

    # scale blocks: every column for σ, each factor's levels for its σ
    sum_logdet = 0.0
    sum_zz = 0.0
    for j in range(p):
        sum_logdet += 2.0 * (1.0 - M[j, j])
        sum_zz += 2.0 * y[j] * y[j]
    col = p
    for r in range(rest_sizes.shape[0]):
        block_logdet = 0.0
        block_zz = 0.0
        for level in range(rest_sizes[r]):
            block_logdet += 2.0 * (1.0 - M[col, col])
            block_zz += 2.0 * y[col] * y[col]
            col += 1
        grad[2 + r] = -0.5 * (block_logdet - block_zz / s2)
        sum_logdet += block_logdet
        sum_zz += block_zz

    sy = np.empty(s)
    for i in range(s):
        sy[i] = scale[i] * y[i]
    dll_dlogrho = -0.5 * dlogdet_dom
    for k in range(n_counts):
        trace = 0.0
        quad = 0.0
        lin = 0.0
        for i in range(s):
            row = 0.0
            rowq = 0.0
            for j in range(s):
                row += M[i, j] * scale[j] * G[k, i, j]
                rowq += G[k, i, j] * sy[j]
            trace += scale[i] * row
            quad += sy[i] * rowq
            lin += sy[i] * g[k, i]
        dlogdet_T = -trace
        dzz = -2.0 * lin + quad
        dQ = -h[k] - dzz
        dll_dlogrho += -0.5 * w[k] * (1.0 - counts[k] * w[k]) * (dlogdet_T + dQ / s2)
    grad[1] = 2.0 * dll_dlogrho
    grad[0] = -0.5 * (2.0 * n_obs - 2.0 * Q / s2 - sum_logdet + sum_zz / s2) - 2.0 * dll_dlogrho
    result[0] = value
    return 1


@functools.cache
def compiled_small_block_draws():
    """``small_block_draws`` compiled, or loaded from numba's cache, once per process."""
    matrix, vector = types.float64[:, ::1], types.float64[::1]
    signature = matrix(matrix, types.float64[:, :, ::1], vector, matrix, matrix, matrix, vector, matrix)
    with compile_notice():
        return compile_cached(lambda cache: numba.njit(signature, cache=cache, **JIT_OPTIONS)(small_block_draws))


def small_block_draws(wbwb, G, wbr, g, w, scale, sigma, noise):
    """δ_b ~ N(P_b⁻¹ W_b'r, σ² P_b⁻¹) for every draw d (rows of w, scale, sigma, noise; see effects.py).

    With T = L L' (scaled form of P_b): δ_b = D L⁻ᵀ (L⁻¹ D u + σ ε). A row of NaN where T is not
    numerically positive definite.
    """
    n_draws, s = noise.shape
    out = np.empty((n_draws, s))
    L = np.empty((s, s))
    u = np.empty(s)
    z = np.empty(s)
    for d in range(n_draws):
        if not _factor_small_block(wbwb, G, wbr, g, w[d], scale[d], L, u):
            for i in range(s):
                out[d, i] = np.nan
            continue
        for i in range(s):
            z[i] = scale[d, i] * u[i]
        _solve_lower(L, z)
        for i in range(s):
            z[i] += sigma[d] * noise[d, i]
        _solve_upper_transposed(L, z)
        for i in range(s):
            out[d, i] = scale[d, i] * z[i]
    return out


@numba.njit(**INNER)
def _log_half_student_t(log_x, nu, sigma):
    """log HalfStudentT(x; ν, σ) + log x (the log transform's Jacobian) and its derivative in log x."""
    t = math.exp(2.0 * log_x) / (sigma * sigma)
    value = (math.log(2.0) + math.lgamma(0.5 * (nu + 1.0)) - math.lgamma(0.5 * nu) - 0.5 * math.log(nu * math.pi)
             - math.log(sigma) - 0.5 * (nu + 1.0) * math.log1p(t / nu) + log_x)
    return value, 1.0 - (nu + 1.0) * t / (nu + t)


@numba.njit(**INNER)
def _softplus(x):
    return max(x, 0.0) + math.log1p(math.exp(-abs(x)))


@numba.njit(**INNER)
def _log_softplus(x):
    return x if x < -30.0 else math.log(_softplus(x))  # log1p(eˣ) = eˣ to 1e-13 below −30


@numba.njit(**INNER)
def _log_sds(x, floats, ints, log_sd, log_omega):
    """log σ of every component (formula order) from the unconstrained x; log ω too for "r2d2"."""
    n = x.shape[0]
    if int_array(ints, I_FAMILY)[0] == HALF_NORMAL:
        prior = float_array(floats, ints, F_PRIOR)
        for c in range(n - 1):
            log_sd[c] = math.log(prior[c]) + _log_softplus(x[c])
        log_sd[n - 1] = x[n - 1]
        return
    total = 0.0
    for c in range(n - 1):
        total += x[1 + c]
    zmax = -total
    for c in range(n - 1):
        zmax = max(zmax, x[1 + c])
    norm = math.exp(-total - zmax)
    for c in range(n - 1):
        norm += math.exp(x[1 + c] - zmax)
    lse = zmax + math.log(norm)
    for c in range(n):
        log_omega[c] = (x[1 + c] if c < n - 1 else -total) - lse
        log_sd[c] = x[0] + 0.5 * log_omega[c]


@numba.njit(**JIT_OPTIONS, inline="always")  # see JIT_OPTIONS
def gaussian_logp(x, floats, ints):
    """Log posterior density (up to the evidence) at the unconstrained point x, and its gradient.

    −inf where the small block is numerically not positive definite: the sampler rejects the point.
    """
    n = x.shape[0]
    slot_component = int_array(ints, I_SLOT_COMPONENT)
    prior = float_array(floats, ints, F_PRIOR)
    grad = np.empty(n)
    for i in range(n):  # a loop, not np.zeros: one numba overload less to compile on the first run
        grad[i] = 0.0
    log_sd = np.empty(n)
    log_omega = np.empty(n)
    _log_sds(x, floats, ints, log_sd, log_omega)

    eta = np.empty(n)
    for slot in range(n):
        eta[slot] = log_sd[slot_component[slot]]
    grad_slot = np.empty(n)
    result = np.empty(1)
    ok = _call_marginal(int_array(ints, I_MARGINAL)[0], eta, grad_slot, result, floats, ints)
    value = result[0]
    if not ok:
        return value, grad
    grad_sd = np.empty(n)  # ∂ log-likelihood / ∂ log σ_c
    for slot in range(n):
        grad_sd[slot_component[slot]] = grad_slot[slot]

    if int_array(ints, I_FAMILY)[0] == HALF_NORMAL:
        for c in range(n - 1):
            # HalfNormal(σ; s) with σ = s u, u = softplus(x): log(2/π)/2 − log s − u²/2, Jacobian log s + log sigmoid(x)
            u = _softplus(x[c])
            log_sigmoid = -_softplus(-x[c])
            sigmoid = math.exp(log_sigmoid)
            value += 0.5 * math.log(2.0 / math.pi) - 0.5 * u * u + log_sigmoid
            dlog_sd = math.exp(log_sigmoid - _log_softplus(x[c]))  # ∂ log σ / ∂x = sigmoid(x) / u
            grad[c] = grad_sd[c] * dlog_sd - u * sigmoid + (1.0 - sigmoid)
        lp, dlp = _log_half_student_t(x[n - 1], prior[n], prior[n - 1])
        value += lp
        grad[n - 1] = grad_sd[n - 1] + dlp
        return value, grad

    alpha = prior[n + 3]
    lp, dlp = _log_half_student_t(x[0], prior[n + 1], prior[n + 2])
    # Dirichlet(α) of the shares with the simplex Jacobian: α Σ log ω_c + constants
    value += lp + math.lgamma(n * alpha) - n * math.lgamma(alpha) + math.log(n)
    grad[0] = dlp
    dlog_omega = np.empty(n)  # ∂ density / ∂ log ω_c
    total = 0.0
    for c in range(n):
        value += alpha * log_omega[c]
        grad[0] += grad_sd[c]
        dlog_omega[c] = alpha + 0.5 * grad_sd[c]
        total += dlog_omega[c]
    last = n - 1
    for c in range(n - 1):
        grad[1 + c] = (dlog_omega[c] - dlog_omega[last]
                       - (math.exp(log_omega[c]) - math.exp(log_omega[last])) * total)
    return value, grad


@numba.njit(**JIT_OPTIONS, inline="always")  # see JIT_OPTIONS
def gaussian_expand(x, floats, ints, out):
    """What a draw stores: σ of every component (formula order), then for "r2d2" τ and the shares ω."""
    n = x.shape[0]
    log_sd = np.empty(n)
    log_omega = np.empty(n)
    _log_sds(x, floats, ints, log_sd, log_omega)
    for c in range(n):
        out[c] = math.exp(log_sd[c])
    if int_array(ints, I_FAMILY)[0] == R2D2:
        out[n] = math.exp(x[0])
        for c in range(n):
            out[n + 1 + c] = math.exp(log_omega[c])
