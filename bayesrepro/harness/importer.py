"""One pass from harness logs to the long table: find runs, fix the columns, stream the rows through the checks.

Runs that did not finish are skipped with a warning each (``errors.warn_note``; an error under
``strict``); checks that fail refuse the whole import: two runs with
different documents under one id, a run given twice, two runs the table
could not tell apart (unless ``replications`` numbers them), a run whose
mean differs from the harness's own aggregate (``aggregates.py``).
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import pandas as pd
import pyarrow as pa

from ..errors import BayesreproError, warn_note
from ..output import atomic_path, check_writable
from .aggregates import MISMATCH, AggregateCheck, CheckSummary
from .columns import Columns, plan_columns
from .fields import describe
from .infinite import infinite_rows, refuse_infinite, without_rows
from .inspect_log import INSPECT
from .integrity import (DocumentRegistry, refuse_duplicate_runs, refuse_repeated_configurations, repeated_configurations,
                        replication_numbers)
from .lm_eval import LM_EVAL
from .paths import expand_paths
from .runs import Block, Harness, Run, Skipped, UnfinishedRun
from .sink import OUTPUT_SUFFIXES, FileSink, MemorySink

HARNESSES = {harness.name: harness for harness in (LM_EVAL, INSPECT)}
# Runs read ahead of the writer, by this many threads: parsing happens in
# C++ (pyarrow's JSON reader, Zstandard) outside Python's lock.
READERS, READ_AHEAD = 2, 4
# With replications, this column numbers runs with the same model, arguments and settings.
REPLICATION = "replication"


@dataclass
class ImportSummary:
    harness: str
    rows: int = 0
    runs: int = 0
    items: int = 0
    tasks: int = 0
    metrics: tuple[str, ...] = ()
    skipped: list[Skipped] = field(default_factory=list)
    dropped_samples: int = 0
    infinite_scores: int = 0
    aggregates: CheckSummary = field(default_factory=CheckSummary)
    out: str | None = None    # the table written, as the caller named it

    def to_dict(self) -> dict:
        """What ``bayesrepro import --json`` prints."""
        return {
            "harness": self.harness, "rows": self.rows, "runs": self.runs, "items": self.items,
            "tasks": self.tasks, "metrics": list(self.metrics),
            "skipped": [s.to_dict() for s in self.skipped], "dropped_samples": self.dropped_samples,
            "infinite_scores_dropped": self.infinite_scores,
            "aggregates": self.aggregates.to_dict(), "out": self.out,
        }

    def summary(self) -> str:
        """What ``bayesrepro import`` prints: the rows written, and the checks against the harness's aggregates."""
        skipped = f"; {len(self.skipped)} run(s) skipped" if self.skipped else ""
        return (f"{self.rows} rows from {self.runs} runs ({self.tasks} tasks, {self.items} items; metrics: "
                f"{', '.join(self.metrics)}) written to {self.out}{skipped}\n{self.aggregates.line()}")


def import_logs(harness: str, paths: Iterable[str | Path], out: str | Path, *, metrics: Sequence[str] | None = None,
                strict: bool = False, replications: bool = False, drop_infinite: bool = False,
                notify: Callable[[str], None] = warn_note) -> ImportSummary:
    """Write the long table of the logs under ``paths`` to ``out`` (.parquet or .csv); return what was imported.

    ``replications`` keeps runs with the same model, arguments and settings, numbered in a ``replication`` column;
    ``drop_infinite`` leaves out samples with an infinite score (counted), which are refused otherwise.
    """
    path = check_writable(out, OUTPUT_SUFFIXES)
    with atomic_path(path) as temporary:
        summary = _stream(harness, paths, lambda schema: FileSink(temporary, path.name, schema), metrics, strict,
                          replications, drop_infinite, notify)[0]
    return replace(summary, out=str(out))


def read_logs(harness: str, paths: Iterable[str | Path], *, metrics: Sequence[str] | None = None,
              strict: bool = False, replications: bool = False, drop_infinite: bool = False,
              notify: Callable[[str], None] = warn_note) -> pd.DataFrame:
    """The long table of the logs under ``paths`` as a DataFrame."""
    _, sink = _stream(harness, paths, MemorySink, metrics, strict, replications, drop_infinite, notify)
    return sink.frame()


def _stream(name: str, paths: Iterable[str | Path], open_sink: Callable, metrics: Sequence[str] | None,
            strict: bool, replications: bool, drop_infinite: bool,
            notify: Callable[[str], None]) -> tuple[ImportSummary, FileSink | MemorySink]:
    harness = _harness(name)
    paths = list(paths)
    runs, skipped = harness.find_runs(expand_paths(paths))
    for entry in skipped:
        _skip(entry, strict, notify)
    if not runs:
        raise _nothing_finished(harness, paths)
    refuse_duplicate_runs(runs)
    runs = _select_metrics(runs, metrics)
    numbers = replication_numbers(runs) if replications else None
    # Runs that repeat another's configuration are read first: one of them may turn out unfinished (and be
    # skipped), so whether the rest repeat one another is decided once they are read.
    repeated = set() if replications else {run.name for run in repeated_configurations(runs)}
    runs = sorted(runs, key=lambda run: run.name not in repeated)
    settings = harness.settings | ({REPLICATION: pa.int64()} if replications else {})
    columns = plan_columns(settings, runs)
    summary = ImportSummary(harness.name, metrics=columns.metrics, skipped=skipped)
    finished: list[Run] = []
    undecided = bool(repeated)
    sink = open_sink(columns.schema)
    try:
        writer = _RunWriter(columns, sink, numbers, summary, lambda line: _note(line, strict, notify), drop_infinite)
        for run, blocks in _read_ahead(harness, runs):
            repeated.discard(run.name)
            if isinstance(blocks, UnfinishedRun):
                entry = Skipped(run.source, str(blocks))
                _skip(entry, strict, notify)
                summary.skipped.append(entry)
            else:
                writer.write(run, blocks)
                finished.append(run)
            if undecided and not repeated:
                refuse_repeated_configurations(finished)
                undecided = False
    finally:
        sink.close()
    if not summary.runs:
        raise _nothing_finished(harness, paths)
    summary.items, summary.tasks = writer.documents.items, writer.documents.tasks
    return summary, sink


@dataclass
class _RunWriter:
    """Checks a finished run's blocks and appends their rows to the sink, counting them in the summary."""

    columns: Columns
    sink: FileSink | MemorySink
    replications: dict[tuple[str, str], int] | None
    summary: ImportSummary
    note: Callable[[str], None]
    drop_infinite: bool = False
    documents: DocumentRegistry = field(default_factory=DocumentRegistry)

    def write(self, run: Run, blocks: list[Block]) -> None:
        blocks = [self._finite(block) for block in blocks]
        for block in blocks:
            _refuse_mismatch(run, block.checks)
        for block in blocks:
            self.documents.check(run, block)
            if block.infinite:
                self.note(f"left out {block.infinite} sample(s) of '{block.source}' with an infinite score")
            if block.dropped - block.infinite:
                self.note(f"left out {block.dropped - block.infinite} sample(s) of '{block.source}' that ended in an "
                          "error")
            if self.replications is not None:
                block.values[REPLICATION] = self.replications[(run.name, block.task)]
            self.sink.write(self.columns.table(run, block))
            self.summary.rows += len(block)
            self.summary.dropped_samples += block.dropped
            self.summary.infinite_scores += block.infinite
        self.summary.runs += 1
        self.summary.aggregates.add(run.name, (check for block in blocks for check in block.checks))

    def _finite(self, block: Block) -> Block:
        rows, metric = infinite_rows(block, self.columns.metrics)
        if metric is None:
            return block
        if not self.drop_infinite:
            refuse_infinite(block, rows, metric)
        return without_rows(block, rows)


def _nothing_finished(harness: Harness, paths: list) -> BayesreproError:
    return BayesreproError(f"no finished {harness.name} run in {', '.join(map(str, paths))}")


def _refuse_mismatch(run: Run, checks: list[AggregateCheck]) -> None:
    for check in checks:
        if check.status == MISMATCH:
            found = check.reason or f"the mean of its rows is {check.ours!r}"
            raise BayesreproError(
                f"run '{run.name}', task '{check.task}', metric '{check.metric}': {found}, but the harness's own "
                f"aggregate in '{run.source}' is {describe(check.theirs)}; the samples are not those the harness scored "
                "(an edited or mixed-up file): re-copy the run or leave it out"
            )


def _harness(name: str) -> Harness:
    if name not in HARNESSES:
        raise BayesreproError(f"unknown harness '{name}'; choose one of: {', '.join(HARNESSES)}")
    return HARNESSES[name]


def _skip(entry: Skipped, strict: bool, notify: Callable[[str], None]) -> None:
    _note(f"skipped '{entry.path}': {entry.reason}", strict, notify)


def _note(line: str, strict: bool, notify: Callable[[str], None]) -> None:
    if strict:
        raise BayesreproError(f"{line} (--strict)")
    notify(line)


def _select_metrics(runs: list[Run], metrics: Sequence[str] | None) -> list[Run]:
    """Runs reading only the chosen metrics; runs with none of them are left out."""
    if not metrics:
        return runs
    available = dict.fromkeys(name for run in runs for name in run.metrics)
    unknown = [name for name in metrics if name not in available]
    if unknown:
        raise BayesreproError(f"--metric '{unknown[0]}' is in none of the runs (metrics: {', '.join(available)})")
    chosen = [replace(run, metrics=tuple(m for m in run.metrics if m in metrics)) for run in runs]
    return [run for run in chosen if run.metrics]


def _read_ahead(harness: Harness, runs: list[Run]) -> Iterator[tuple[Run, list[Block] | UnfinishedRun]]:
    """Each run with its blocks (or why it did not finish), in order, while the next runs are read in the background."""

    def read(run: Run) -> list[Block] | UnfinishedRun:
        try:
            return list(harness.read_blocks(run))
        except UnfinishedRun as unfinished:
            return unfinished

    pool = ThreadPoolExecutor(READERS)
    pending: deque = deque()
    try:
        for run in runs:
            pending.append((run, pool.submit(read, run)))
            if len(pending) > READ_AHEAD:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
