"""Selected fields of a JSON Lines file, read in C++ by pyarrow, with exact messages when a line is bad.

Only the named fields are kept; everything else on a line (the document, the
prompts, the model's responses) is skipped by the parser without becoming
Python objects. A line pyarrow cannot take (a truncated line, a field of an
unexpected type, a missing field) sends the file through a line-by-line
reader that names the first bad line and what is wrong with it; a last
line cut without its newline (a writer stopped mid-line) is ``CutShort``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ..errors import BayesreproError, first_line
from .json_text import parse_json

# Field kinds: an identifier (integer or text, kept as text), text, a number
# (true/false read as 1/0, as the harnesses average them).
ID, TEXT, NUMBER = "id", "text", "number"
_ARROW_TYPES = {ID: pa.int64(), TEXT: pa.string(), NUMBER: pa.float64()}


class CutShort(BayesreproError):
    """The file ends inside a line that is not valid JSON: its writer was stopped mid-line."""


def read_fields(path: Path, fields: dict[str, str]) -> dict[str, pa.Array]:
    """The named fields of every line, each present on every line: ids and text as strings, numbers as float64."""
    columns = _read_with_arrow(path, fields)
    if columns is None:
        columns = _read_line_by_line(path, fields)
    return columns


def _read_with_arrow(path: Path, fields: dict[str, str]) -> dict[str, pa.Array] | None:
    schema = pa.schema([(name, _ARROW_TYPES[kind]) for name, kind in fields.items()])
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore")
    try:
        table = pj.read_json(path, parse_options=options, read_options=pj.ReadOptions(block_size=16 << 20))
    except pa.ArrowInvalid:
        return None
    except OSError as exc:
        raise BayesreproError(f"could not read '{path}': {first_line(exc)}") from None
    if any(table.column(name).null_count for name in fields):
        return None
    return {
        name: (pc.cast(table.column(name), pa.string()) if kind == ID else table.column(name)).combine_chunks()
        for name, kind in fields.items()
    }


def _read_line_by_line(path: Path, fields: dict[str, str]) -> dict[str, pa.Array]:
    values: dict[str, list] = {name: [] for name in fields}
    with open(path, encoding="utf-8", errors="strict") as lines:
        try:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                record = _parse_line(path, number, line)
                for name, kind in fields.items():
                    values[name].append(_field(path, number, record, name, kind))
        except UnicodeDecodeError as exc:
            raise BayesreproError(f"'{path}' is not UTF-8 text ({first_line(exc)})") from None
    return {name: pa.array(column, type=pa.float64() if fields[name] == NUMBER else pa.string())
            for name, column in values.items()}


def _parse_line(path: Path, number: int, line: str) -> dict:
    try:
        record = parse_json(line, f"'{path}' line {number}")
    except BayesreproError as exc:
        if not line.endswith("\n"):
            raise CutShort(f"'{path}' ends inside line {number}: the file was cut short while it was written") from None
        raise BayesreproError(f"{exc}; the file may be damaged: rerun or re-copy it") from None
    if not isinstance(record, dict):
        raise BayesreproError(f"'{path}' line {number} is not a JSON object")
    return record


def _field(path: Path, number: int, record: dict, name: str, kind: str):
    if name not in record or record[name] is None:
        raise BayesreproError(f"'{path}' line {number} has no '{name}'")
    value = record[name]
    if kind == NUMBER:
        if isinstance(value, (bool, int, float)):
            try:
                return float(value)
            except OverflowError:  # an integer of more than 308 digits
                raise BayesreproError(f"'{path}' line {number}: metric '{name}' holds a number of {len(str(value))} "
                                      "digits, beyond double precision; the file is damaged: rerun or re-copy it") from None
        raise BayesreproError(
            f"'{path}' line {number}: metric '{name}' holds {_describe(value)}, not a number per document "
            "(a corpus-level metric); choose per-document metrics with --metric"
        )
    if kind == ID and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, str):
        return value
    raise BayesreproError(f"'{path}' line {number}: '{name}' holds {_describe(value)}, not text")


def _describe(value) -> str:
    kind = {list: "a list", dict: "an object", str: "text", bool: "true/false"}.get(type(value), type(value).__name__)
    shown = json.dumps(value)[:40]
    return f"{kind} ({shown})"
