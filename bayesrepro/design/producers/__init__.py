"""Producers of model frames: one currency (grouped sums) from rows in memory, from files through DuckDB, or from Spark.

``model_frame`` dispatches to them: ``--engine auto`` keeps small inputs in memory, hands directories, globs and
files that would take much memory in pandas to DuckDB (out of core, only grouped results reach Python) and a Spark
DataFrame to Spark. DuckDB and Spark are imported only when used, and so are the modules of the grouped producers
(with the condition language of --where they take tens of milliseconds of every command's start-up): rows in memory
need none of them.
"""

from __future__ import annotations

import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ...data import HARNESS_PREFIXES, read_table
from ...datasets import DATASETS, dataset_path
from ...errors import BayesreproError
from ...readers import file_mode
from ..formula import FormulaSpec, parse_formula
from ..frame import ModelFrame, build_model_frame
from ..memory_estimate import parse_memory
from .memory_estimate import expected_memory

if TYPE_CHECKING:
    from .grouped import GroupedSource

ENGINES = ("auto", "memory", "duckdb", "spark")
# Files expected to take more than this in pandas (memory_estimate.py) are summed by DuckDB: an analysis in
# memory takes about two and a half times the rows it reads (30 million rows: 8.5 GB).
LARGE_FRAME_BYTES = 512 * 2**20


def choose_engine(data, engine: str) -> str:
    """The engine ``auto`` stands for, given the data; a named engine is checked against the data."""
    if engine not in ENGINES:
        raise BayesreproError(f"--engine '{engine}' is unknown; choose one of: {', '.join(ENGINES)}")
    if _is_spark_dataframe(data):
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


def model_frame(formula, data, where: str | None = None, drop_missing: bool = False, engine: str = "auto",
                spark_master: str | None = None, categorical=(), progress: bool | None = None,
                max_memory=None) -> ModelFrame:
    """The frame of ``formula`` over ``data`` (a DataFrame, a file path, a glob, a bundled dataset name or a
    Spark DataFrame), filtered by ``where``, built by the engine ``engine`` names.

    ``categorical`` columns are read as text whatever they hold; ``progress`` shows the scans of
    DuckDB or Spark on stderr (default: when stderr is a terminal); ``max_memory`` (bytes or a size such
    as ``'4G'``; default half the machine's memory) bounds every dense block built for the frame.
    """
    if data is None:
        raise BayesreproError("a model needs data: a DataFrame, a file path or a bundled dataset name")
    spec = formula if isinstance(formula, FormulaSpec) else parse_formula(formula)
    scores = [c for c in (spec.response, spec.trials) if isinstance(c, str) and c in set(categorical)]
    if scores:
        raise BayesreproError(f"--categorical names the score column '{scores[0]}', but a score is a number; "
                              "leave it out of --categorical")
    if spec.has_slopes and choose_engine(data, engine) != "memory":
        raise BayesreproError("random slopes need the rows in memory; use --engine memory")
    limit = None if max_memory is None else parse_memory(max_memory)
    if choose_engine(data, engine) == "memory":
        return build_model_frame(formula, read_table(data, where=where, categorical=categorical),
                                 drop_missing=drop_missing).with_memory_limit(limit)
    source = grouped_source(data, engine, where, drop_missing, spark_master, categorical, progress)
    return source.frame(formula).with_memory_limit(limit)


def grouped_source(data, engine: str, where: str | None = None, drop_missing: bool = False,
                   spark_master: str | None = None, categorical=(), progress: bool | None = None) -> GroupedSource:
    """The producer that sums ``data`` where it lives: DuckDB or Spark, as ``engine`` and the data say
    (``model_frame``'s arguments)."""
    from ...where import as_where
    from . import duckdb_source, spark_source

    chosen = choose_engine(data, engine)
    if chosen == "memory":
        raise BayesreproError("rows in memory have no grouped source; use --engine duckdb or spark")
    condition = as_where(where)
    if chosen == "duckdb":
        return duckdb_source.duckdb_source(_data_path(data), condition, drop_missing, progress=progress,
                                           text_columns=categorical)
    return spark_source.spark_source(data, condition, drop_missing, spark_master, text_columns=categorical,
                                     progress=progress)


def _is_spark_dataframe(data) -> bool:
    # a Spark DataFrame exists only once pyspark is imported; until then its producer's modules are not loaded
    if "pyspark" not in sys.modules:
        return False
    from .spark_source import is_spark_dataframe

    return is_spark_dataframe(data)


def _data_path(data) -> str:
    if str(data) in DATASETS and not Path(str(data)).exists():
        return str(dataset_path(str(data)))
    return str(data)
