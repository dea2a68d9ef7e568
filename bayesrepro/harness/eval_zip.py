"""JSON members of an Inspect ``.eval`` archive: a ZIP whose members are Zstandard-compressed.

An archive holds one member per sample and epoch besides the few read here
(header, summaries), so only the archive's central directory is read, and
only the entries asked for are decoded: Python's zipfile would build an
object for every member and cannot inflate Zstandard before Python 3.14.
Each member's bytes are taken from behind its local header and inflated
(Zstandard through pyarrow's codec, Deflate through zlib for logs of older
Inspect versions), then checked against the CRC the archive records. The
last entry under a name wins, as Inspect reads superseded members.

A member is inflated only when the size its directory entry declares is
within bounds (``MAX_MEMBER_BYTES``; ``MAX_RATIO`` times its compressed size
for members beyond ``RATIO_FLOOR``), and never to more bytes than it
declares: a small archive that would inflate to gigabytes, or whose ZIP64
sizes are forged, is refused before memory is spent on it.
"""

from __future__ import annotations

import re
import struct
import zlib
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa

from ..errors import BayesreproError, first_line
from .json_text import parse_json

STORED, DEFLATED, ZSTANDARD = 0, 8, 93
_END = struct.Struct("<4sHHHHIIH")
_END_SIGNATURE = b"PK\x05\x06"
_ZIP64_LOCATOR = struct.Struct("<4sIQI")
_ZIP64_END = struct.Struct("<4sQHHIIQQQQ")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")
_CENTRAL_SIGNATURE = b"PK\x01\x02"
_LOCAL = struct.Struct("<4s22xHH")
_LOCAL_SIGNATURE = b"PK\x03\x04"
_ZIP64_EXTRA = 0x0001
_FULL32, _FULL16 = 0xFFFFFFFF, 0xFFFF
# The sample summaries of a run of 100,000 samples take about 300 MB; parsing a member takes about
# three times its size in memory (the bytes, a copy for the parser, its columns): this bound keeps a read
# well under 4 GB.
MAX_MEMBER_BYTES = 512 * 2**20
# Inspect's JSON compresses about tenfold; a member that inflates more than this is a ZIP bomb
# (checked beyond RATIO_FLOOR, where the memory matters).
MAX_RATIO = 200
RATIO_FLOOR = 16 * 2**20
# Members parsed into Python objects (header, journal) are small; a summaries member is parsed by pyarrow.
MAX_PARSED_BYTES = 128 * 2**20
_INFLATE_CHUNK = 1 << 20


@dataclass(frozen=True)
class Member:
    name: str
    method: int
    crc: int
    packed_size: int
    size: int
    offset: int


class EvalArchive:
    """An open ``.eval`` file; use as a context manager."""

    def __init__(self, path: Path):
        self.path = Path(path)
        try:
            self._file = open(self.path, "rb")
        except OSError as exc:
            raise BayesreproError(f"could not open '{path}': {first_line(exc)}") from None
        try:
            self._directory = self._read_directory()
        except BaseException:
            self._file.close()
            raise

    def __enter__(self) -> "EvalArchive":
        return self

    def __exit__(self, *exc_info) -> None:
        self._file.close()

    def member(self, name: str) -> Member | None:
        """The last entry named ``name``, or None."""
        encoded = name.encode("utf-8")
        end = len(self._directory)
        while (at := self._directory.rfind(encoded, 0, end)) >= 0:
            entry = self._entry_at(at - _CENTRAL.size, len(encoded))
            if entry is not None:
                return entry
            end = at + len(encoded) - 1
        return None

    def members_matching(self, pattern: re.Pattern[bytes]) -> list[Member]:
        """Every entry whose whole name matches ``pattern`` (a bytes regex), in archive order."""
        found = (self._entry_at(m.start() - _CENTRAL.size, m.end() - m.start())
                 for m in pattern.finditer(self._directory))
        return [entry for entry in found if entry is not None]

    def read_json(self, member: Member):
        data = self.read_raw(member, limit=MAX_PARSED_BYTES)
        return parse_json(data, f"'{self.path}': member '{member.name}'")

    def _read_directory(self) -> bytes:
        self._file.seek(0, 2)
        size = self._size = self._file.tell()
        tail_start = max(0, size - _END.size - _FULL16)
        self._file.seek(tail_start)
        tail = self._file.read()
        at = tail.rfind(_END_SIGNATURE)
        if at < 0 or len(tail) - at < _END.size:
            raise self._unreadable("no ZIP directory at its end")
        _, _, _, _, entries, directory_size, directory_offset, _ = _END.unpack_from(tail, at)
        if _FULL32 in (directory_size, directory_offset) or entries == _FULL16:
            directory_size, directory_offset = self._zip64_directory(tail_start + at)
        if directory_offset + directory_size > size:
            raise self._unreadable("its ZIP directory points past its end")
        self._file.seek(directory_offset)
        return self._file.read(directory_size)

    def _zip64_directory(self, end_offset: int) -> tuple[int, int]:
        self._file.seek(end_offset - _ZIP64_LOCATOR.size)
        locator = self._file.read(_ZIP64_LOCATOR.size)
        if len(locator) < _ZIP64_LOCATOR.size or locator[:4] != b"PK\x06\x07":
            raise self._unreadable("its ZIP64 directory locator is missing")
        self._file.seek(_ZIP64_LOCATOR.unpack(locator)[2])
        record = self._file.read(_ZIP64_END.size)
        if len(record) < _ZIP64_END.size or record[:4] != b"PK\x06\x06":
            raise self._unreadable("its ZIP64 directory record is missing")
        fields = _ZIP64_END.unpack(record)
        return fields[8], fields[9]

    def _entry_at(self, start: int, name_length: int) -> Member | None:
        """The directory entry starting at ``start`` if one starts there with a name of that length."""
        directory = self._directory
        if start < 0 or directory[start:start + 4] != _CENTRAL_SIGNATURE:
            return None
        fields = _CENTRAL.unpack_from(directory, start)
        if fields[10] != name_length:
            return None
        flags, method, crc, packed, size, extra_length, offset = (
            fields[3], fields[4], fields[7], fields[8], fields[9], fields[11], fields[16])
        name_start = start + _CENTRAL.size
        name = directory[name_start:name_start + name_length].decode("utf-8", errors="replace")
        if flags & 0x1:
            raise BayesreproError(f"'{self.path}': member '{name}' is encrypted; .eval logs are not")
        if _FULL32 in (packed, size, offset):
            extra = directory[name_start + name_length:name_start + name_length + extra_length]
            try:
                size, packed, offset = _zip64_values(extra, size, packed, offset)
            except (struct.error, StopIteration):
                raise self._unreadable(f"the ZIP64 sizes of member '{name}' are damaged") from None
        return Member(name, method, crc, packed, size, offset)

    def read_raw(self, member: Member, limit: int = MAX_MEMBER_BYTES) -> bytes:
        """The member's content, inflated to at most the size it declares and checked against its CRC."""
        self._check_size(member, limit)
        if member.method not in (ZSTANDARD, DEFLATED, STORED):
            raise BayesreproError(
                f"'{self.path}': member '{member.name}' uses ZIP compression method {member.method}, "
                "which .eval logs do not use"
            )
        raw = self._raw_bytes(member)
        try:
            data = raw if member.method == STORED else _inflate(raw, member.method, member.size)
        except (OSError, zlib.error, pa.ArrowException) as exc:
            raise self._corrupt(member, first_line(exc)) from None
        if len(data) != member.size:
            raise self._corrupt(member, f"it inflates to more or fewer than the {member.size:,} bytes it declares")
        if zlib.crc32(data) != member.crc:
            raise self._corrupt(member, "its checksum does not match")
        return data

    def _check_size(self, member: Member, limit: int) -> None:
        # every size is checked before anything is allocated for it: a forged ZIP64 entry may claim 2**62 bytes
        if member.offset + member.packed_size > self._size:
            raise self._corrupt(member, f"it claims {member.packed_size:,} compressed bytes at offset "
                                        f"{member.offset:,}, past the end of the {self._size:,}-byte file")
        if member.size > limit or member.packed_size > limit + _INFLATE_CHUNK:
            declared = (f"{member.size:,} bytes inflated" if member.size > limit else
                        f"{member.packed_size:,} compressed bytes")
            raise BayesreproError(
                f"'{self.path}': member '{member.name}' declares {declared}, more than the {limit:,} a .eval member "
                "is read up to; the archive is damaged or not an Inspect log"
            )
        if member.size > RATIO_FLOOR and member.size > MAX_RATIO * member.packed_size:
            raise BayesreproError(
                f"'{self.path}': member '{member.name}' would inflate {member.packed_size:,} bytes to "
                f"{member.size:,}, more than {MAX_RATIO} times; Inspect's logs do not compress so far: the archive "
                "is damaged or built to exhaust memory"
            )

    def _raw_bytes(self, member: Member) -> bytes:
        self._file.seek(member.offset)
        header = self._file.read(_LOCAL.size)
        if len(header) < _LOCAL.size or header[:4] != _LOCAL_SIGNATURE:
            raise self._corrupt(member, "its local header is missing")
        _, name_length, extra_length = _LOCAL.unpack(header)
        self._file.seek(member.offset + _LOCAL.size + name_length + extra_length)
        raw = self._file.read(member.packed_size)
        if len(raw) < member.packed_size:
            raise self._corrupt(member, "the file ends inside it")
        return raw

    def _unreadable(self, what: str) -> BayesreproError:
        return BayesreproError(
            f"'{self.path}' is not a readable .eval archive ({what}); it may be cut short: rerun or re-copy it"
        )

    def _corrupt(self, member: Member, what: str) -> BayesreproError:
        return BayesreproError(
            f"'{self.path}' is a corrupt .eval archive: member '{member.name}' cannot be read ({what}); "
            "rerun or re-copy the log"
        )


def _inflate(raw: bytes, method: int, size: int) -> bytes:
    """``raw`` inflated, stopping one byte past ``size``: a member that holds more than it declares is not read whole."""
    if method == DEFLATED:
        inflater = zlib.decompressobj(-15)
        return inflater.decompress(raw, size + 1)
    stream = pa.CompressedInputStream(pa.BufferReader(raw), "zstd")
    parts, read = [], 0
    while read <= size:
        part = stream.read(min(_INFLATE_CHUNK, size + 1 - read))
        if not part:
            break
        parts.append(part)
        read += len(part)
    return b"".join(parts)


def _zip64_values(extra: bytes, size: int, packed: int, offset: int) -> tuple[int, int, int]:
    """Sizes and offset from the ZIP64 extra field, for those the directory entry marks as too large."""
    at = 0
    while at + 4 <= len(extra):
        kind, length = struct.unpack_from("<HH", extra, at)
        if kind == _ZIP64_EXTRA:
            values = iter(struct.unpack_from(f"<{length // 8}Q", extra, at + 4))
            size = next(values) if size == _FULL32 else size
            packed = next(values) if packed == _FULL32 else packed
            offset = next(values) if offset == _FULL32 else offset
            break
        at += 4 + length
    return size, packed, offset
