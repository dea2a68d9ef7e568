"""The product of the raters' Schur complement with a block of vectors, compiled (``crossed_system.py``).

Kept apart so that numba is imported only when a Monte Carlo fit runs. The
columns are shared out between threads, as many as there are idle cores at each
call (``runtime``): each thread passes over all of W's non-zeros for its own
columns, so the threads write disjoint parts of the result.
"""

from __future__ import annotations

import functools

import numba
import numpy as np


def schur_product(indptr, indices, counts, inverse_lead, diagonal, v, out) -> None:
    """out = diag(diagonal) v − W'D⁻¹W v, with W in CSR form (``indptr``, ``indices``, ``counts``) and
    ``inverse_lead`` = 1/diag(D)."""
    from .. import runtime

    threads = max(1, min(v.shape[1], runtime._idle_cores() + 1, numba.config.NUMBA_NUM_THREADS))
    numba.set_num_threads(threads)
    _compiled()(indptr, indices, counts, inverse_lead, diagonal, v, out, threads)


def chunked_product(indptr, indices, counts, inverse_lead, diagonal, v, out, chunks):
    """``schur_product`` in one pass over W's rows (the lead levels): each row gathers t = W_i v, and t / D_i is
    scattered back to the same columns; the columns cut into ``chunks`` contiguous ranges, one a thread."""
    n_rest, m = v.shape
    for chunk in numba.prange(chunks):
        first, last = chunk * m // chunks, (chunk + 1) * m // chunks
        for j in range(n_rest):
            for c in range(first, last):
                out[j, c] = diagonal[j] * v[j, c]
        t = np.empty(last - first)
        for i in range(len(indptr) - 1):
            t[:] = 0.0
            for p in range(indptr[i], indptr[i + 1]):
                j, w = indices[p], counts[p]
                for c in range(first, last):
                    t[c - first] += w * v[j, c]
            scale = inverse_lead[i]
            for p in range(indptr[i], indptr[i + 1]):
                j, w = indices[p], counts[p] * scale
                for c in range(first, last):
                    out[j, c] -= w * t[c - first]


@functools.cache
def _compiled():
    """``chunked_product`` compiled (parallel over its chunks), or loaded from numba's cache, once per process."""
    from numba import types

    from ..compiled_cache import compile_cached

    index, vector, block = types.int64[::1], types.float64[::1], types.float64[:, ::1]
    signature = types.void(index, index, vector, vector, vector, block, block, types.int64)
    return compile_cached(lambda cache: numba.njit(signature, cache=cache, nogil=True, parallel=True)(chunked_product),
                          "the compiled Schur product of the crossed Monte Carlo fit")
