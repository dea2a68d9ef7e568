"""Rows of an Inspect run from its sample summaries (or samples): item, epoch, document, scores.

A run's summaries are one JSON array. When its fields have one type
throughout (text input and target, one type of value per scorer, as the
first summary shows), pyarrow parses the array in C++ with a schema of only
the fields needed; otherwise, or when pyarrow refuses, the array is read
by ``json`` and walked in Python. Both give the same rows: samples that
ended in an error are left out (and counted), a sample's document is the
start of its input text and its target, a score is its value as Inspect's
``value_to_float()`` reads it, and a missing or NaN score is null.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from ..errors import BayesreproError
from .fields import LogFields
from .json_text import parse_json
from .inspect_scores import UnreadableScore, score_to_float

# Summaries keep the first 5,120 characters of a sample's input; a shorter
# prefix tells documents apart the same way in summaries and full samples.
DOCUMENT_PREFIX = 1000
_PLACEHOLDERS = {"(Image)", "(Audio)", "(Video)", "(Data)", "(Document)"}
# The first summary, read to learn the fields' types, lies within this many bytes.
_FIRST_RECORD_BYTES = 1 << 20
_VALUE_TYPES = {str: pa.string(), bool: pa.bool_(), int: pa.float64(), float: pa.float64()}


@dataclass
class Rows:
    items: pa.Array
    epochs: pa.Array
    documents: pa.Array
    metrics: dict[str, pa.Array]
    dropped: int


def rows_from_summaries(data: bytes, source: Path, metrics: Sequence[str]) -> Rows:
    """Rows from the bytes of ``summaries.json``."""
    return _rows_with_arrow(data, source, metrics) or rows_from_records(_parse(data, source), source, metrics)


def _parse(data: bytes, source: Path):
    return parse_json(data, f"Inspect log '{source}': its sample summaries")


def rows_from_records(records, source: Path, metrics: Sequence[str]) -> Rows:
    """Rows from summaries or samples already parsed; a re-run sample's last record wins, as in Inspect."""
    if not isinstance(records, list) or not all(isinstance(r, dict) and "id" in r and "epoch" in r for r in records):
        raise BayesreproError(f"Inspect log '{source}': its samples are not a list of objects with 'id' and 'epoch'")
    fields = LogFields(source, "Inspect log")
    keyed = {(fields.identifier(r["id"], f"samples[{k}].id"), fields.whole_value(r["epoch"], f"samples[{k}].epoch")): r
             for k, r in enumerate(records)}
    items, epochs, documents, dropped = [], [], [], 0
    values: dict[str, list] = {name: [] for name in metrics}
    for (item, epoch), record in keyed.items():
        if record.get("error"):
            dropped += 1
            continue
        scores = _scores(source, record, metrics)
        items.append(item)
        epochs.append(epoch)
        documents.append(_document(record.get("input"), record.get("target")))
        for name, column in values.items():
            column.append(scores.get(name))
    return Rows(pa.array(items, pa.string()), pa.array(epochs, pa.int64()), pa.array(documents, pa.string()),
                {name: pa.array(column, pa.float64()) for name, column in values.items()}, dropped)


def _scores(source: Path, record: dict, metrics: Sequence[str]) -> dict[str, float | None]:
    """The record's scores by column: a scorer's value, or one column per key of a dictionary value."""
    row = {}
    scores = record.get("scores") or {}
    if not isinstance(scores, dict):
        raise LogFields(source, "Inspect log").refusal(f"scores of sample {record['id']}", scores, "an object")
    for scorer, score in scores.items():
        if not isinstance(score, dict):
            raise BayesreproError(
                f"Inspect log '{source}': score '{scorer}' of sample {record['id']} (epoch {record.get('epoch')}) is "
                f"{json.dumps(score)[:40]}, not an object {{\"value\": ...}} as Inspect writes a score; the log was "
                f"edited or written by another tool: write it as {{\"value\": {json.dumps(score)[:20]}}}"
            )
        value = score.get("value")
        for name, entry in (value.items() if isinstance(value, dict) else [(scorer, value)]):
            if name in metrics:
                number = _float(source, record["id"], name, entry)
                row[name] = None if math.isnan(number) else number
    return row


def _float(source: Path, sample, name: str, value) -> float:
    try:
        return score_to_float(value)
    except UnreadableScore:
        raise BayesreproError(
            f"Inspect log '{source}': score '{name}' of sample {sample} is {json.dumps(value)[:40]}, "
            "which is no number, C/I/P/N, yes/no or true/false"
        ) from None


def _document(prompt, target) -> str:
    if isinstance(prompt, list):
        prompt = "\n".join(_message_text(message) for message in prompt)
    if isinstance(target, list):
        target = "\x1f".join(map(str, target))
    return f"{str(prompt)[:DOCUMENT_PREFIX]}\x1e{str(target)[:DOCUMENT_PREFIX]}"


def _message_text(message) -> str:
    content = message.get("content") if isinstance(message, dict) else message
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part["text"] for part in content
            if isinstance(part, dict) and part.get("type") == "text" and part.get("text") not in _PLACEHOLDERS
        )
    return ""


def _rows_with_arrow(data: bytes, source: Path, metrics: Sequence[str]) -> Rows | None:
    schema = _schema_from_first(data, metrics)
    if schema is None:
        return None
    wrapped = b'{"s":' + data + b"}"
    options = pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore", newlines_in_values=True)
    try:
        table = pj.read_json(pa.BufferReader(wrapped), parse_options=options,
                             read_options=pj.ReadOptions(block_size=len(wrapped) + 1, use_threads=False))
    except pa.ArrowInvalid:
        return None
    records = pc.list_flatten(table.column("s")).combine_chunks()
    if _has_repeats(records):
        return None
    errors = records.field("error")
    kept = records if errors.null_count == len(errors) else records.filter(pc.or_kleene(pc.is_null(errors), pc.equal(errors, "")))
    ids = kept.field("id")
    documents = pc.binary_join_element_wise(pc.utf8_slice_codeunits(kept.field("input"), 0, DOCUMENT_PREFIX),
                                            pc.utf8_slice_codeunits(kept.field("target"), 0, DOCUMENT_PREFIX), "\x1e")
    values = {name: _scores_as_floats(source, ids, pc.struct_field(kept, ["scores", name, "value"]), name)
              for name in metrics}
    return Rows(ids.cast(pa.string()), kept.field("epoch"), documents, values, len(records) - len(kept))


def _schema_from_first(data: bytes, metrics: Sequence[str]) -> pa.Schema | None:
    """The fields' types as the first summary has them, or None when they are not plain values."""
    start = data.find(b"{")
    try:
        first, _ = json.JSONDecoder().raw_decode(data[start:start + _FIRST_RECORD_BYTES].decode("utf-8", errors="ignore"))
    except (ValueError, RecursionError):
        return None
    scores = first.get("scores") or {}
    values = {name: (scores.get(name) or {}).get("value") if isinstance(scores.get(name), dict) else None for name in metrics}
    if not (isinstance(first.get("input"), str) and isinstance(first.get("target"), str)
            and type(first.get("id")) in (str, int) and all(type(v) in _VALUE_TYPES for v in values.values())):
        return None
    record = pa.struct([
        ("id", pa.string() if isinstance(first["id"], str) else pa.int64()), ("epoch", pa.int64()),
        ("input", pa.string()), ("target", pa.string()), ("error", pa.string()),
        ("scores", pa.struct([(name, pa.struct([("value", _VALUE_TYPES[type(v)])])) for name, v in values.items()])),
    ])
    return pa.schema([("s", pa.list_(record))])


def _has_repeats(records: pa.StructArray) -> bool:
    keys = pc.binary_join_element_wise(records.field("id").cast(pa.string()), records.field("epoch").cast(pa.string()), "\x1f")
    return pc.count_distinct(keys).as_py() != len(keys)


def _scores_as_floats(source: Path, ids: pa.Array, values: pa.Array, name: str) -> pa.Array:
    if pa.types.is_string(values.type):
        distinct = pc.unique(values.drop_null())
        numbers = []
        for value in distinct.to_pylist():
            if value is not None:
                sample = ids[pc.index(values, value).as_py()]
                numbers.append(_float(source, sample, name, value))
        values = pc.take(pa.array(numbers, pa.float64()), pc.index_in(values, distinct))
    values = values.cast(pa.float64())
    return pc.if_else(pc.is_nan(values), pa.scalar(None, pa.float64()), values)
