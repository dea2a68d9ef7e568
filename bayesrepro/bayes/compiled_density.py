"""A log density written as numba functions: what a model hands the sampler (``compiled_sampler``).

A model hands over a ``CompiledDensity``: the unconstrained vector it samples,
its log density and gradient as a numba function, and an ``expand`` function
that turns a point into the recorded (constrained) values. Transforms and
their Jacobians belong to the model's density; the sampler knows nothing of
them. Data reach the compiled functions as one float and one integer array
(``pack``), read back inside by position (``float_array``, ``int_array``).

Whoever waits more than two seconds for compiled code is told why on stderr
(``compile_notice``), whether or not progress is shown.

Signatures (numba, ``nogil``):
    logp(x, floats, ints) -> (float, gradient array)
    expand(x, floats, ints, out) -> None   # writes every recorded value into ``out``
"""

from __future__ import annotations

import contextlib
import logging
import math
import threading
from dataclasses import dataclass, field

import numba
import numpy as np

COMPILE_NOTE_AFTER = 2.0  # seconds of waiting before the user is told why nothing happens


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


@numba.njit(nogil=True, error_model="numpy", inline="always")
def float_array(floats, ints, k):
    """The k-th float array of ``pack``."""
    return floats[ints[2 + 2 * k] : ints[3 + 2 * k]]


@numba.njit(nogil=True, error_model="numpy", inline="always")
def int_array(ints, k):
    """The k-th integer array of ``pack``."""
    k = ints[0] + k
    return ints[ints[2 + 2 * k] : ints[3 + 2 * k]]


_waiting = threading.local()  # whether a notice is already pending or given in this thread


@contextlib.contextmanager
def notice_if_slow(message: str):
    """``message`` logged once (a stderr line on the command line) if the block lasts over ``COMPILE_NOTE_AFTER``
    s: the user is told why nothing happens only where it takes a while. A block inside another tells nothing
    more."""
    if getattr(_waiting, "active", False):
        yield
        return
    timer = threading.Timer(COMPILE_NOTE_AFTER, logging.getLogger("bayesrepro").info, [message])
    timer.daemon = True
    _waiting.active = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        _waiting.active = False


def compile_notice():
    """``notice_if_slow`` for compiling, or loading compiled code."""
    return notice_if_slow("loading the compiled posterior density (compiled on its first use, later loaded from "
                          "numba's cache)")


def posterior_mode(density: CompiledDensity) -> np.ndarray:
    """The posterior mode in the density's coordinates, searched from its initial point (zeros if it has none): a
    start and a reference point, not an estimate."""
    from scipy.optimize import minimize

    def negative(x):
        value, gradient = density.value_and_gradient(x)
        return -value, -gradient

    start = density.initial_point if density.initial_point is not None else np.zeros(density.n_dim)
    return minimize(negative, start, jac=True, method="L-BFGS-B", options={"maxiter": 2000, "gtol": 1e-6}).x
