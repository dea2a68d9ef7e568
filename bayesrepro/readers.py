"""Data files into DataFrames, with identifiers kept as the text in the file.

CSV and TSV (optionally gzipped): every field is read as text first, and only
an empty field is missing (``NA``, ``null``, ``None`` or ``nan`` are text like
any other). A column then becomes numeric only if

* every non-empty value is a plain decimal number: an optional sign, digits
  with an optional point and an optional exponent (``3``, ``-0.25``, ``1e-5``),
  without a leading zero (``007`` and ``01`` are identifiers) and without the
  words ``nan`` or ``inf``; and
* no two distinct texts give the same number (``7`` and ``7.0``, ``1`` and
  ``+1`` keep the column as text).

So two distinct texts are never merged into one value. Integer columns
without missing values become int64, other numeric columns float64.

Parquet keeps its own column types. JSON Lines keeps JSON's: strings are text
(``"007"`` stays ``"007"``), numbers are numbers, and a column that mixes the
two is refused. Every problem with a file is one ``BayesreproError`` line.
"""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import json
import re
import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import BayesreproError, first_line
from . import long_fields

DELIMITED = {(".csv", ".csv.gz"): ",", (".tsv", ".tsv.gz"): "\t"}
JSON_LINES = (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")
PARQUET = (".parquet",)
SUPPORTED_SUFFIXES = tuple(s for suffixes in DELIMITED for s in suffixes) + PARQUET + JSON_LINES

# no backslash in the patterns: they are also written into SQL string literals (see design.producers)
NUMBER = re.compile(r"[+-]?(?:(?:0|[1-9][0-9]*)(?:[.][0-9]*)?|[.][0-9]+)(?:[eE][+-]?[0-9]+)?")
INTEGER = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_GZIP_MAGIC = b"\x1f\x8b"
_OTHER_DELIMITERS = (";", "\t", "|", ",")


def read_file(path: str | Path, text_columns=()) -> pd.DataFrame:
    """Read a data file by its suffix; ``text_columns`` of a CSV/TSV file stay text whatever they hold."""
    path = Path(path)
    name = path.name.lower()
    for suffixes, delimiter in DELIMITED.items():
        if name.endswith(suffixes):
            return read_delimited(path, delimiter, text_columns)
    if name.endswith(PARQUET):
        return read_parquet(path)
    if name.endswith(JSON_LINES):
        return read_json_lines(path)
    raise BayesreproError(f"data file '{path}' has an unknown type; use one of {', '.join(SUPPORTED_SUFFIXES)}")


# --- CSV and TSV ----------------------------------------------------------------------------------

def read_delimited(path: Path, delimiter: str, text_columns=()) -> pd.DataFrame:
    """A CSV/TSV file with every column typed by the rule of this module."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    header = read_header(path, delimiter)
    bad_rows = []

    def refuse_row(row):
        bad_rows.append(row)
        return "error"

    def read(block_size: int | None = None):
        return pa_csv.read_csv(
            str(path.absolute()),   # as written: arrow would read a leading ~ as the home directory
            read_options=pa_csv.ReadOptions(use_threads=False, **({"block_size": block_size} if block_size else {})),
            parse_options=pa_csv.ParseOptions(delimiter=delimiter, newlines_in_values=True,
                                              invalid_row_handler=refuse_row),
            convert_options=pa_csv.ConvertOptions(column_types={name: pa.string() for name in header},
                                                  null_values=[""], strings_can_be_null=True),
        )

    try:
        try:
            table = read()
        except pa.ArrowInvalid as exc:
            if "straddling" not in str(exc):
                raise
            # a row longer than arrow's block (1 MB): read again with blocks that hold the longest row allowed
            long_fields.refuse_long_row(path, delimiter)
            table = read(long_fields.MAX_LINE_BYTES)
    except (pa.ArrowInvalid, OSError, EOFError, zlib.error) as exc:
        if bad_rows:
            row = bad_rows[0]
            # arrow counts the header as row 1
            where = f"data row {row.number - 1}" if row.number is not None else "a row"
            raise BayesreproError(
                f"data file '{path}': {where} (row 1 is the first row below the header) has {row.actual_columns} field(s) but the header "
                f"has {row.expected_columns}; every row needs one field per column{delimiter_hint(delimiter)}"
            ) from None
        if "invalid UTF8" in first_line(exc) and (found := first_invalid_utf8(path)) is not None:
            line, offset = found
            raise BayesreproError(
                f"data file '{path}': line {line} is not UTF-8 text (byte 0x{offset[1]:02x} at offset {offset[0]:,}: "
                "a byte sequence, or half of a character, a lone surrogate, that no UTF-8 text holds); fix or remove "
                "that value, or save the file as UTF-8"
            ) from None
        raise BayesreproError(f"could not read data file '{path}': {_arrow_message(exc)}") from None
    if table.num_rows == 0:
        raise BayesreproError(f"data file '{path}' has a header but no rows")
    if table.num_columns == 1:
        _refuse_other_delimiter(path, delimiter, table.column_names[0], table.column(0).slice(0, 20).to_pylist())
    keep = set(text_columns)
    columns = {}
    for name in table.column_names:
        texts = table.column(name)
        columns[name] = _as_text(texts) if name in keep else typed_column(texts)
    return pd.DataFrame(columns)


def file_mode(path: Path, what: str = "data file") -> int | None:
    """The file mode of ``path``; None where nothing has that name. A name the system cannot look up (too long, a
    loop of links, no permission) is refused in one line naming ``what`` it is."""
    try:
        return path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise BayesreproError(f"{what} '{path}' cannot be opened: {exc.strerror}") from None
    except ValueError:   # a NUL byte, which no file name can hold
        raise BayesreproError(f"{what} {str(path)!r} cannot be opened: its name holds a NUL byte") from None


def read_header(path: Path, delimiter: str) -> list[str]:
    """The column names, after checking that the file is UTF-8 text with a header and no repeated name."""
    try:
        with _open_bytes(path) as raw:
            start = raw.read(1 << 16)
    except (OSError, EOFError, zlib.error) as exc:
        raise BayesreproError(f"could not read data file '{path}': {_gzip_message(exc)}") from None
    if not start.strip():
        raise BayesreproError(f"data file '{path}' is empty")
    if start.startswith(_GZIP_MAGIC):
        raise BayesreproError(f"data file '{path}' is gzip-compressed; name it '{path.name}.gz'")
    if b"\x00" in start:
        raise BayesreproError(f"data file '{path}' is not a text file (it holds NUL bytes); give a CSV/TSV text file")
    text = _decode_start(path, start)
    try:
        header = next(csv.reader(io.StringIO(text), delimiter=delimiter))
    except (csv.Error, StopIteration) as exc:
        raise BayesreproError(f"data file '{path}' has no readable header line: {exc}") from None
    repeated = [name for i, name in enumerate(header) if name in header[:i]]
    if repeated:
        raise BayesreproError(
            f"data file '{path}' has the column '{repeated[0]}' more than once; rename one of them"
        )
    return header


def _open_bytes(path: Path):
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")


def first_invalid_utf8(path: Path, chunk: int = 1 << 20) -> tuple[int, tuple[int, int]] | None:
    """The line (1 for the header) and (offset, byte) of the first byte of ``path`` that is not UTF-8, or None."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    line, offset = 1, 0
    with _open_bytes(path) as handle:
        while True:
            block = handle.read(chunk)
            try:
                decoder.decode(block, final=not block)
            except UnicodeDecodeError as exc:
                # the decoder may hold up to 3 bytes of the previous block: find the bad byte in this one
                at = max(exc.start - (len(exc.object) - len(block)), 0)
                return line + block.count(b"\n", 0, at), (offset + at, block[at] if at < len(block) else 0)
            if not block:
                return None
            line += block.count(b"\n")
            offset += len(block)


def _decode_start(path: Path, start: bytes) -> str:
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    try:
        return decoder.decode(start, final=False)
    except UnicodeDecodeError as exc:
        raise BayesreproError(
            f"data file '{path}' is not UTF-8 text (byte 0x{start[exc.start]:02x} at offset {exc.start}); "
            "save it as UTF-8"
        ) from None


def _refuse_other_delimiter(path: Path, delimiter: str, only_column: str, first_values: list) -> None:
    """A single column whose header and first rows all split into as many fields by another delimiter."""
    def fields(text, other):
        try:
            return len(next(csv.reader([text or ""], delimiter=other), []))
        except csv.Error:  # a line break inside the value: not a row of another delimiter
            return 1

    found = [d for d in _OTHER_DELIMITERS if d != delimiter and fields(only_column, d) > 1
             and all(fields(value, d) == fields(only_column, d) for value in first_values)]
    if found:
        shown = "tab" if found[0] == "\t" else f"'{found[0]}'"
        expected = "tab" if delimiter == "\t" else f"'{delimiter}'"
        raise BayesreproError(
            f"data file '{path}' has a single column named {only_column!r}: its fields look separated by {shown}, "
            f"but a {path.suffixes[0] if path.suffixes else 'file'} file is read with {expected}; "
            "convert the file or rename it (.csv for commas, .tsv for tabs)"
        )


def delimiter_hint(delimiter: str) -> str:
    return f" (is the file separated by {'tabs' if delimiter == chr(9) else 'commas'}?)"


def _arrow_message(exc: BaseException) -> str:
    text = first_line(exc)
    if "invalid UTF8" in text:
        return "it is not UTF-8 text; save it as UTF-8"
    return _gzip_message(exc) if isinstance(exc, (OSError, EOFError, zlib.error)) else text


def _gzip_message(exc: BaseException) -> str:
    text = first_line(exc)
    if isinstance(exc, EOFError) or "truncated" in text.lower():
        return "the compressed file is truncated (it ends before its data does)"
    if isinstance(exc, (gzip.BadGzipFile, zlib.error)) or "inflate" in text or "gzip" in text.lower():
        return f"it is not a valid gzip file ({text})"
    return text


def typed_column(texts) -> pd.Series:
    """A column of text (a pyarrow array, None for missing) as numbers if the rule allows, else as text."""
    import pyarrow as pa
    import pyarrow.compute as pc

    present = pc.drop_null(texts)
    distinct = pc.unique(present)
    if len(distinct) == 0:
        return _as_text(texts)
    is_integer = pc.all(pc.match_substring_regex(distinct, f"^{INTEGER.pattern}$")).as_py()
    if not is_integer and not pc.all(pc.match_substring_regex(distinct, f"^{NUMBER.pattern}$")).as_py():
        return _as_text(texts)
    values = None
    if is_integer:
        try:
            values = pc.cast(distinct, pa.int64())
        except pa.ArrowInvalid:  # beyond int64: compared as floats below
            is_integer = False
    if values is None:
        values = pc.cast(distinct, pa.float64())
    if len(np.unique(values.to_numpy())) != len(distinct):  # numpy counts 0.0 and -0.0 as one number
        return _as_text(texts)
    if is_integer and len(present) == len(texts):
        return pd.Series(pc.cast(texts, pa.int64()).to_numpy(zero_copy_only=False))
    return pd.Series(pc.cast(texts, pa.float64()).to_numpy(zero_copy_only=False))


def _as_text(texts) -> pd.Series:
    return texts.to_pandas(types_mapper=lambda kind: pd.StringDtype(na_value=np.nan))


def parse_numbers(values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Text values as numbers by this module's grammar: (floats, mask of non-empty values that are not numbers).

    Used where a column is a measurement (a score): ``1`` and ``1.0`` are then
    the same number, as they should be. Missing values stay NaN and are not flagged.
    """
    text = values.astype(object)
    present = values.notna().to_numpy()
    numbers = np.full(len(values), np.nan)
    bad = np.zeros(len(values), dtype=bool)
    for i in np.flatnonzero(present):
        item = text.iloc[i]
        if isinstance(item, str) and NUMBER.fullmatch(item):
            numbers[i] = float(item)
        elif isinstance(item, (int, float, np.number)) and not isinstance(item, (bool, np.bool_)):
            numbers[i] = float(item)
        else:
            bad[i] = True
    return numbers, bad


# --- Parquet --------------------------------------------------------------------------------------

def read_parquet(path: Path) -> pd.DataFrame:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(str(path.absolute())).names
        repeated = [name for i, name in enumerate(names) if name in names[:i]]
        if repeated:
            raise BayesreproError(f"data file '{path}' has the column '{repeated[0]}' more than once; rename one of them")
        table = _decimals_as_doubles(pq.read_table(str(path.absolute())))
    except (pa.ArrowException, OSError) as exc:
        raise BayesreproError(f"could not read data file '{path}' as Parquet: {first_line(exc)}") from None
    if table.num_rows == 0:
        raise BayesreproError(f"data file '{path}' has no rows")
    try:
        return table.to_pandas()
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise BayesreproError(f"could not convert the columns of data file '{path}': {first_line(exc)}") from None


def _decimals_as_doubles(table):
    """A DECIMAL column is a number: read as a double, as DuckDB and Spark read it."""
    import pyarrow as pa

    for i, field in enumerate(table.schema):
        if pa.types.is_decimal(field.type):
            table = table.set_column(i, field.with_type(pa.float64()), table.column(i).cast(pa.float64()))
    return table


# --- JSON Lines -----------------------------------------------------------------------------------

# half of a UTF-16 pair, as JSON's \\u escapes write it (a whole pair decodes to one character)
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def read_json_lines(path: Path) -> pd.DataFrame:
    """One JSON object per line; strings stay text, numbers stay numbers, a column must not mix them."""
    columns: dict[str, dict[int, object]] = {}
    n_rows = 0
    try:
        with (gzip.open(path, "rt", encoding="utf-8-sig") if path.name.lower().endswith(".gz")
              else open(path, encoding="utf-8-sig")) as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                record = _json_object(path, number, line)
                for key, value in record.items():
                    columns.setdefault(key, {})[n_rows] = value
                n_rows += 1
    except UnicodeDecodeError as exc:
        raise BayesreproError(f"data file '{path}' is not UTF-8 text ({exc.reason} at byte {exc.start}); "
                              "save it as UTF-8") from None
    except (OSError, EOFError, zlib.error) as exc:
        raise BayesreproError(f"could not read data file '{path}': {_gzip_message(exc)}") from None
    if n_rows == 0:
        raise BayesreproError(f"data file '{path}' has no rows (no JSON object on any line)")
    return pd.DataFrame({name: _json_column(path, name, values, n_rows) for name, values in columns.items()})


def _json_object(path: Path, number: int, line: str) -> dict:
    def unique_keys(pairs):
        keys = [key for key, _ in pairs]
        repeated = [key for i, key in enumerate(keys) if key in keys[:i]]
        if repeated:
            raise BayesreproError(f"data file '{path}' line {number} has the key '{repeated[0]}' more than once")
        return dict(pairs)

    def refuse_constant(name):
        raise BayesreproError(f"data file '{path}' line {number} holds {name}, which is not JSON; "
                              "write a missing value as null")

    try:
        record = json.loads(line, object_pairs_hook=unique_keys, parse_constant=refuse_constant)
    except json.JSONDecodeError as exc:
        raise BayesreproError(f"data file '{path}' line {number} is not valid JSON: {exc.msg} "
                              f"(column {exc.colno})") from None
    if not isinstance(record, dict):
        raise BayesreproError(f"data file '{path}' line {number} is a JSON {type(record).__name__}, "
                              "not an object; write one {\"column\": value, ...} object per line")
    if SURROGATE_ESCAPE.search(line):
        _refuse_lone_surrogates(path, number, record)
    return record


def _refuse_lone_surrogates(path: Path, number: int, record: dict) -> None:
    """Refuse a key or text value holding half of a UTF-16 pair alone: no UTF-8 text can hold it."""
    for key, value in record.items():
        found = LONE_SURROGATE.search(key) or (LONE_SURROGATE.search(value) if isinstance(value, str) else None)
        if found:
            raise BayesreproError(
                f"data file '{path}' line {number}, field {json.dumps(key)}: holds a lone surrogate "
                f"(\\u{ord(found.group()):04x}), half of a character that no UTF-8 text can hold; the tool that "
                "wrote it cut a character in two: fix or remove that value"
            )


def _json_column(path: Path, name: str, values: dict[int, object], n_rows: int) -> pd.Series:
    present = {row: value for row, value in values.items() if value is not None}
    kinds = {_json_kind(value) for value in present.values()}
    if "nested" in kinds:
        raise BayesreproError(f"column '{name}' of data file '{path}' holds lists or objects; "
                              "give one number, string or boolean per field")
    if len(kinds) > 1:
        example = {kind: next(v for v in present.values() if _json_kind(v) == kind) for kind in sorted(kinds)}
        shown = ", ".join(f"{kind} {json.dumps(value)}" for kind, value in example.items())
        raise BayesreproError(
            f"column '{name}' of data file '{path}' mixes JSON types ({shown}); write every value of a column "
            "the same way (identifiers as strings)"
        )
    column = [values.get(row) for row in range(n_rows)]
    kind = kinds.pop() if kinds else "string"
    complete = len(present) == n_rows
    if kind == "number":
        if complete and all(isinstance(v, int) and -2**63 <= v < 2**63 for v in present.values()):
            return pd.Series(column, dtype="int64")
        numbers = pd.Series([np.nan if v is None else float(v) for v in column], dtype="float64")
        if numbers.nunique() != len(set(present.values())):
            # integers too large for a float64 to keep apart: they are identifiers, kept as written
            return pd.Series([None if v is None else json.dumps(v) for v in column], dtype=pd.StringDtype(na_value=np.nan))
        return numbers
    if kind == "boolean":
        return pd.Series(column, dtype="bool" if complete else "boolean")
    return pd.Series(column, dtype=pd.StringDtype(na_value=np.nan))


def _json_kind(value) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "nested"
