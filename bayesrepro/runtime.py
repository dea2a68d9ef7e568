"""How the numerical work runs: BLAS threads and the libraries' warnings.

The engines evaluate small dense systems thousands of times; a multithreaded
BLAS spends far more time synchronising threads than computing on them
(measured: a 3×3 triangular solve 17 µs single-threaded, 2.4 ms with two
OpenBLAS threads; a 1,144-row Cholesky 30× slower on a busy machine), so
numerical work runs with one BLAS thread per process, and parallelism comes
from separate processes (chains, workers).

The libraries underneath (PyTensor, PyMC, ArviZ, NumPy) warn about things a
user cannot act on: deprecations, BLAS detection, overflow in rejected NUTS
proposals during early tuning. Those are silenced here, in one place; what
matters to a user is reported by the package itself (convergence, R-hat, ESS,
divergences, boundary fits).
"""

from __future__ import annotations

import contextlib
import logging
import warnings

# (message regex, category) pairs silenced during numerical work
_SILENCED = (
    (".*BLAS.*", Warning),
    (".*", FutureWarning),
    (".*", DeprecationWarning),
    ("overflow encountered", RuntimeWarning),
    ("invalid value encountered", RuntimeWarning),
    ("divide by zero encountered", RuntimeWarning),
    # PSIS-LOO's Pareto-k warning: the comparison reports it in its own words (a note)
    ("Estimated shape parameter of Pareto", UserWarning),
)
_QUIET_LOGGERS = ("pymc", "pytensor", "arviz", "bambi", "nutpie", "py4j", "numba")


@contextlib.contextmanager
def numerical_work(threads: int = 1):
    """BLAS limited to ``threads`` and the libraries' warnings and log chatter silenced, for the block."""
    from threadpoolctl import threadpool_limits

    levels = {name: logging.getLogger(name).level for name in _QUIET_LOGGERS}
    with threadpool_limits(limits=threads, user_api="blas"), warnings.catch_warnings():
        for message, category in _SILENCED:
            warnings.filterwarnings("ignore", message=message, category=category)
        for name in _QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)
        try:
            yield
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)
