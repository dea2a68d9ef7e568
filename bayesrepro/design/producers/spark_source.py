"""Spark: the grouped sums computed by a Spark session (local mode or a cluster) over a DataFrame or files.

The Python API takes a ``pyspark.sql.DataFrame``; the command line reads
files with ``--engine spark`` (``--spark-master``, default ``local[*]``). Only
the grouped results are collected to the driver. CSV files are read with
every column as text, as everywhere else.
"""

from __future__ import annotations

import itertools
from pathlib import Path

from ...errors import BayesreproError, first_line
from .grouped import SPARK, GroupedSource

_VIEWS = itertools.count()
DEFAULT_MASTER = "local[*]"


def is_spark_dataframe(data) -> bool:
    return type(data).__module__.startswith("pyspark.sql") and type(data).__name__ == "DataFrame"


def spark_source(data, where=None, drop_missing: bool = False, master: str | None = None,
                 text_columns=()) -> GroupedSource:
    """A source of model frames over a Spark DataFrame, or over files Spark reads (``master`` picks the cluster)."""
    from pyspark.errors import PySparkException

    frame = data if is_spark_dataframe(data) else _read_files(str(data), master)
    session = frame.sparkSession
    view = f"bayesrepro_rows_{next(_VIEWS)}"
    frame.createOrReplaceTempView(view)

    def run(sql, parameters=None):
        try:
            return session.sql(sql).toPandas()
        except PySparkException as exc:
            raise BayesreproError(f"Spark could not compute the grouped sums: {first_line(exc)}") from None

    names = [field.name for field in frame.schema.fields]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise BayesreproError(f"the Spark DataFrame has the column '{repeated[0]}' more than once; rename one of them")
    schema = {field.name: field.dataType.typeName() == "string" for field in frame.schema.fields}
    label = "the Spark DataFrame" if is_spark_dataframe(data) else f"'{data}'"
    return GroupedSource(run, SPARK.quote(view), schema, SPARK, label, where, drop_missing, text_columns=text_columns)


def _read_files(path: str, master: str | None):
    from pyspark.sql import SparkSession

    lower = path.lower()
    session = SparkSession.builder.master(master or DEFAULT_MASTER).appName("bayesrepro").getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    if not Path(path).exists() and not any(ch in path for ch in "*?["):
        raise BayesreproError(f"no data files match '{path}'")
    if lower.endswith((".csv", ".csv.gz")):
        return session.read.csv(path, header=True, inferSchema=False)
    if lower.endswith((".tsv", ".tsv.gz")):
        return session.read.csv(path, header=True, inferSchema=False, sep="\t")
    if lower.endswith(".parquet") or Path(path).is_dir():
        return session.read.parquet(path)
    if lower.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        return session.read.json(path)
    raise BayesreproError(f"data file '{path}' has an unknown type for Spark; use CSV, TSV, Parquet or JSON Lines")
