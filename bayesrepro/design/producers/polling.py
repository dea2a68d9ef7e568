"""A query run in a worker thread, so that the caller can show how far it got and stop it on Ctrl-C."""

from __future__ import annotations

import threading
from typing import Callable

from ...progress import Progress

POLL_SECONDS = 0.25


def run_polled(work: Callable, fraction: Callable[[], float], bar: Progress, interrupt: Callable[[], None]):
    """``work()``'s result; while it runs, ``fraction()`` (0 to 1, the engine's estimate) is shown on ``bar`` when
    that is enabled, and Ctrl-C calls ``interrupt()`` to stop the engine, and waits for it to stop, before it
    propagates (a second Ctrl-C leaves at once)."""
    outcome = {}

    def target():
        try:
            outcome["result"] = work()
        except BaseException as exc:  # raised again in the caller's thread below
            outcome["error"] = exc

    worker = threading.Thread(target=target, daemon=True)
    with bar:
        try:
            worker.start()
            while worker.is_alive():
                worker.join(POLL_SECONDS)
                if bar.enabled:
                    bar.update(fraction())
        except KeyboardInterrupt:
            interrupt()
            if worker.is_alive():   # the engine stops at its next check; its thread must not outlive the interpreter
                worker.join()
            raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]
