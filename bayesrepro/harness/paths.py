"""The files named on the command line: files as given, directories searched recursively."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..errors import BayesreproError


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
        path = Path(given)
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file()):
                found.setdefault(child.resolve(), FoundFile(child, named=False))
        elif path.is_file():
            found[path.resolve()] = FoundFile(path, named=True)
        else:
            raise BayesreproError(f"log path '{given}' does not exist")
    return list(found.values())
