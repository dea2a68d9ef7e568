"""Where a CSV/TSV file holds a row too long to read, in the user's terms: its row, its column, its size.

Arrow's reader fails on a row longer than its block ("straddling object"),
DuckDB's on a line longer than its ``max_line_size`` ("Parallel CSV Reader
not implemented"); neither says where. Both engines read rows of up to
``MAX_ROW_BYTES`` (lines of up to ``MAX_LINE_BYTES`` as written); a longer row is found by one streaming pass (Python's csv
module, in C, with a field limit) and its fields are then measured from its
first byte, a chunk at a time, so that a field of gigabytes is never held in
memory. A score or a level is short text: such a field is a stray column of
model outputs, or a quote that was never closed.
"""

from __future__ import annotations

import csv
import gzip
import io
from pathlib import Path

from .errors import BayesreproError

# the longest row (its fields' bytes) either engine reads ...
MAX_ROW_BYTES = 64 * 2**20
# ... and the line as written, whose quotes may double its bytes: Arrow's block and DuckDB's line buffer
MAX_LINE_BYTES = 4 * MAX_ROW_BYTES
_CHUNK = 1 << 20


def refuse_long_row(path: Path, delimiter: str, limit: int | None = None) -> None:
    """Raise a one-line error naming the first row of ``path`` longer than ``limit`` (default
    ``MAX_ROW_BYTES``), its longest field's column and size; return if there is none."""
    limit = MAX_ROW_BYTES if limit is None else limit
    found = long_row(path, delimiter, limit)
    if found is None:
        return
    row, column, size = found
    raise BayesreproError(
        f"data file '{path}': data row {row:,} (row 1 is the first below the header), column '{column}', holds a "
        f"field of {size:,} bytes as written, more than the {limit:,} a row may hold; a score or a level is short text: drop "
        "that column from the file, or close the quote that runs on from that field"
    )


def long_row(path: Path, delimiter: str, limit: int = MAX_ROW_BYTES) -> tuple[int, str, int] | None:
    """(data row, column, bytes of its longest field as written) of the first row longer than ``limit``, or None."""
    previous = csv.field_size_limit()
    csv.field_size_limit(limit)
    number, row_end_line, header = 0, 1, []
    try:
        with _open(path) as raw, io.TextIOWrapper(raw, encoding="utf-8-sig", errors="replace", newline="") as text:
            reader = csv.reader(text, delimiter=delimiter)
            header = next(reader, [])
            row_end_line = reader.line_num
            for number, row in enumerate(reader, start=1):
                if sum(len(field.encode()) for field in row) > limit:
                    break
                row_end_line = reader.line_num
            else:
                return None
    except csv.Error:   # a field past the limit
        number += 1
    finally:
        csv.field_size_limit(previous)
    j, size = _measure_row(path, row_end_line, delimiter.encode())
    return number, _column(header, j), size


def _column(header: list[str], j: int) -> str:
    return header[j] if j < len(header) else f"field {j + 1} (past the header's {len(header)})"


def _measure_row(path: Path, lines_before: int, delimiter: bytes) -> tuple[int, int]:
    """(index, bytes) of the longest field of the row that starts after ``lines_before`` lines."""
    with _open(path) as raw:
        data = _Bytes(raw)
        at = data.after_lines(lines_before)
        longest, j = (0, 0), 0
        while True:
            if data.byte(at) == b'"':
                end = data.closing_quote(at + 1)
            else:
                end = data.find((delimiter, b"\n", b"\r"), at)
            longest = max(longest, (end - at, -j))
            if data.byte(end) != delimiter:   # the row's end, or the file's
                return -longest[1], longest[0]
            at, j = end + 1, j + 1


class _Bytes:
    """A binary stream read forwards a chunk at a time, with finds that never hold more than one chunk."""

    def __init__(self, raw):
        self.raw, self.start, self.chunk = raw, 0, b""

    def _load(self, at: int) -> bool:
        """Make the chunk hold position ``at``; False past the end."""
        while at >= self.start + len(self.chunk):
            block = self.raw.read(_CHUNK)
            if not block:
                return False
            self.start, self.chunk = self.start + len(self.chunk), block
        return True

    def byte(self, at: int) -> bytes:
        return self.chunk[at - self.start:at - self.start + 1] if self._load(at) else b""

    def after_lines(self, lines: int) -> int:
        """The position after the ``lines``-th newline."""
        at = 0
        while lines:
            if not self._load(at):
                return at
            found = self.chunk.find(b"\n", at - self.start)
            if found < 0:
                at = self.start + len(self.chunk)
                continue
            at, lines = self.start + found + 1, lines - 1
        return at

    def find(self, needles: tuple[bytes, ...], at: int) -> int:
        """The first position from ``at`` holding one of ``needles`` (one byte each), or the end."""
        while self._load(at):
            offset = at - self.start
            hits = [k for k in (self.chunk.find(n, offset) for n in needles) if k >= 0]
            if hits:
                return self.start + min(hits)
            at = self.start + len(self.chunk)
        return at

    def closing_quote(self, at: int) -> int:
        """The position after the quote that closes a quoted field opened before ``at`` ("" is a quote in it)."""
        while True:
            at = self.find((b'"',), at)
            if not self.byte(at):
                return at
            if self.byte(at + 1) != b'"':
                return at + 1
            at += 2


def _open(path: Path):
    return gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")
