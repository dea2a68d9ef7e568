"""What a harness reader hands the importer: runs described by their headers, then blocks of rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import pyarrow as pa

from ..errors import BayesreproError
from .aggregates import AggregateCheck


@dataclass(frozen=True)
class Run:
    """One evaluation run, as its results file or log header describes it (no samples read yet).

    ``model_args`` and ``task_args`` are flat text (see ``model_args.py``);
    ``metrics`` are the metric columns the run's samples are read into;
    ``settings`` holds, per task, the harness's settings as (name, value)
    pairs (two runs whose rows could not be told apart have the same
    model, arguments and settings); ``started`` orders runs in time;
    ``detail`` is what the harness's own reader needs to find the samples.
    """

    source: Path
    name: str
    identity: str
    model: str
    model_args: dict[str, str]
    task_args: dict[str, str]
    metrics: tuple[str, ...]
    settings: dict[str, tuple] = field(compare=False)
    started: str = field(compare=False)
    detail: Any = field(repr=False, compare=False)

    def configuration(self, task: str) -> tuple:
        """What the table's columns say about this run's rows of ``task``, besides the run's name."""
        return (task, self.model, tuple(sorted(self.model_args.items())), tuple(sorted(self.task_args.items())),
                self.settings[task])


@dataclass(frozen=True)
class Skipped:
    """A run that was not imported, and why."""

    path: Path
    reason: str

    def to_dict(self) -> dict:
        return {"file": str(self.path), "reason": self.reason}


@dataclass
class Block:
    """Rows of one task of one run.

    ``values`` holds the setting and metric columns: an Arrow array with one
    value per row, or one Python value for the whole block. ``documents``
    says which document each item stands for (a hash), to be checked
    against the other runs. ``dropped`` counts the samples left out of the
    rows (samples that ended in an error, or had an infinite score: ``infinite``
    of them).
    """

    source: Path
    task: str
    items: pa.Array
    documents: pa.Array
    values: dict[str, Any]
    dropped: int = 0
    checks: list[AggregateCheck] = field(default_factory=list)
    infinite: int = 0

    def __len__(self) -> int:
        return len(self.items)


class UnfinishedRun(BayesreproError):
    """A run whose logs stop short (a samples file missing lines or cut inside one): skipped, not refused."""


@dataclass(frozen=True)
class Harness:
    """A reader of one harness's logs: the setting columns it fills, how it finds runs and reads their rows."""

    name: str
    settings: dict[str, pa.DataType]
    find_runs: Callable[[list], tuple[list[Run], list[Skipped]]]
    read_blocks: Callable[[Run], Iterator[Block]]
