"""Spark: the grouped sums computed by a Spark session (local mode or a cluster) over a DataFrame or files.

The Python API takes a ``pyspark.sql.DataFrame``; the command line reads
files with ``--engine spark`` (``--spark-master``, default ``local[*]``). Only
the grouped results are collected to the driver. Files are read by the memory
reader's rules: CSV/TSV with the header line the memory reader checks, every
column as text, RFC 4180 quotes (``""`` inside quotes) and a refusal of any
row with more or fewer fields than the header (FAILFAST); JSON Lines typed
as ``json_lines`` types them; file names as written, never as Hadoop globs.
Columns are renamed by position, so that any name of the data means that one
column. A session started here writes its JVM's log to nowhere: errors reach
Python as exceptions and are reported in one line.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import subprocess
import warnings
from pathlib import Path

from ...errors import BayesreproError, first_line
from ...progress import Progress
from .files import data_files, hadoop_literal_name, shared_header
from .grouped import SPARK, GroupedSource, column_kind_of_sql_type, renamed_columns
from .polling import run_polled

_VIEWS = itertools.count()
_QUERIES = itertools.count()
DEFAULT_MASTER = "local[*]"
# PySpark's loggers that print a failed query's JVM stack on stderr; the failure is reported in one line instead
_QUERY_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")
SUFFIXES = {"csv": (".csv", ".csv.gz"), "tsv": (".tsv", ".tsv.gz"), "parquet": (".parquet",),
            "json": (".jsonl", ".jsonl.gz", ".ndjson", ".ndjson.gz")}


def is_spark_dataframe(data) -> bool:
    return type(data).__module__.startswith("pyspark.sql") and type(data).__name__ == "DataFrame"


def spark_source(data, where=None, drop_missing: bool = False, master: str | None = None,
                 text_columns=(), progress: bool | None = None) -> GroupedSource:
    """A source of model frames over a Spark DataFrame, or over files Spark reads (``master`` picks the cluster).

    ``progress`` shows the share of Spark's tasks finished on stderr (default: when stderr is a terminal).
    """
    _require_pyspark()
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    for name in _QUERY_LOGGERS:
        logging.getLogger(name).disabled = True
    try:
        frame = data if is_spark_dataframe(data) else _read_files(str(data), master)
        fields = frame.schema.fields
    except (PySparkException, Py4JJavaError) as exc:
        raise BayesreproError(f"Spark could not read '{data}': {_reason(exc)}") from None
    names = [field.name for field in fields]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise BayesreproError(f"the Spark DataFrame has the column '{repeated[0]}' more than once; rename one of them")
    kinds = {field.name: column_kind_of_sql_type(field.dataType.typeName()) for field in fields}
    aliases = renamed_columns(kinds)
    frame = frame.toDF(*aliases.values())
    session = frame.sparkSession
    context = session.sparkContext
    view = f"bayesrepro_rows_{next(_VIEWS)}"
    frame.createOrReplaceTempView(view)
    label = "the Spark DataFrame" if is_spark_dataframe(data) else f"'{data}'"

    def run(sql, parameters=None):
        group = f"{view}_query_{next(_QUERIES)}"

        def work():
            # each Python thread runs its jobs on a JVM thread of its own: the group marks this query's jobs only
            context.setJobGroup(group, "bayesrepro: grouped sums", interruptOnCancel=True)
            return session.sql(sql).toPandas()

        bar = Progress(f"summing {label} in Spark", progress)
        try:
            with warnings.catch_warnings():   # pyspark's note that Arrow failed precedes the error reported below
                warnings.filterwarnings("ignore", message="toPandas attempted Arrow optimization")
                return run_polled(work, lambda: _finished_tasks(context, group), bar,
                                  lambda: context.cancelJobGroup(group))
        except (PySparkException, Py4JJavaError) as exc:
            raise BayesreproError(f"Spark could not compute the grouped sums over {label}: {_reason(exc)}") from None

    return GroupedSource(run, SPARK.quote(view), kinds, SPARK, label, where, drop_missing, text_columns=text_columns,
                         aliases=aliases)


def _reason(exc: BaseException) -> str:
    """The first line of what Spark says went wrong (the JVM's exception, not py4j's call)."""
    java = getattr(exc, "java_exception", None)
    while java is not None and java.getCause() is not None:
        java = java.getCause()
    text = first_line(exc) if java is None else str(java.getMessage() or java.toString()).splitlines()[0]
    if "MALFORMED_RECORD" in text or "Malformed" in text:
        return ("a row of the data has more or fewer fields than the header (or a quote is not closed); every row "
                "needs one field per column")
    return text


def _require_pyspark() -> None:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        raise BayesreproError(
            "--engine spark needs pyspark, which is not installed: pip install 'bayesrepro[spark]' (and Java 17+)"
        ) from None


def _require_java() -> None:
    """Spark's driver runs in Java, found as pyspark finds it: under JAVA_HOME, else on the PATH."""
    home = os.environ.get("JAVA_HOME")
    java = Path(home, "bin", "java") if home else shutil.which("java")
    if not java or not Path(java).is_file():
        where = f"JAVA_HOME={home} has no bin/java" if home else "no java on the PATH"
        raise BayesreproError(f"--engine spark needs Java 17+ ({where}); install it (Debian: apt-get install "
                              "openjdk-17-jre-headless) or set JAVA_HOME")


def _finished_tasks(context, group: str) -> float:
    """The share of the tasks of the group's jobs that have finished, in the stages Spark has planned so far.

    A finished job counts the tasks it ran: stages whose results another job
    had already computed are skipped and never run their tasks.
    """
    tracker = context.statusTracker()
    done = total = 0
    for job in tracker.getJobIdsForGroup(group):
        info = tracker.getJobInfo(job)
        for stage in info.stageIds if info else ():
            stage_info = tracker.getStageInfo(stage)
            if stage_info:
                done += stage_info.numCompletedTasks
                total += stage_info.numCompletedTasks if info.status == "SUCCEEDED" else stage_info.numTasks
    return done / total if total else -1.0


def _read_files(path: str, master: str | None):
    """A Spark DataFrame of the files ``path`` names, read as the memory reader reads them."""
    from pyspark.sql.types import BooleanType, DoubleType, LongType, StringType, StructField, StructType

    if "://" in path:
        return _read_remote(path, master)
    files = data_files(path, lambda name: _format(name) is not None)
    formats = {_format(file) for file in files}
    if None in formats:
        unknown = next(file for file in files if _format(file) is None)
        raise BayesreproError(f"data file '{unknown}' has an unknown type for Spark; use CSV, TSV, Parquet or JSON Lines")
    if len(formats) > 1:
        raise BayesreproError("the data files mix formats; give files of one kind (CSV, TSV, Parquet or JSON Lines)")
    kind = formats.pop()
    session = _session(master)
    locations = [hadoop_literal_name(file) for file in files]
    if kind in ("csv", "tsv"):
        delimiter = "," if kind == "csv" else "\t"
        names = shared_header(files, delimiter)
        schema = StructType([StructField(f"v{k}", StringType()) for k in range(len(names))])
        frame = session.read.csv(locations, schema=schema, header=True, enforceSchema=True, sep=delimiter, quote='"',
                                 escape='"', multiLine=True, mode="FAILFAST", encoding="UTF-8")
        # a quoted empty field ("") is missing too, as in the memory reader; Spark reads it as an empty text
        return frame.replace("", None).toDF(*names)
    if kind == "parquet":
        return session.read.parquet(*locations)
    from .json_lines import json_lines_kinds

    spark_types = {"text": StringType(), "number_text": StringType(), "bool": BooleanType(), "double": DoubleType(),
                   "integer": LongType()}
    keys = json_lines_kinds(files, f"'{path}'")
    schema = StructType([StructField(name, spark_types[kind]) for name, kind in keys.items()])
    return session.read.json(locations, schema=schema, mode="FAILFAST")


def _read_remote(path: str, master: str | None):
    """Files on a cluster's file system (``hdfs://``, ``s3a://``), read by Spark's own rules: its globs, the
    header as Spark reads it and, for JSON Lines, the types Spark infers; rows are still checked (FAILFAST)."""
    kind = _format(path) or "parquet"
    session = _session(master)
    if kind in ("csv", "tsv"):
        return session.read.csv(path, header=True, sep="," if kind == "csv" else "\t", quote='"', escape='"',
                                multiLine=True, mode="FAILFAST", encoding="UTF-8")
    return session.read.parquet(path) if kind == "parquet" else session.read.json(path, mode="FAILFAST")


def _format(name: str) -> str | None:
    lower = name.lower()
    return next((kind for kind, suffixes in SUFFIXES.items() if lower.endswith(suffixes)), None)


def _session(master: str | None):
    """The active Spark session, or one started on ``master`` whose JVM writes no log lines to stderr."""
    from pyspark import SparkConf, SparkContext
    from pyspark.errors import PySparkException
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    _require_java()
    master = master or DEFAULT_MASTER
    # progress is drawn by bayesrepro when asked (--progress), not by Spark on every console
    conf = SparkConf().setMaster(master).setAppName("bayesrepro").set("spark.ui.showConsoleProgress", "false")
    try:
        if SparkContext._active_spark_context is None:
            SparkContext(conf=conf, gateway=launch_gateway(conf, popen_kwargs={"stderr": subprocess.DEVNULL}))
        session = SparkSession.builder.config(conf=conf).getOrCreate()
    except (PySparkException, RuntimeError) as exc:
        raise BayesreproError(f"Spark could not start (--spark-master {master}; Spark needs Java 17+): "
                              f"{first_line(exc)}") from None
    session.sparkContext.setLogLevel("ERROR")
    session.conf.set("spark.sql.caseSensitive", "true")
    return session
