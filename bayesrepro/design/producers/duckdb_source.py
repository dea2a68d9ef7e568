"""DuckDB over files: CSV/TSV (optionally gzipped), Parquet or JSON Lines, one file, many, or a glob.

DuckDB runs the grouped sums out of core over the files; only the grouped
results reach Python. CSV and TSV files are read with every column as text,
so identifiers keep the text as written and only an empty field is missing;
Parquet and JSON keep their own types, and their grouping columns are cast to
text.
"""

from __future__ import annotations

import csv
import glob
import gzip
from pathlib import Path

from ...errors import BayesreproError, first_line
from ...progress import Progress
from .grouped import DUCKDB, GroupedSource
from .polling import run_polled

# Text files are parsed by the rules of their header line, not by guessing: every field is text,
# a row with more or fewer fields than the header is an error.
TEXT_READER = ("read_csv($files, auto_detect = false, header = true, delim = {delim}, quote = '\"', "
               "escape = '\"', columns = {columns})")
READERS = {
    (".csv", ".csv.gz"): ",",
    (".tsv", ".tsv.gz"): "\t",
    (".parquet",): "read_parquet($files)",
    (".jsonl", ".jsonl.gz", ".ndjson"): "read_json($files, format = 'newline_delimited')",
}
TEXT_TYPES = ("VARCHAR",)


def duckdb_source(path: str, where=None, drop_missing: bool = False, threads: int | None = None,
                  progress: bool | None = None, text_columns=()) -> GroupedSource:
    """A source of model frames over the files ``path`` names (a file, a directory of one kind, or a glob).

    ``progress`` shows the scans' progress on stderr (default: when stderr is a terminal).
    """
    import duckdb

    files = data_files(path)
    reader = _reader(files)
    connection = duckdb.connect()
    if threads:
        connection.execute(f"SET threads = {int(threads)}")
    # DuckDB's own bar would be printed on stdout, into --json output, once a query runs 2 s; its estimate
    # of a query's progress is kept, from the start, and drawn on stderr when asked (Progress)
    connection.execute("SET enable_progress_bar = true")
    connection.execute("SET enable_progress_bar_print = false")
    connection.execute("SET progress_bar_time = 0")
    params = {"files": files}

    def run(sql, parameters=None):
        bar = Progress(f"reading {Path(path).name}", progress)
        try:
            return run_polled(lambda: connection.execute(sql, parameters or {}).fetchdf(),
                              lambda: connection.query_progress() / 100, bar, connection.interrupt)
        except duckdb.Error as exc:
            raise BayesreproError(f"DuckDB could not read '{path}': {first_line(exc)}") from None

    if reader in (",", "\t"):
        reader = _text_reader(files, reader)
    described = run(f"DESCRIBE SELECT * FROM {reader}", params)
    schema = {name: str(kind).upper() in TEXT_TYPES for name, kind in zip(described["column_name"], described["column_type"])}
    return GroupedSource(run, reader, schema, DUCKDB, f"'{path}'", where, drop_missing, params, text_columns)


def data_files(path: str) -> list[str]:
    """The data files ``path`` names: itself, the data files under a directory, or a glob's matches; sorted."""
    target = Path(path)
    if target.is_dir():
        files = sorted(str(p) for p in target.rglob("*") if p.is_file() and _suffix(p.name))
    elif any(ch in str(path) for ch in "*?["):
        files = sorted(glob.glob(str(path), recursive=True))
    else:
        files = [str(target)] if target.is_file() else []
    if not files:
        raise BayesreproError(f"no data files match '{path}'")
    return files


def _suffix(name: str) -> str | None:
    lower = name.lower()
    return next((s for suffixes in READERS for s in suffixes if lower.endswith(s)), None)


def _reader(files: list[str]) -> str:
    """A table function over the files, or the delimiter of text files (their reader needs their header)."""
    kinds = {next((r for suffixes, r in READERS.items() if _suffix(f) in suffixes), None) for f in files}
    if None in kinds:
        unknown = next(f for f in files if _suffix(f) is None)
        known = ", ".join(s for suffixes in READERS for s in suffixes)
        raise BayesreproError(f"data file '{unknown}' has an unknown type; use one of {known}")
    if len(kinds) > 1:
        raise BayesreproError("the data files mix formats; give files of one kind (CSV, TSV, Parquet or JSON Lines)")
    return kinds.pop()


def _text_reader(files: list[str], delimiter: str) -> str:
    """The reader of CSV/TSV files sharing one header line, with every column as text."""
    headers = {tuple(_header(file, delimiter)) for file in files}
    if len(headers) > 1:
        raise BayesreproError(f"the data files do not share one header line: {' / '.join(','.join(h) for h in headers)}")
    names = headers.pop()
    columns = "{" + ", ".join(f"{_literal(name)}: 'VARCHAR'" for name in names) + "}"
    return TEXT_READER.format(delim=_literal(delimiter), columns=columns)


def _header(file: str, delimiter: str) -> list[str]:
    """The column names of a CSV/TSV file, refusing files that are empty, binary or name a column twice."""
    opener = gzip.open if file.lower().endswith(".gz") else open
    try:
        with opener(file, "rt", encoding="utf-8-sig", newline="") as handle:
            line = handle.readline()
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise BayesreproError(f"could not read data file '{file}': {first_line(exc)}") from None
    if not line.strip():
        raise BayesreproError(f"data file '{file}' is empty: it needs a header line naming the columns")
    if "\x00" in line:
        raise BayesreproError(f"data file '{file}' is not a text file")
    names = next(csv.reader([line], delimiter=delimiter))
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise BayesreproError(f"data file '{file}' has the column '{repeated[0]}' more than once; rename one of them")
    return names


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
