"""How the numerical work runs: BLAS threads and the libraries' warnings.

The engines evaluate small dense systems thousands of times; a multithreaded
BLAS spends far more time synchronising threads than computing on them
(measured: a 3×3 triangular solve 17 µs single-threaded, 2.4 ms with two
OpenBLAS threads; a 1,144-row Cholesky 30× slower on a busy machine), so
numerical work runs with one BLAS thread per process, and parallelism comes
from separate processes (chains, workers). Only a dense system large enough
to share out takes more threads, and only as many as there are idle cores at
that moment (``idle_core_threads``).

The limit is set through threadpoolctl, which finds the BLAS libraries by
reading the process's list of loaded libraries: 5-15 ms, searched again after
every import that could have loaded one. The command line starts its process
before any BLAS is loaded, so it sets the BLAS libraries' own thread variables
instead (``blas_single_threaded_from_start``; not where the user set any of
them): every BLAS then loads with one thread, and one thread needs no search;
only ``idle_core_threads`` still searches, where it raises the threads.

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
import os
import sys
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


# The variables by which OpenBLAS, MKL, BLIS and Apple's Accelerate take their number of threads as they load.
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "BLIS_NUM_THREADS", "VECLIB_MAXIMUM_THREADS")
# Whether every BLAS of the process loaded with one thread (``blas_single_threaded_from_start``), and how many
# ``idle_core_threads`` blocks have raised the threads since.
_single_threaded = False
_raised = 0


def blas_single_threaded_from_start() -> None:
    """For a process that has loaded no BLAS yet (the command line as it starts): every BLAS it loads starts
    with one thread, through ``BLAS_THREAD_VARIABLES``, unless the user set any of them or NumPy is loaded.

    The variables are also inherited by the processes it starts (workers, chains), which run their numerical
    work with one thread anyway.
    """
    global _single_threaded
    if "numpy" in sys.modules or any(name in os.environ for name in BLAS_THREAD_VARIABLES):
        return
    for name in BLAS_THREAD_VARIABLES:
        os.environ[name] = "1"
    _single_threaded = True


def _one_thread():
    """A block with one BLAS thread: nothing to do where every BLAS loaded with one and none was raised."""
    if _single_threaded and not _raised:
        return contextlib.nullcontext()
    return _blas_controller().limit(limits=1, user_api="blas")


@contextlib.contextmanager
def numerical_work():
    """BLAS limited to one thread and the libraries' warnings and log chatter silenced, for the block."""
    levels = {name: logging.getLogger(name).level for name in _QUIET_LOGGERS}
    with _one_thread(), warnings.catch_warnings():
        for message, category, module in _SILENCED:
            warnings.filterwarnings("ignore", message=message, category=category, module=module)
        for name in _QUIET_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)
        try:
            yield
        finally:
            for name, level in levels.items():
                logging.getLogger(name).setLevel(level)


@contextlib.contextmanager
def idle_core_threads(limit: int):
    """BLAS limited, for the block, to ``limit`` threads or to the cores idle right now if fewer (at least 1).

    OpenBLAS threads wait for each other by spinning: a thread that shares its
    core with another busy process stalls the others. REML fits with a
    1,144-row dense block (InstEval) measured 2–20× slower on two threads than
    on one while other jobs ran on the two cores; on an idle machine two
    threads factor that block in 25 ms against 35 ms on one. So the cores are
    counted at every call: the tasks the kernel is running or about to run at
    this instant (Linux's /proc/loadavg, which counts the caller too) leave the
    rest idle. Called once per evaluation of a criterion, a job that starts on
    another core costs at most the one evaluation under way. Where the count
    is not available, one thread.
    """
    global _raised
    threads = min(limit, _idle_cores() + 1)
    if threads <= 1:
        yield
        return
    with _blas_controller().limit(limits=threads, user_api="blas"):
        _raised += 1
        try:
            yield
        finally:
            _raised -= 1


@contextlib.contextmanager
def one_blas_thread():
    """BLAS limited to one thread for the block, whatever limit the caller set (or none: a Python caller's own
    default of one thread per core)."""
    with _one_thread():
        yield


# threadpoolctl's view of the process's BLAS libraries, and len(sys.modules) when it was taken
_controller = None
_controller_modules = -1


def _blas_controller():
    """threadpoolctl's controller of the loaded BLAS libraries, searched for again only after an import.

    The search takes ~8 ms (threadpoolctl inspects every shared library of the
    process), and threads are limited once for a command and again in every
    fit; setting a limit through a controller already found takes 0.4 ms. A
    library loaded since the last search could bring a BLAS of its own, so the
    search runs again whenever the number of loaded modules has changed. At
    worst (a module unloaded and another loaded in between) a new BLAS keeps
    its own threads, which costs speed, never a result.
    """
    global _controller, _controller_modules
    if _controller is None or _controller_modules != len(sys.modules):
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
        _controller_modules = len(sys.modules)
    return _controller


def _idle_cores() -> int:
    """Cores of this process that no task but the caller is running on at this instant; 0 where unknown."""
    try:
        with open("/proc/loadavg") as handle:
            running = int(handle.read().split()[3].split("/")[0])
        cores = len(os.sched_getaffinity(0))
    except (OSError, ValueError, IndexError, AttributeError):
        return 0
    return max(cores - running, 0)


def one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """``warnings.showwarning`` for the command line: one line naming where the warning arose."""
    import sys
    from pathlib import Path

    where = Path(filename).name
    print(f"bayesrepro: warning: {' '.join(str(message).split())} ({category.__name__} in {where}:{lineno})",
          file=file or sys.stderr)
