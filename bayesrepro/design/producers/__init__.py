"""Producers of model frames: one currency (grouped sums) from rows in memory, from files through DuckDB, or from Spark.

``--engine auto`` keeps small inputs in memory, hands directories, globs and
files that would take much memory in pandas to DuckDB (out of core, only
grouped results reach Python) and a Spark DataFrame to Spark. DuckDB and Spark are imported only when used.
"""

from __future__ import annotations

import stat
from pathlib import Path

from ...data import HARNESS_PREFIXES
from ...errors import BayesreproError
from ...readers import file_mode
from .memory_estimate import expected_memory

ENGINES = ("auto", "memory", "duckdb", "spark")
# Files expected to take more than this in pandas (memory_estimate.py) are summed by DuckDB: an analysis in
# memory takes about two and a half times the rows it reads (30 million rows: 8.5 GB).
LARGE_FRAME_BYTES = 512 * 2**20


def choose_engine(data, engine: str) -> str:
    """The engine ``auto`` stands for, given the data; a named engine is checked against the data."""
    from .spark_source import is_spark_dataframe

    if engine not in ENGINES:
        raise BayesreproError(f"--engine '{engine}' is unknown; choose one of: {', '.join(ENGINES)}")
    if is_spark_dataframe(data):
        if engine not in ("auto", "spark"):
            raise BayesreproError(f"a Spark DataFrame is summed by Spark; use --engine spark, not '{engine}'")
        return "spark"
    if engine == "duckdb" and not isinstance(data, (str, Path)):
        raise BayesreproError("--engine duckdb reads files; give a file path, a directory or a glob")
    if isinstance(data, str) and data.startswith(HARNESS_PREFIXES):
        if engine in ("duckdb", "spark"):
            harness, _, logs = data.partition(":")
            raise BayesreproError(
                f"--engine {engine} reads tables, and '{data}' is harness logs, read in memory: use --engine memory, "
                f"or import them first (bayesrepro import {harness} {logs} --out runs.parquet) and give runs.parquet"
            )
        return "memory"
    if engine != "auto":
        return engine
    if isinstance(data, (str, Path)):
        path = Path(data)
        mode = file_mode(path)
        if (mode is not None and stat.S_ISDIR(mode)) or any(ch in str(data) for ch in "*?["):
            return "duckdb"
        if mode is not None and stat.S_ISREG(mode) and expected_memory(path) > LARGE_FRAME_BYTES:
            return "duckdb"
    return "memory"
