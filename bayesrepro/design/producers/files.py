"""Which files a data path names, how to hand them to an engine that would read a name as a pattern, and the
header line CSV/TSV files share.

A path that exists is a file name, read as written: ``data[1].csv`` is that
file even when ``data1.csv`` lies beside it, and ``~/x.csv`` is the file under
a directory named ``~``. Only a path that names no file is a glob. The engines
expand patterns in every name they are given (DuckDB ``* ? [``; Spark, through
Hadoop, ``* ? [ {`` and backslashes), so every file name is handed to them
absolute and with those characters escaped.
"""

from __future__ import annotations

import glob
import os
import stat
from pathlib import Path

from ...errors import BayesreproError
from ...readers import file_mode, read_header

GLOB_CHARACTERS = "*?["


def data_files(path: str, is_data_file) -> list[str]:
    """The absolute paths of the files ``path`` names: itself, the data files under a directory, or a glob's
    matches (only when no file has the name as written); sorted. ``is_data_file(name)`` picks a directory's files."""
    target = Path(path)
    mode = file_mode(target)
    if mode is not None and stat.S_ISDIR(mode):
        files = [p for p in target.rglob("*") if p.is_file() and is_data_file(p.name)]
    elif mode is not None and stat.S_ISREG(mode):
        files = [target]
    elif mode is not None:   # a FIFO or a device: reading it may never end
        raise BayesreproError(f"data '{path}' is not a regular file; name a file")
    elif any(ch in path for ch in GLOB_CHARACTERS):
        files = [Path(name) for name in glob.glob(path, recursive=True)]
    else:
        files = []
    if not files:
        raise BayesreproError(f"no data files match '{path}'")
    return sorted(os.path.abspath(file) for file in files)


def duckdb_literal_name(file: str) -> str:
    """A file name DuckDB reads as written: each of its pattern characters inside brackets."""
    return "".join(f"[{ch}]" if ch in GLOB_CHARACTERS else ch for ch in file)


def hadoop_literal_name(file: str) -> str:
    """A file name Hadoop's glob reads as written: each of its pattern characters after a backslash."""
    return "".join(f"\\{ch}" if ch in "*?[]{}\\" else ch for ch in file)


def shared_header(files: list[str], delimiter: str) -> list[str]:
    """The header line of CSV/TSV files, checked as the memory reader checks it, the same in every file."""
    headers = {tuple(read_header(Path(file), delimiter)) for file in files}
    if len(headers) > 1:
        raise BayesreproError(f"the data files do not share one header line: {' / '.join(','.join(h) for h in headers)}")
    return list(headers.pop())
