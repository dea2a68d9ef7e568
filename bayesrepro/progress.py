"""Progress of long work on one line of stderr, shown only when asked for or when stderr is a terminal."""

from __future__ import annotations

import sys
import time


def in_notebook() -> bool:
    """Inside a Jupyter kernel (a notebook or a JupyterLab console)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def shown_by_default() -> bool:
    """Progress is shown unless asked otherwise where someone watches: a terminal's stderr, a notebook."""
    return sys.stderr.isatty() or in_notebook()


def announce_path(text: str, enabled: bool | None = None) -> None:
    """One stderr line saying which computational path a long fit takes, and why (``--progress``)."""
    if enabled or (enabled is None and shown_by_default()):
        print(f"bayesrepro: path: {text}", file=sys.stderr, flush=True)


def sampling_lines():
    """A writer of the sampler's progress as lines of their own (``write("400/1600")``), for stderr that is not a
    terminal: a log keeps each line."""
    start = time.perf_counter()

    def write(draws: str) -> None:
        print(f"bayesrepro: sampling: {draws} draws, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)

    return write


class Progress:
    """``with Progress("scanning") as bar: bar.update(0.42)`` redraws one stderr line at most every 0.2 s."""

    def __init__(self, label: str, enabled: bool | None = None, stream=None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.label = label
        self._shown = 0.0

    def update(self, fraction: float) -> None:
        now = time.monotonic()
        if not self.enabled or now - self._shown < 0.2 or not 0 <= fraction <= 1:
            return
        self._shown = now
        filled = int(30 * fraction)
        self.stream.write(f"\r{self.label} [{'#' * filled}{'.' * (30 - filled)}] {100 * fraction:3.0f} %")
        self.stream.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        if self.enabled and self._shown:
            self.stream.write("\r" + " " * (len(self.label) + 40) + "\r")
            self.stream.flush()
