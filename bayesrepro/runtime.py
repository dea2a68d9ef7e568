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
divergences, boundary fits). Floating-point warnings (invalid value, overflow,
division by zero) are silenced only where a library raises them: in the
package's own code they point at a number that may be wrong, so they are
shown (the command line prints each as one ``bayesrepro: warning:`` line).
"""

from __future__ import annotations

import contextlib
import logging
import warnings

# modules other than the package's own
_LIBRARIES = r"(?!bayesrepro\b)"
# (message regex, category, module regex) silenced during numerical work
_SILENCED = (
    (".*BLAS.*", Warning, ""),
    (".*", FutureWarning, ""),
    (".*", DeprecationWarning, ""),
    ("overflow encountered", RuntimeWarning, _LIBRARIES),
    ("invalid value encountered", RuntimeWarning, _LIBRARIES),
    ("divide by zero encountered", RuntimeWarning, _LIBRARIES),
    ("All-NaN slice encountered", RuntimeWarning, _LIBRARIES),
    # PSIS-LOO's Pareto-k warning: the comparison reports it in its own words (a note)
    ("Estimated shape parameter of Pareto", UserWarning, ""),
)
_QUIET_LOGGERS = ("pymc", "pytensor", "arviz", "bambi", "nutpie", "py4j", "numba")


@contextlib.contextmanager
def numerical_work(threads: int = 1):
    """BLAS limited to ``threads`` and the libraries' warnings and log chatter silenced, for the block."""
    from threadpoolctl import threadpool_limits

    levels = {name: logging.getLogger(name).level for name in _QUIET_LOGGERS}
    with threadpool_limits(limits=threads, user_api="blas"), warnings.catch_warnings():
        for message, category, module in _SILENCED:
            warnings.filterwarnings("ignore", message=message, category=category, module=module)
        for name in _QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)
        try:
            yield
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command line: one line naming where the warning arose."""
    import sys
    from pathlib import Path

    where = Path(filename).name
    print(f"bayesrepro: warning: {' '.join(str(message).split())} ({category.__name__} in {where}:{lineno})",
          file=file or sys.stderr)
