"""A log density written as numba functions, wrapped as the C entry points that ``nuts.sample_density`` samples.

A model hands over a ``CompiledDensity``: the unconstrained vector it samples,
its log density and gradient as a numba function, and an ``expand`` function
that turns a point into the recorded (constrained) values. Transforms and
their Jacobians belong to the model's density; the driver knows nothing of
them. Data reach the compiled functions as one float and one integer array
(``pack``), read back inside by position.

nutpie calls a C function pointer for every leapfrog step from its own
threads, without the GIL: 8 µs of overhead per step, against 120-175 µs
when it calls back into Python (measured on this repository's benchmark
machine), which on binary grids would cost more than the density itself.
Everything touching nutpie's interface is in ``nuts.py``.

Signatures (numba, ``nogil``):
    logp(x, floats, ints) -> (float, gradient array)
    expand(x, floats, ints, out) -> None   # writes every recorded value into ``out``
"""

from __future__ import annotations

import hashlib
import inspect
import math
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from types import FunctionType

import numba
import numpy as np
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from .compiled import compile_cached, compile_notice
from .nuts import CompiledDensity as NutsDensity, sample_density
from .sampling import SamplingSettings

INIT_JITTER = 1.0  # chains start at the model's point plus Uniform(-1, 1) on every coordinate, as PyMC's jitter


@dataclass(frozen=True)
class Variable:
    """A recorded variable: its name and the names of its dimensions (each a key of ``coords``)."""

    name: str
    dims: tuple[str, ...] = ()


@dataclass(frozen=True)
class CompiledDensity:
    logp: object              # numba dispatcher: logp(x, floats, ints) -> (value, gradient)
    expand: object            # numba dispatcher: expand(x, floats, ints, out)
    floats: np.ndarray
    ints: np.ndarray
    n_dim: int
    variables: tuple[Variable, ...]
    coords: dict[str, list[str]] = field(default_factory=dict)
    initial_point: np.ndarray | None = None  # chains start near it (zeros if None)
    low_rank_mass_matrix: bool = True        # nutpie's low-rank-corrected mass matrix (posterior correlations)

    def shape(self, variable: Variable) -> tuple[int, ...]:
        return tuple(len(self.coords[d]) for d in variable.dims)

    @property
    def n_expanded(self) -> int:
        return sum(math.prod(self.shape(v)) for v in self.variables)

    def value_and_gradient(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        """The log density and its gradient at ``x`` (from Python: checks, optimisation)."""
        x = np.ascontiguousarray(x, dtype=float)
        if not self.logp.signatures:  # its first call in this process compiles it or loads it from the cache
            with compile_notice():
                return self.logp(x, self.floats, self.ints)
        return self.logp(x, self.floats, self.ints)


def pack(floats: list[np.ndarray], ints: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Arrays concatenated into one float and one integer array; ``ints`` starts with a table of positions.

    ``ints[0]`` and ``ints[1]`` count the float and the integer arrays; then, for every float
    array and then every integer array, its start and stop (floats index ``floats``, integers
    index ``ints`` itself). A model's compiled functions read them back by position.
    """
    floats = [np.ascontiguousarray(a, dtype=np.float64).ravel() for a in floats]
    ints = [np.ascontiguousarray(a, dtype=np.int64).ravel() for a in ints]
    header = 2 + 2 * (len(floats) + len(ints))
    table, start = [len(floats), len(ints)], 0
    for a in floats:
        table += [start, start + a.size]
        start += a.size
    start = header
    for a in ints:
        table += [start, start + a.size]
        start += a.size
    packed_floats = np.concatenate(floats) if floats else np.zeros(0)
    packed_ints = np.concatenate([np.asarray(table, dtype=np.int64), *ints])
    return packed_floats, packed_ints


def sample_compiled(density: CompiledDensity, settings: SamplingSettings):
    """Sample ``density`` with nutpie's NUTS; returns a ``draws.Draws`` with every draw asked for."""
    return sample_density(c_density(density), settings)


def c_density(d: CompiledDensity) -> NutsDensity:
    """The C entry points around ``d``'s numba functions, reading its arrays through a header of their addresses."""
    c_logp, c_expand = _c_functions(d.logp, d.expand)
    floats, ints = np.ascontiguousarray(d.floats), np.ascontiguousarray(d.ints)
    header = np.array([floats.ctypes.data, floats.size, ints.ctypes.data, ints.size], dtype=np.uint64)
    start = d.initial_point if d.initial_point is not None else np.zeros(d.n_dim)

    def initial_point(rng: np.random.Generator) -> np.ndarray:
        return np.asarray(start + rng.uniform(-INIT_JITTER, INIT_JITTER, d.n_dim), dtype=np.float64)

    return NutsDensity(
        n_dim=d.n_dim, logp=c_logp, expand=c_expand, data=header,
        variables=[(v.name, d.shape(v)) for v in d.variables], initial_point=initial_point,
        dims={v.name: v.dims for v in d.variables}, coords=d.coords,
        low_rank_mass_matrix=d.low_rank_mass_matrix, keep_alive=(floats, ints),
    )


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
