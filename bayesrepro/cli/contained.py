"""The command run in a child process, so that a crash inside a compiled library ends it in one line and status 4.

A segmentation fault or an abort in native code (OpenBLAS, SuperLU, DuckDB's
engine, a compiled sampler) kills the process that runs it before Python can
say a word: the shell shows status 139 or 134 and nothing else. So the command
line forks once, as it starts, before the data are read or the numerical
libraries imported: the child runs the command as it always ran, writing to
the same stdout and stderr, and the parent only waits for it. A child that
ends normally passes its exit status on unchanged; one killed by a signal the
parent did not forward to it (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, or
SIGKILL, which is how the operating system ends a process it has no memory
for) is reported as one ``bayesrepro: error:`` line and ``EXIT_NATIVE_CRASH``.
Files are written whole or not at all (``output.py``), so a crash leaves no
partial file.

The fork costs about 5 ms of CPU per command (measured: 44 against 49 ms
for starting the command line and exiting), since at that point the process
holds little more than the interpreter and argparse. Signals sent to the parent alone
(``kill``, ``timeout``, a test harness) are forwarded to the child; a Ctrl-C
typed at a terminal reaches both, so the parent does not forward it again
(Linux tells the two apart; elsewhere every signal is forwarded).
If the parent is killed outright the child is ended too (Linux's
parent-death signal). Where ``os.fork`` is missing (Windows) the command runs
in the process itself.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from typing import Callable

from ..errors import EXIT_NATIVE_CRASH

# Signals the parent passes on to the child; a child they end ends the parent the same way.
FORWARDED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGUSR1", "SIGUSR2")
                  if hasattr(signal, name))
# Where blocked signals can be read with their sender (Linux): also the child's end (SIGCHLD).
_SIGNAL_QUEUE = all(hasattr(signal, name) for name in ("sigwaitinfo", "pthread_sigmask", "SIGCHLD"))
WATCHED = set(FORWARDED) | ({signal.SIGCHLD} if _SIGNAL_QUEUE else set())
_SI_KERNEL = 0x80   # si_code of a signal the kernel sent: a terminal's to its foreground process group
DEBUG_VARIABLE = "BAYESREPRO_DEBUG"
_PR_SET_PDEATHSIG = 1


def run_contained(command: Callable[[], int]) -> int:
    """Run ``command`` in a forked child; the parent waits and ends with the child's status.

    The parent does not return: it ends the process (``os._exit``, since it
    has nothing of its own to flush or clean up; the interpreter's tear-down
    would cost ~10 ms of every command) with the child's exit status, with
    ``EXIT_NATIVE_CRASH`` and one line where a signal it was not sent ended
    the child, or by the signal that ended the child where it was forwarded.

    Parameters
    ----------
    command : callable
        Runs the command and returns its exit status.

    Returns
    -------
    int
        In the child (or where there is no fork), ``command``'s exit status.
    """
    if not hasattr(os, "fork"):
        return command()
    for stream in (sys.stdout, sys.stderr):   # what is buffered now would otherwise be written twice
        stream.flush()
    parent = os.getpid()
    if _SIGNAL_QUEUE and signal.getsignal(signal.SIGCHLD) == signal.SIG_IGN:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)   # ignored, it would never be queued (nor the child waited for)
    # blocked before the fork, so that the parent misses neither the child's end nor a signal sent meanwhile
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, WATCHED) if _SIGNAL_QUEUE else None
    child = os.fork()
    if child == 0:
        if mask is not None:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        _end_with(parent)
        if os.environ.get(DEBUG_VARIABLE, "") not in ("", "0"):
            import faulthandler

            faulthandler.enable(all_threads=True)   # the Python stacks at a crash, on request
        return command()
    status, received = _wait_queued(child) if mask is not None else _wait_handled(child)
    os._exit(_exit_status(status, received))


def _wait_queued(child: int) -> tuple[int, set[int]]:
    """The child's wait status and the signals this process was sent, read from its queue of blocked signals.

    A signal another process sent (``kill``, ``timeout``) is forwarded to the
    child. One the kernel sent to the whole process group (Ctrl-C or a hang-up
    at the terminal: si_code SI_KERNEL) has reached the child already and is
    not sent twice.
    """
    received: set[int] = set()
    while True:
        ended, status = os.waitpid(child, os.WNOHANG)
        if ended:
            return status, received
        info = signal.sigwaitinfo(WATCHED)
        if info.si_signo == signal.SIGCHLD:
            continue
        received.add(info.si_signo)
        if info.si_code != _SI_KERNEL:
            _send(child, info.si_signo)


def _wait_handled(child: int) -> tuple[int, set[int]]:
    """The child's wait status and the signals this process was sent, each forwarded (where signals cannot be
    read from a queue: a Ctrl-C may then reach the child twice)."""
    received: set[int] = set()

    def forward(signum, frame):
        received.add(signum)
        _send(child, signum)

    for signum in FORWARDED:
        signal.signal(signum, forward)
    _, status = os.waitpid(child, 0)   # retried by Python when a handler interrupts it (PEP 475)
    return status, received


def _send(child: int, signum: int) -> None:
    try:
        os.kill(child, signum)
    except ProcessLookupError:   # it has just ended; its status says how
        pass


def _exit_status(status: int, received: set[int]) -> int:
    """The exit status that reports how the child ended (after ending this process by its signal, where
    forwarded)."""
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    signum = os.WTERMSIG(status)
    if signum in received:
        # ended by what it was sent: end this process the same way, as if there had been one process
        signal.signal(signum, signal.SIG_DFL)
        if _SIGNAL_QUEUE:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signum})
        os.kill(os.getpid(), signum)
        return 128 + signum
    with contextlib.suppress(OSError, ValueError):   # stderr closed: the status still says it
        print(f"bayesrepro: error: {crash_message(signum)}", file=sys.stderr, flush=True)
    return EXIT_NATIVE_CRASH


def crash_message(signum: int) -> str:
    """The line that reports a child ended by signal ``signum`` it was not sent (without the prefix)."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    if signum == getattr(signal, "SIGKILL", None):
        return (f"the computation was killed ({name}), most likely by the operating system for want of memory; "
                f"no partial output was written; lower --max-memory or fit fewer levels")
    try:
        description = signal.strsignal(signum) or name
    except ValueError:
        description = name
    where = ("the Python stacks above show where" if os.environ.get(DEBUG_VARIABLE, "") not in ("", "0")
             else f"rerun with {DEBUG_VARIABLE}=1 to see where")
    return (f"the computation crashed inside a compiled library ({name}: {description}); no partial output was "
            f"written; {where}, and please report it")


def _end_with(parent: int) -> None:
    """In the child: be sent SIGTERM if the parent dies (Linux), and stop at once if it already has."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
        except (OSError, AttributeError):   # no prctl: an orphan runs on to its end, as one process would
            pass
    if os.getppid() != parent:
        os._exit(128 + int(signal.SIGTERM))
