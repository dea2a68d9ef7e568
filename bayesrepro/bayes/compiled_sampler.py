"""A model's log density (``compiled_density.CompiledDensity``) wrapped as the C entry points that
``nuts.sample_density`` samples.

nutpie calls a C function pointer for every leapfrog step from its own
threads, without the GIL: 8 µs of overhead per step, against 120-175 µs
when it calls back into Python (measured on this repository's benchmark
machine), which on binary grids would cost more than the density itself.
Everything touching nutpie's interface is in ``nuts.py``.

The wrappers are compiled the first time a process needs them and kept for the
life of the process; the packed arrays are their input, so a refit with other
data, another prior or another structure reuses them. numba's file cache keeps
the machine code between processes: next to the package when its
``__pycache__`` is writable, else in the user's cache directory (numba's own
fallback, or ``NUMBA_CACHE_DIR``). When no cache location is usable, or the
cache cannot be read or written, the code is compiled in memory instead, with a
warning: the cache only ever saves time.
"""

from __future__ import annotations

import dataclasses
import hashlib
import inspect
from functools import lru_cache
from pathlib import Path
from types import FunctionType

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from ..compiled_cache import compile_cached
from .compiled_density import CompiledDensity, compile_notice
from .nuts import sample_density
from .sampling import SamplingSettings


def sample_compiled(density: CompiledDensity, settings: SamplingSettings):
    """Sample ``density`` with nutpie's NUTS; returns a ``draws.Draws`` with every draw asked for.

    nutpie calls the C entry points around its numba functions, which read its arrays through
    a header of their addresses.
    """
    c_logp, c_expand = _c_functions(density.logp, density.expand)
    density = dataclasses.replace(density, floats=np.ascontiguousarray(density.floats, dtype=np.float64),
                                  ints=np.ascontiguousarray(density.ints, dtype=np.int64))
    floats, ints = density.floats, density.ints
    header = np.array([floats.ctypes.data, floats.size, ints.ctypes.data, ints.size], dtype=np.uint64)
    return sample_density(density, c_logp, c_expand, header, settings)


@intrinsic
def _as_pointer(typingctx, address):
    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return types.voidptr(address), codegen


_LOGP_SIGNATURE = types.int64(
    types.uint64, types.CPointer(types.double), types.CPointer(types.double), types.CPointer(types.double), types.voidptr
)
_EXPAND_SIGNATURE = types.int64(
    types.uint64, types.uint64, types.CPointer(types.double), types.CPointer(types.double), types.voidptr
)


@lru_cache(maxsize=None)
def _c_functions(logp, expand):
    """C entry points for nutpie around a model's numba functions: compiled once, then loaded from numba's cache.

    ``user_data`` points to four integers: the address and length of the float
    array, then of the integer array. Compiling the wrappers takes seconds
    (the model's code is linked into them). numba's cache keys a function on
    its bytecode and on the values it closes over, not on the functions it
    calls, so the wrappers close over a key naming the model's two functions
    with a digest of the files that define them (a model keeps all its kernels
    in one file, as ``binary_density`` does) and reach the functions
    themselves as globals. A model defined outside a file (a notebook cell) is
    compiled without the cache.
    """
    digest = _source_digest(logp, expand)
    model = f"{logp.py_func.__module__}.{logp.py_func.__qualname__}/{expand.py_func.__qualname__}@{digest}"
    templates = _wrapper_templates(model)

    def compile(cache: bool):
        names = {"logp": logp, "expand": expand}
        return tuple(
            numba.cfunc(signature, nogil=True, cache=cache)(_with_globals(template, names))
            for template, signature in zip(templates, (_LOGP_SIGNATURE, _EXPAND_SIGNATURE))
        )

    with compile_notice():
        return compile_cached(compile) if digest else compile(False)


def _wrapper_templates(model: str):
    def c_logp(dim, x_, gradient_, value_, user_data):
        model  # noqa: B018 -- in the closure, so that numba's cache tells models apart
        header = numba.carray(user_data, (4,), np.uint64)
        floats = numba.carray(_as_pointer(header[0]), (header[1],), np.float64)
        ints = numba.carray(_as_pointer(header[2]), (header[3],), np.int64)
        x = numba.carray(x_, (dim,))
        value, gradient = logp(x, floats, ints)  # noqa: F821 -- bound by ``_with_globals``
        if not np.isfinite(value):
            return 4
        out = numba.carray(gradient_, (dim,))
        for i in range(dim):
            if not np.isfinite(gradient[i]):
                return 3
            out[i] = gradient[i]
        numba.carray(value_, (1,))[0] = value
        return 0

    def c_expand(dim, n_expanded, x_, out_, user_data):
        model  # noqa: B018
        header = numba.carray(user_data, (4,), np.uint64)
        floats = numba.carray(_as_pointer(header[0]), (header[1],), np.float64)
        ints = numba.carray(_as_pointer(header[2]), (header[3],), np.int64)
        expand(numba.carray(x_, (dim,)), floats, ints, numba.carray(out_, (n_expanded,)))  # noqa: F821
        return 0

    return c_logp, c_expand


def _with_globals(function, names: dict):
    """``function`` with ``names`` added to the globals it sees."""
    return FunctionType(function.__code__, {**function.__globals__, **names}, function.__name__,
                        function.__defaults__, function.__closure__)


def _source_digest(*functions) -> str | None:
    """SHA-256 of the files that define ``functions``; None if one was not defined in a file."""
    digest = hashlib.sha256()
    for function in functions:
        path = inspect.getsourcefile(function.py_func)
        if path is None or not Path(path).is_file():
            return None
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()
