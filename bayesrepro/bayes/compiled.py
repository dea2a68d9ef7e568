"""Compiling the fast path's density once: per process in memory, across processes on disk.

The C entry points of ``density.py`` are compiled the first time a process
needs them and kept for the life of the process; the packed data array is
their input, so a refit with other data, another prior or another formula
reuses them. numba's file cache keeps the machine code between processes:
next to the package when its ``__pycache__`` is writable, else in the user's
cache directory (numba's own fallback, or ``NUMBA_CACHE_DIR``). When no cache
location is usable, or the cache cannot be read or written, the code is
compiled in memory instead, with a warning: the cache only ever saves time.
Whoever waits more than two seconds for compiled code is told why on stderr
(``compile_notice``), whether or not progress is shown.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import warnings
from dataclasses import dataclass
from typing import Callable, TypeVar

import numpy as np

T = TypeVar("T")

COMPILE_NOTE_AFTER = 2.0  # seconds of waiting before the user is told why nothing happens


@dataclass(frozen=True)
class EntryPoints:
    logp: object     # numba CFunc: int32(uint64 dim, double* x, double* grad, double* logp, void* data)
    expand: object   # numba CFunc: int32(uint64 dim, uint64 n_out, double* x, double* out, void* data)
    small_block_draws: object  # numba function of ``density.small_block_draws`` (effect draws)


def fast_density(stats, priors):
    """The posterior of the fast path over its unconstrained SDs, ready for ``nuts.sample_density``."""
    from . import density
    from .nuts import CompiledDensity
    from .priors import RESIDUAL

    entry = entry_points()
    data = density.pack(stats, priors)
    data.flags.writeable = False  # the sampler's threads read it through a raw pointer
    components = [*stats.group_names, RESIDUAL]
    return CompiledDensity(
        n_dim=len(components),
        logp=entry.logp,
        expand=entry.expand,
        data=data,
        variables=density.expanded_variables(stats, priors),
        initial_point=functools.partial(_jittered, density.initial_centre(stats, priors)),
        dims={"shares": ("component",)},
        coords={"component": components},
    )


def entry_points() -> EntryPoints:
    """The compiled entry points (compiled or loaded from the cache on the first call of a process)."""
    if _compiled.cache_info().currsize:
        return _compiled()
    with compile_notice():
        return _compiled()


@contextlib.contextmanager
def compile_notice():
    """One note, logged (a stderr line on the command line), if the block (compiling, or loading compiled code) lasts
    over ``COMPILE_NOTE_AFTER`` s."""
    timer = threading.Timer(COMPILE_NOTE_AFTER, _note_compiling)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


@functools.cache
def _compiled() -> EntryPoints:
    return compile_cached(_compile)


def compile_cached(compile: Callable[[bool], T]) -> T:
    """``compile(cache=True)``; where numba's cache cannot be used, ``compile(cache=False)`` and a warning.

    numba's cache fails when no location is writable ("no locator available") or a
    cache file cannot be read or written; an error of the code itself raises again
    from the second call.
    """
    try:
        return compile(True)
    except Exception as error:
        from ..errors import BayesreproWarning

        compiled = compile(False)
        warnings.warn(
            f"the compiled posterior density is not cached ({error}); every process compiles it again. "
            "Set NUMBA_CACHE_DIR to a writable directory to keep it.",
            BayesreproWarning,
        )
        return compiled


def c_signatures():
    """numba signatures of the two C entry points a ``nuts.CompiledDensity`` hands to the sampler."""
    from numba import types

    pointer = types.CPointer(types.float64)
    logp = types.int32(types.uint64, pointer, pointer, pointer, types.voidptr)
    expand = types.int32(types.uint64, types.uint64, pointer, pointer, types.voidptr)
    return logp, expand


def _compile(cache: bool) -> EntryPoints:
    import numba
    from numba import types

    from . import density

    logp_signature, expand_signature = c_signatures()
    matrix, vector = types.float64[:, ::1], types.float64[::1]
    draws_signature = matrix(matrix, types.float64[:, :, ::1], vector, matrix, matrix, matrix, vector, matrix)
    options = dict(cache=cache, **density.JIT_OPTIONS)
    return EntryPoints(
        logp=numba.cfunc(logp_signature, **options)(density.logp_entry),
        expand=numba.cfunc(expand_signature, **options)(density.expand_entry),
        small_block_draws=numba.njit(draws_signature, **options)(density.small_block_draws),
    )


def _jittered(centre: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    return centre + rng.uniform(-1.0, 1.0, centre.size)


def _note_compiling() -> None:
    logging.getLogger("bayesrepro").info("loading the compiled posterior density (compiled on its first use, later "
                                         "loaded from numba's cache)")
