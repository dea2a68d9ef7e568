"""Progress of long work: records of the ``bayesrepro.progress`` logger, and a bar redrawn on one stderr line.

The package writes nothing to stderr on its own. Its notes and progress are
``logging`` records at INFO: a Python caller sees them once logging is set up
to show them (``logging.basicConfig(level=logging.INFO)``), or, for progress,
when asking for it (``progress=True``) or working in a terminal. The command
line shows the records as ``bayesrepro: ...`` lines (``lines_on_stderr``).
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time

LOGGER = logging.getLogger("bayesrepro")
LOGGER.addHandler(logging.NullHandler())
PROGRESS_LOGGER = logging.getLogger("bayesrepro.progress")


def in_notebook() -> bool:
    """Inside a Jupyter kernel (a notebook or a JupyterLab console)."""
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return type(shell).__name__ == "ZMQInteractiveShell"


def shown_by_default() -> bool:
    """The sampler's own bar is shown unless asked otherwise where someone watches: a terminal's stderr, a notebook."""
    return sys.stderr.isatty() or in_notebook()


class StderrLines(logging.Handler):
    """Records as the command line writes them, ``bayesrepro: <message>``, on the stderr of the moment."""

    def emit(self, record: logging.LogRecord) -> None:
        print(f"bayesrepro: {record.getMessage()}", file=sys.stderr, flush=True)


_ASKED = StderrLines()


def report_progress(text: str, enabled: bool | None = None) -> None:
    """One line of progress as an INFO record of ``bayesrepro.progress``, wanted when ``enabled`` (``progress=True``,
    ``--progress``) or, by default, when stderr is a terminal; ``enabled=False`` says nothing.

    Where logging does not take INFO records of the package, a wanted line is written to stderr all the same: the
    caller asked for it.
    """
    if enabled is False:
        return
    wanted = sys.stderr.isatty() if enabled is None else enabled
    if PROGRESS_LOGGER.isEnabledFor(logging.INFO):
        PROGRESS_LOGGER.info(text, extra={"wanted": wanted})
    elif wanted:
        _ASKED.handle(PROGRESS_LOGGER.makeRecord(PROGRESS_LOGGER.name, logging.INFO, __file__, 0, text, None, None))


def announce_path(text: str, enabled: bool | None = None) -> None:
    """Which computational path a long fit takes, and why (``progress=True``, ``--progress``)."""
    report_progress(f"path: {text}", enabled)


def sampling_lines():
    """A writer of the sampler's progress as lines of their own (``write("400/1600")``), for stderr that is not a
    terminal, where progress was asked for: a log keeps each line."""
    start = time.perf_counter()

    def write(draws: str) -> None:
        report_progress(f"sampling: {draws} draws, {time.perf_counter() - start:.0f} s", True)

    return write


@contextlib.contextmanager
def lines_on_stderr():
    """The package's records of INFO and above as ``bayesrepro: ...`` lines on stderr for the block (the command
    line): every note, and the progress lines that are wanted."""
    handler = StderrLines()
    handler.addFilter(lambda record: getattr(record, "wanted", True))
    level = LOGGER.level
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    try:
        yield
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)


class Progress:
    """``with Progress("scanning") as bar: bar.update(0.42)`` redraws one stderr line at most every 0.2 s.

    An interactive bar, not a log: shown when asked for or when the stream is a terminal.
    """

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
