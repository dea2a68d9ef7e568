"""A ZIP file with Zstandard members, as Inspect writes ``.eval`` logs (for simulated logs).

Python's zipfile cannot write Zstandard members before Python 3.14, so the
headers are written here: each member's local header and data, then the
central directory and its end record (no ZIP64: members and archive stay
under 4 GiB).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path
from typing import Iterable

import pyarrow as pa

from .eval_zip import DEFLATED, STORED, ZSTANDARD

_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_END = struct.Struct("<4sHHHHIIH")
_DOS_DATE_1980 = 0x21
_VERSION = {STORED: 20, DEFLATED: 20, ZSTANDARD: 63}


def write_zip(path: Path, members: Iterable[tuple[str, bytes]], method: int = ZSTANDARD) -> None:
    """Write ``members`` (name, content) to ``path``, each compressed with ``method``."""
    entries = []
    with open(path, "wb") as out:
        for name, content in members:
            packed = _compress(content, method)
            encoded = name.encode("utf-8")
            crc = zlib.crc32(content)
            entries.append((encoded, crc, len(packed), len(content), out.tell()))
            out.write(_LOCAL.pack(b"PK\x03\x04", _VERSION[method], 0, method, 0, _DOS_DATE_1980,
                                  crc, len(packed), len(content), len(encoded), 0))
            out.write(encoded)
            out.write(packed)
        directory_start = out.tell()
        for encoded, crc, packed_size, size, offset in entries:
            out.write(_CENTRAL.pack(b"PK\x01\x02", _VERSION[method], _VERSION[method], 0, method, 0, _DOS_DATE_1980,
                                    crc, packed_size, size, len(encoded), 0, 0, 0, 0, 0, offset))
            out.write(encoded)
        directory_size = out.tell() - directory_start
        out.write(_END.pack(b"PK\x05\x06", 0, 0, len(entries), len(entries), directory_size, directory_start, 0))


def _compress(content: bytes, method: int) -> bytes:
    if method == ZSTANDARD:
        return pa.Codec("zstd").compress(content, asbytes=True)
    if method == DEFLATED:
        packer = zlib.compressobj(6, zlib.DEFLATED, -15)
        return packer.compress(content) + packer.flush()
    return content
