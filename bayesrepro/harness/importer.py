"""One pass from harness logs to the long table: find runs, fix the columns, stream the rows through the checks."""

from __future__ import annotations

import sys
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator, Sequence

import pandas as pd

from ..errors import BayesreproError
from ..output import atomic_path, check_writable
from .columns import plan_columns
from .inspect_log import INSPECT
from .integrity import DocumentRegistry, refuse_duplicate_runs
from .lm_eval import LM_EVAL
from .paths import expand_paths
from .runs import Block, Harness, Run, Skipped
from .sink import OUTPUT_SUFFIXES, FileSink, MemorySink

HARNESSES = {harness.name: harness for harness in (LM_EVAL, INSPECT)}
# Runs read ahead of the writer, by this many threads: parsing happens in
# C++ (pyarrow's JSON reader, Zstandard) outside Python's lock.
READERS, READ_AHEAD = 2, 4


def print_note(line: str) -> None:
    print(f"bayesrepro: {line}", file=sys.stderr)


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

    def to_dict(self) -> dict:
        return {
            "harness": self.harness, "rows": self.rows, "runs": self.runs, "items": self.items,
            "tasks": self.tasks, "metrics": list(self.metrics),
            "skipped": [s.to_dict() for s in self.skipped], "dropped_samples": self.dropped_samples,
        }


def import_logs(harness: str, paths: Iterable[str | Path], out: str | Path, *, metrics: Sequence[str] | None = None,
                strict: bool = False, notify: Callable[[str], None] = print_note) -> ImportSummary:
    """Write the long table of the logs under ``paths`` to ``out`` (.parquet or .csv); return what was imported."""
    out = check_writable(out, OUTPUT_SUFFIXES)
    with atomic_path(out) as temporary:
        return _stream(harness, paths, lambda schema: FileSink(temporary, out.name, schema), metrics, strict, notify)[0]


def read_logs(harness: str, paths: Iterable[str | Path], *, metrics: Sequence[str] | None = None,
              strict: bool = False, notify: Callable[[str], None] = print_note) -> pd.DataFrame:
    """The long table of the logs under ``paths`` as a DataFrame."""
    _, sink = _stream(harness, paths, MemorySink, metrics, strict, notify)
    return sink.frame()


def _stream(name: str, paths: Iterable[str | Path], open_sink: Callable, metrics: Sequence[str] | None,
            strict: bool, notify: Callable[[str], None]) -> tuple[ImportSummary, FileSink | MemorySink]:
    harness = _harness(name)
    paths = list(paths)
    runs, skipped = harness.find_runs(expand_paths(paths))
    for entry in skipped:
        _skip(f"skipped '{entry.path}': {entry.reason}", strict, notify)
    if not runs:
        raise BayesreproError(f"no finished {harness.name} run in {', '.join(map(str, paths))}")
    refuse_duplicate_runs(runs)
    runs = _select_metrics(runs, metrics)
    columns = plan_columns(harness.settings, runs)
    summary = ImportSummary(harness.name, runs=len(runs), metrics=columns.metrics, skipped=skipped)
    documents = DocumentRegistry()
    sink = open_sink(columns.schema)
    try:
        for run, blocks in _read_ahead(harness, runs):
            for block in blocks:
                documents.check(run, block)
                if block.dropped:
                    _skip(f"left out {block.dropped} sample(s) of '{block.source}' that ended in an error",
                          strict, notify)
                sink.write(columns.table(run, block))
                summary.rows += len(block)
                summary.dropped_samples += block.dropped
    finally:
        sink.close()
    summary.items, summary.tasks = documents.items, documents.tasks
    return summary, sink


def _harness(name: str) -> Harness:
    if name not in HARNESSES:
        raise BayesreproError(f"unknown harness '{name}'; choose one of: {', '.join(HARNESSES)}")
    return HARNESSES[name]


def _skip(line: str, strict: bool, notify: Callable[[str], None]) -> None:
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


def _read_ahead(harness: Harness, runs: list[Run]) -> Iterator[tuple[Run, list[Block]]]:
    """Each run with its blocks, in order, while the next runs are read in the background."""
    pool = ThreadPoolExecutor(READERS)
    pending: deque = deque()
    try:
        for run in runs:
            pending.append((run, pool.submit(lambda r: list(harness.read_blocks(r)), run)))
            if len(pending) > READ_AHEAD:
                done, future = pending.popleft()
                yield done, future.result()
        while pending:
            done, future = pending.popleft()
            yield done, future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
