"""How much memory a file takes once read into pandas, estimated before reading it (``--engine auto``).

The size on disk says little: a Parquet file of 200 MB holding 30 million
dictionary-encoded rows takes 8 GB in pandas. Parquet says how many rows it
holds and of which types; a number takes 8 bytes a cell, a text cell a
pointer and a Python string (about 64 bytes for a short identifier). Text
formats are estimated from their size: a CSV read into pandas took 3.5 times
its size on disk (2 million rows of an identifier, a system, a seed and a
score: 57 MB on disk, 196 MB read), and gzip records the size it inflates to.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pyarrow as pa

from ...readers import PARQUET

NUMBER_CELL = 8
TEXT_CELL = 64
TEXT_FILE_FACTOR = 3.5
# a gzip trailer holds the inflated size modulo 4 GiB; beyond it, a text file compresses about eightfold
_GZIP_FACTOR = 8


def expected_memory(path: Path) -> int:
    """The bytes the rows of ``path`` are expected to take in pandas (0 when the file cannot be examined)."""
    name = path.name.lower()
    try:
        if name.endswith(PARQUET):
            return _parquet_memory(path)
        return int(TEXT_FILE_FACTOR * _text_bytes(path, name))
    except (OSError, pa.ArrowException):
        return 0   # the reader chosen says what is wrong with the file


def _parquet_memory(path: Path) -> int:
    import pyarrow.parquet as pq

    metadata = pq.read_metadata(path)
    schema = metadata.schema.to_arrow_schema()
    row = sum(NUMBER_CELL if _is_fixed_width(field.type) else TEXT_CELL for field in schema)
    return metadata.num_rows * row


def _is_fixed_width(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_boolean(kind) \
        or pa.types.is_temporal(kind) or pa.types.is_decimal(kind)


def _text_bytes(path: Path, name: str) -> int:
    size = path.stat().st_size
    if not name.endswith(".gz") or size < 4:
        return size
    with open(path, "rb") as compressed:
        compressed.seek(-4, 2)
        (inflated,) = struct.unpack("<I", compressed.read(4))
    return inflated if inflated >= size else _GZIP_FACTOR * size
