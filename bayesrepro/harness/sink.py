"""Where the rows go as they are read: a Parquet or CSV file, or a table in memory."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.csv as pcsv
import pyarrow.parquet as pq

OUTPUT_SUFFIXES = (".parquet", ".csv")
# Rows per Parquet row group: large enough for fast scans, small enough that
# one group in memory stays far below the import's memory budget.
ROW_GROUP_ROWS = 1 << 20


class FileSink:
    """Rows appended to a Parquet or CSV file (by ``name``'s suffix), a row group at a time."""

    def __init__(self, path: Path, name: str, schema: pa.Schema):
        if name.lower().endswith(".parquet"):
            self._writer = pq.ParquetWriter(path, schema)
        else:
            self._writer = pcsv.CSVWriter(path, schema)
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, table: pa.Table) -> None:
        self._pending.append(table)
        self._pending_rows += table.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            self._flush()

    def close(self) -> None:
        self._flush()
        self._writer.close()

    def _flush(self) -> None:
        if self._pending:
            self._writer.write_table(pa.concat_tables(self._pending))
        self._pending, self._pending_rows = [], 0


class MemorySink:
    """Rows kept in memory, for analyses that read harness logs without an intermediate file."""

    def __init__(self, schema: pa.Schema):
        self._schema = schema
        self._tables: list[pa.Table] = []

    def write(self, table: pa.Table) -> None:
        self._tables.append(table)

    def close(self) -> None:
        pass

    def frame(self) -> pd.DataFrame:
        return pa.concat_tables(self._tables or [self._schema.empty_table()]).to_pandas()
