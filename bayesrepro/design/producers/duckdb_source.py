"""DuckDB over files: CSV/TSV (optionally gzipped), Parquet or JSON Lines, one file, many, or a glob.

DuckDB runs the grouped sums out of core over the files; only the grouped
results reach Python. Each format is read by the memory reader's rules:
CSV and TSV with every column as text (only an empty field is missing, a
row with more or fewer fields than the header is an error); Parquet with its
own types; JSON Lines with JSON's own (``json_lines``), never DuckDB's
guesses of dates or UUIDs. Columns are renamed by position (``v0``, ``v1``,
...), so that any name the file holds (empty, with a newline, differing
from another only in case) means that one column.
"""

from __future__ import annotations

import re
from pathlib import Path

from ...errors import BayesreproError, first_line
from ...progress import Progress
from ... import long_fields
from ...readers import delimiter_hint
from .files import data_files as named_files, duckdb_literal_name, shared_header
from .grouped import DUCKDB, GroupedSource, column_kind_of_sql_type, renamed_columns, text_doubled
from .json_lines import json_lines_relation
from .polling import run_polled

# DuckDB's report of a row with another number of fields than the header
RAGGED_ROW = re.compile(r"CSV Error on Line: (\d+)\n.*?Expected Number of Columns: (\d+) Found: (\d+).*?file = ([^\n]*)",
                        re.DOTALL)
TEXT_READER = ("read_csv($files, auto_detect = false, header = true, delim = {delim}, quote = '\"', "
               "escape = '\"', strict_mode = true, columns = {columns}, max_line_size = {line}, buffer_size = {buffer})")
# DuckDB's reports of a line longer than it reads
LONG_LINE = re.compile(r"Maximum line size|Parallel CSV Reader currently does not support a full read")
READERS = {
    (".csv", ".csv.gz"): ",",
    (".tsv", ".tsv.gz"): "\t",
    (".parquet",): "parquet",
    (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz"): "json",
}


def duckdb_source(path: str, where=None, drop_missing: bool = False, threads: int | None = None,
                  progress: bool | None = None, text_columns=()) -> GroupedSource:
    """A source of model frames over the files ``path`` names (a file, a directory of one kind, or a glob).

    ``progress`` shows the scans' progress on stderr (default: when stderr is a terminal).
    """
    import duckdb
    import pyarrow as pa

    files = data_files(path)
    kind = _reader(files)
    connection = duckdb.connect()
    if threads:
        connection.execute(f"SET threads = {int(threads)}")
    # DuckDB's own bar would be printed on stdout, into --json output, once a query runs 2 s; its estimate
    # of a query's progress is kept, from the start, and drawn on stderr when asked (Progress)
    connection.execute("SET enable_progress_bar = true")
    connection.execute("SET enable_progress_bar_print = false")
    connection.execute("SET progress_bar_time = 0")
    params = {"files": [duckdb_literal_name(file) for file in files]}

    def fetch(sql, parameters, through_arrow):
        if not through_arrow:
            return connection.execute(sql, parameters or {}).fetchdf()
        table = connection.sql(sql, params=parameters or {}).to_arrow_table()
        table.validate(full=True)   # every text is UTF-8, as the conversion of fetchdf checks
        return table.to_pandas()

    def run(sql, parameters=None, through_arrow=False):
        bar = Progress(f"reading {Path(path).name}", progress)
        try:
            return run_polled(lambda: fetch(sql, parameters, through_arrow),
                              lambda: connection.query_progress() / 100, bar, connection.interrupt)
        except duckdb.Error as exc:
            if kind in (",", "\t") and LONG_LINE.search(str(exc)):
                for file in files:
                    long_fields.refuse_long_row(Path(file), kind)
            raise BayesreproError(_ragged_row(str(exc), kind) or _not_utf8(str(exc), path)
                                  or f"DuckDB could not read '{path}': {first_line(exc)}") from None
        except (UnicodeError, pa.ArrowInvalid):   # a text DuckDB read but Python cannot hold
            raise BayesreproError(_NOT_UTF8.format(path=path, where="a text value")) from None

    if kind in (",", "\t"):
        names = shared_header(files, kind)
        columns = "{" + ", ".join(f"{text_doubled(f'v{k}')}: 'VARCHAR'" for k in range(len(names))) + "}"
        line = long_fields.MAX_LINE_BYTES
        reader = TEXT_READER.format(delim=text_doubled(kind), columns=columns, line=line, buffer=2 * line)
        relation = f"(SELECT * FROM {reader})"
        kinds = {name: "text" for name in names}
    elif kind == "parquet":
        names, kinds = _parquet_columns(files[0], run, params)
        relation = (f"(SELECT {', '.join(f'#{k + 1} AS v{k}' for k in range(len(names)))} "
                    f"FROM read_parquet($files))")
    else:
        relation, kinds = json_lines_relation(run, params, f"'{path}'")
    # the grouped sums (text keys, doubles and counts, which pandas receives alike either way) through Arrow: their
    # hundreds of thousands of rows of text took DuckDB's conversion to pandas four times as long
    return GroupedSource(run, relation, kinds, DUCKDB, f"'{path}'", where, drop_missing, params, text_columns,
                         aliases=renamed_columns(kinds), run_sums=lambda sql, parameters: run(sql, parameters, True))


def _ragged_row(message: str, delimiter: str) -> str | None:
    """DuckDB's report of a ragged row in the memory reader's words (``readers.read_delimited``)."""
    found = RAGGED_ROW.search(message)
    if not found:
        return None
    line, expected, actual, file = found.groups()
    file = re.sub(r"\[(.)\]", r"\1", file)   # the name as written, not as handed to DuckDB
    return (f"data file '{file}': data row {int(line) - 1} (row 1 is the first row below the header) has {actual} "
            f"field(s) but the header has {expected}; every row needs one field per column"
            f"{delimiter_hint(delimiter)}")


_NOT_UTF8 = ("data file '{path}': {where} is not UTF-8 text (a byte sequence, or half of a character, a lone "
             "surrogate, that no UTF-8 text holds); fix or remove that value, or save the file as UTF-8")
# DuckDB's reports of text that is not UTF-8: a CSV line, a JSON line, or a value it could not give to Python
_CSV_UNICODE = re.compile(r"CSV Error on Line: (\d+)\n.*?Invalid unicode", re.DOTALL)
_JSON_SURROGATE = re.compile(r"Malformed JSON in file \"([^\n]*?)\", at byte \d+ in line (\d+): [^\n]*surrogate")


def _not_utf8(message: str, path: str) -> str | None:
    """DuckDB's report of text that is not UTF-8 in the user's terms: the file, the row or line, what to do."""
    if found := _CSV_UNICODE.search(message):
        return _NOT_UTF8.format(path=path, where=f"data row {int(found.group(1)) - 1} (row 1 is the first below "
                                                 "the header)")
    if found := _JSON_SURROGATE.search(message):
        # DuckDB counts the line after the one that holds it
        return _NOT_UTF8.format(path=found.group(1), where=f"line {int(found.group(2)) - 1}")
    if "Python Conversion Failure" in message or "UnicodeDecodeError" in message:
        return _NOT_UTF8.format(path=path, where="a text value")
    return None


def data_files(path: str) -> list[str]:
    """The data files ``path`` names: itself, the data files under a directory, or a glob's matches; sorted."""
    return named_files(path, _suffix)


def _suffix(name: str) -> str | None:
    lower = name.lower()
    return next((s for suffixes in READERS for s in suffixes if lower.endswith(s)), None)


def _reader(files: list[str]) -> str:
    """The kind of reader of the files: a delimiter of text files, 'parquet' or 'json'."""
    kinds = {next((r for suffixes, r in READERS.items() if _suffix(f) in suffixes), None) for f in files}
    if None in kinds:
        unknown = next(f for f in files if _suffix(f) is None)
        known = ", ".join(s for suffixes in READERS for s in suffixes)
        raise BayesreproError(f"data file '{unknown}' has an unknown type; use one of {known}")
    if len(kinds) > 1:
        raise BayesreproError("the data files mix formats; give files of one kind (CSV, TSV, Parquet or JSON Lines)")
    return kinds.pop()


def _parquet_columns(first: str, run, params) -> tuple[list[str], dict[str, str]]:
    """The column names of the Parquet files (as the first file has them; a repeated name refused) and kinds."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(first).names
    except (pa.ArrowException, OSError) as exc:
        raise BayesreproError(f"could not read data file '{first}' as Parquet: {first_line(exc)}") from None
    repeated = [name for i, name in enumerate(names) if name in names[:i]]
    if repeated:
        raise BayesreproError(f"data file '{first}' has the column '{repeated[0]}' more than once; rename one of them")
    described = run("DESCRIBE SELECT * FROM read_parquet($files)", params)
    types = list(described["column_type"])
    return names, {name: column_kind_of_sql_type(str(kind)) for name, kind in zip(names, types)}
