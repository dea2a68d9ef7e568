"""JSON Lines in DuckDB typed by the memory reader's rule, not by DuckDB's guesses.

DuckDB's own reader infers types from the text: a string that looks like a
date becomes a DATE, two spellings of one UUID one value, an integer beyond
2^64 a rounded DOUBLE. Here every line is read as a JSON object and each key
typed from JSON's own kinds (``readers.read_json_lines``): strings are text,
numbers numbers (BIGINT when every row holds an integer of int64, else
DOUBLE, else, when doubles would merge distinct integers, their text),
booleans booleans; a key mixing strings and numbers, or holding lists or
objects, is refused.
"""

from __future__ import annotations

import pandas as pd

from ...errors import BayesreproError, first_line
from ...readers import INTEGER
from .grouped import text_doubled

_NUMBER_TYPES = "('BIGINT', 'UBIGINT', 'DOUBLE')"
_LINES = "(SELECT row_number() OVER () AS line, json AS j FROM read_ndjson_objects($files))"
# The number a JSON value stands for, as text equal for equal numbers (Python's 1 == 1.0); every cast is a TRY_CAST:
# DuckDB evaluates it on the rows a FILTER leaves out too
_NUMBER_KEY = (f"CASE WHEN type <> 'DOUBLE' OR regexp_full_match(value::VARCHAR, '{INTEGER.pattern}') "
               "THEN value::VARCHAR WHEN TRY_CAST(value AS DOUBLE) = floor(TRY_CAST(value AS DOUBLE)) AND abs(TRY_CAST(value AS DOUBLE)) < 9007199254740992 "
               "THEN CAST(CAST(TRY_CAST(value AS DOUBLE) AS BIGINT) AS VARCHAR) ELSE CAST(TRY_CAST(value AS DOUBLE) AS VARCHAR) END")
# JSON's own grammar of a number: DuckDB also reads NaN, Infinity and nan, which JSON (and the memory reader) refuse
_JSON_NUMBER = "-?(0|[1-9][0-9]*)([.][0-9]+)?([eE][+-]?[0-9]+)?"
_NOT_JSON = f"(type = 'DOUBLE' AND NOT regexp_full_match(value::VARCHAR, '{_JSON_NUMBER}'))"
_KEYS = f"""
SELECT key, MIN(line) AS first_line, MIN(id) AS position,
       COUNT(*) FILTER (WHERE type = 'VARCHAR') AS strings,
       COUNT(*) FILTER (WHERE type IN {_NUMBER_TYPES}) AS numbers,
       COUNT(*) FILTER (WHERE type = 'BOOLEAN') AS booleans,
       COUNT(*) FILTER (WHERE type IN ('ARRAY', 'OBJECT')) AS nested,
       COUNT(*) FILTER (WHERE type <> 'NULL') AS present,
       COUNT(*) FILTER (WHERE type IN {_NUMBER_TYPES} AND NOT (type = 'BIGINT' OR
                        (type = 'UBIGINT' AND TRY_CAST(value AS UBIGINT) <= 9223372036854775807))) AS not_int64,
       COUNT(DISTINCT {_NUMBER_KEY}) FILTER (WHERE type IN {_NUMBER_TYPES}) AS distinct_numbers,
       COUNT(DISTINCT TRY_CAST(value AS DOUBLE)) FILTER (WHERE type IN {_NUMBER_TYPES}) AS distinct_doubles,
       COUNT(*) - COUNT(DISTINCT line) AS repeated,
       MIN(line) FILTER (WHERE {_NOT_JSON}) AS constant_line,
       MIN(value::VARCHAR) FILTER (WHERE {_NOT_JSON}) AS constant
FROM (SELECT l.line, e.key, e.id, e.type, e.value FROM {_LINES} AS l, json_each(l.j) AS e)
GROUP BY key ORDER BY first_line, position
"""
_COUNTS = f"""
SELECT COUNT(*) AS lines, COUNT(*) FILTER (WHERE json_type(j) <> 'OBJECT') AS others,
       MIN(line) FILTER (WHERE json_type(j) <> 'OBJECT') AS first_other
FROM {_LINES}
"""


def json_lines_relation(run, params, label: str) -> tuple[str, dict[str, str]]:
    """The rows of JSON Lines files as a relation with columns ``v0, v1, ...`` and each column's kind."""
    columns, kinds = [], {}
    for k, (name, stored) in enumerate(json_lines_types(run, params, label).items()):
        pointer = text_doubled("/" + name.replace("~", "~0").replace("/", "~1"))
        value = f"json_extract_string(j, {pointer})"
        columns.append(f"{_EXPRESSIONS[stored].format(value=value, pointer=pointer)} AS v{k}")
        kinds[name] = {"integer": "number", "double": "number", "bool": "bool"}.get(stored, "text")
    return f"(SELECT {', '.join(columns)} FROM {_LINES})", kinds


def json_lines_types(run, params, label: str) -> dict[str, str]:
    """Each key of the files (in the order they first appear) and how it is stored: ``text``, ``integer``
    (int64, none missing), ``double``, ``bool`` or ``number_text`` (integers a double would merge)."""
    counts = run(_COUNTS, params).iloc[0]
    n_rows = int(counts["lines"])
    if n_rows == 0:
        raise BayesreproError(f"data file {label} has no rows (no JSON object on any line)")
    if int(counts["others"]):
        raise BayesreproError(f"data file {label} line {int(counts['first_other'])} is not a JSON object; "
                              "write one {\"column\": value, ...} object per line")
    types = {}
    for row in run(_KEYS, params).itertuples(index=False):
        name = row.key
        if int(row.repeated):
            raise BayesreproError(f"data file {label} has the key '{name}' more than once in a line")
        if pd.notna(row.constant):
            raise BayesreproError(f"data file {label} line {int(row.constant_line)} holds {row.constant}, which is not "
                                  "JSON; write a missing value as null")
        if int(row.nested):
            raise BayesreproError(f"column '{name}' of data file {label} holds lists or objects; "
                                  "give one number, string or boolean per field")
        present = [kind for kind, count in (("boolean", row.booleans), ("number", row.numbers), ("string", row.strings))
                   if int(count)]
        if len(present) > 1:
            raise BayesreproError(f"column '{name}' of data file {label} mixes JSON types ({', '.join(present)}); write "
                                  "every value of a column the same way (identifiers as strings)")
        kind = present[0] if present else "string"
        if kind == "number" and int(row.distinct_doubles) != int(row.distinct_numbers):
            types[name] = "number_text"
        elif kind == "number":
            types[name] = "integer" if int(row.not_int64) == 0 and int(row.present) == n_rows else "double"
        else:
            types[name] = "bool" if kind == "boolean" else "text"
    return types


def json_lines_kinds(files: list[str], label: str) -> dict[str, str]:
    """``json_lines_types`` of local files, found by DuckDB (for an engine that would infer its own types)."""
    import duckdb

    from .files import duckdb_literal_name

    connection = duckdb.connect()

    def run(sql, params):
        try:
            return connection.execute(sql, params).fetchdf()
        except duckdb.Error as exc:
            raise BayesreproError(f"could not read data {label}: {first_line(exc)}") from None

    return json_lines_types(run, {"files": [duckdb_literal_name(file) for file in files]}, label)


_EXPRESSIONS = {
    "text": "{value}",
    "integer": "CAST({value} AS BIGINT)",
    "double": "CAST({value} AS DOUBLE)",
    "bool": "CAST({value} AS BOOLEAN)",
    # integers too large for a float64 to keep apart are identifiers, kept as written
    "number_text": "NULLIF(json_extract(j, {pointer})::VARCHAR, 'null')",
}
