"""The files named on the command line: files as given, directories searched recursively."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import BayesreproError
from ..readers import file_mode


@dataclass(frozen=True)
class FoundFile:
    """A file to consider, and whether the user named it (a named file that is no log is an error)."""

    path: Path
    named: bool


def expand_paths(paths: Iterable[str | Path]) -> list[FoundFile]:
    """Every file under ``paths`` once, in a stable order; a missing path is an error."""
    found: dict[Path, FoundFile] = {}
    paths = list(paths)
    if not paths:
        raise BayesreproError("no log path given; name log files or directories that hold them")
    for given in paths:
        if not str(given).strip():
            raise BayesreproError("a log path is empty; name log files or directories that hold them "
                                  "(lm-eval:PATH, inspect:PATH)")
        path = Path(given)
        mode = file_mode(path, "log path")
        if mode is None:
            raise BayesreproError(f"log path '{given}' does not exist")
        if stat.S_ISDIR(mode):
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                found.setdefault(child.resolve(), FoundFile(child, named=False))
        elif stat.S_ISREG(mode):
            found[path.resolve()] = FoundFile(path, named=True)
        else:
            raise BayesreproError(f"log path '{given}' is {_kind(mode)}, not a log file or a directory; reading it "
                                  "may never end: name the log files")
    return list(found.values())


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"
