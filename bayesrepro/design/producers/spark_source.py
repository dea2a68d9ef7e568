"""Spark: the grouped sums computed by a Spark session (local mode or a cluster) over a DataFrame or files.

The Python API takes a ``pyspark.sql.DataFrame``; the command line reads
files with ``--engine spark`` (``--spark-master``, default ``local[*]``). Only
the grouped results are collected to the driver. CSV files are read with
every column as text, as everywhere else.
"""

from __future__ import annotations

import itertools
import os
import shutil
from pathlib import Path

from ...errors import BayesreproError, first_line
from ...progress import Progress
from .grouped import SPARK, GroupedSource
from .polling import run_polled

_VIEWS = itertools.count()
_QUERIES = itertools.count()
DEFAULT_MASTER = "local[*]"


def is_spark_dataframe(data) -> bool:
    return type(data).__module__.startswith("pyspark.sql") and type(data).__name__ == "DataFrame"


def spark_source(data, where=None, drop_missing: bool = False, master: str | None = None,
                 text_columns=(), progress: bool | None = None) -> GroupedSource:
    """A source of model frames over a Spark DataFrame, or over files Spark reads (``master`` picks the cluster).

    ``progress`` shows the share of Spark's tasks finished on stderr (default: when stderr is a terminal).
    """
    _require_pyspark()
    from pyspark.errors import PySparkException

    frame = data if is_spark_dataframe(data) else _read_files(str(data), master)
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
            return run_polled(work, lambda: _finished_tasks(context, group), bar, lambda: context.cancelJobGroup(group))
        except PySparkException as exc:
            raise BayesreproError(f"Spark could not compute the grouped sums: {first_line(exc)}") from None

    names = [field.name for field in frame.schema.fields]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise BayesreproError(f"the Spark DataFrame has the column '{repeated[0]}' more than once; rename one of them")
    schema = {field.name: field.dataType.typeName() == "string" for field in frame.schema.fields}
    return GroupedSource(run, SPARK.quote(view), schema, SPARK, label, where, drop_missing, text_columns=text_columns)


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
    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    lower = path.lower()
    if not Path(path).exists() and not any(ch in path for ch in "*?["):
        raise BayesreproError(f"no data files match '{path}'")
    _require_java()
    try:
        # progress is drawn by bayesrepro when asked (--progress), not by Spark on every console
        session = (SparkSession.builder.master(master or DEFAULT_MASTER).appName("bayesrepro")
                   .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    except PySparkException as exc:
        raise BayesreproError(f"Spark could not start (--spark-master {master or DEFAULT_MASTER}; Spark needs Java "
                              f"17+): {first_line(exc)}") from None
    session.sparkContext.setLogLevel("ERROR")
    # Spark resolves a relative path against the directory its JVM started in, which a long-lived process (a
    # notebook that changed directory since) has left
    location = path if "://" in path else os.path.abspath(path)
    if lower.endswith((".csv", ".csv.gz")):
        return session.read.csv(location, header=True, inferSchema=False)
    if lower.endswith((".tsv", ".tsv.gz")):
        return session.read.csv(location, header=True, inferSchema=False, sep="\t")
    if lower.endswith(".parquet") or Path(path).is_dir():
        return session.read.parquet(location)
    if lower.endswith((".jsonl", ".jsonl.gz", ".ndjson")):
        return session.read.json(location)
    raise BayesreproError(f"data file '{path}' has an unknown type for Spark; use CSV, TSV, Parquet or JSON Lines")
