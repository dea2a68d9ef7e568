"""The long table's columns, fixed before the first row is read, and a block's rows in them.

``item``, ``task``, ``model``, ``run``; the harness's settings (lm-eval:
``group``, ``seed``, ``num_fewshot``; Inspect: ``seed``, ``epoch``); one text
column per model argument and per task argument (Inspect); one float column
per metric under the harness's own name. An argument whose name is taken is
written as ``model_arg_<name>`` or ``task_arg_<name>`` (prefixed again while
that name is taken too): an argument never overwrites another column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ..errors import BayesreproError
from .runs import Block, Run

FIXED = ("item", "task", "model", "run")


@dataclass(frozen=True)
class Columns:
    settings: dict[str, pa.DataType]
    model_args: dict[str, str]
    task_args: dict[str, str]
    metrics: tuple[str, ...]

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(
            [(name, pa.string()) for name in FIXED]
            + list(self.settings.items())
            + [(column, pa.string()) for column in [*self.model_args.values(), *self.task_args.values()]]
            + [(name, pa.float64()) for name in self.metrics]
        )

    def table(self, run: Run, block: Block) -> pa.Table:
        rows = len(block)
        arrays = [block.items, _repeat(block.task, rows), _repeat(run.model, rows), _repeat(run.name, rows)]
        arrays += [_column(block.values.get(name), kind, rows) for name, kind in self.settings.items()]
        arrays += [_repeat(run.model_args.get(key), rows) for key in self.model_args]
        arrays += [_repeat(run.task_args.get(key), rows) for key in self.task_args]
        arrays += [_column(block.values.get(name), pa.float64(), rows) for name in self.metrics]
        return pa.Table.from_arrays(arrays, schema=self.schema)


def plan_columns(settings: dict[str, pa.DataType], runs: list[Run]) -> Columns:
    metrics = tuple(dict.fromkeys(name for run in runs for name in run.metrics))
    taken = set(FIXED) | set(settings)
    for run in runs:
        clash = next((name for name in run.metrics if name in taken), None)
        if clash:
            raise BayesreproError(
                f"'{run.source}' has a metric named '{clash}', the name of a column the import writes; "
                "leave it out with --metric"
            )
    taken |= set(metrics)
    model_args = _argument_columns([run.model_args for run in runs], "model_arg_", taken)
    task_args = _argument_columns([run.task_args for run in runs], "task_arg_", taken | set(model_args.values()))
    return Columns(dict(settings), model_args, task_args, metrics)


def _argument_columns(arguments: list[dict[str, str]], prefix: str, taken: set[str]) -> dict[str, str]:
    """Each argument's column: its own name, or when another column has that name, the name prefixed (again, until
    no column and no other argument has it)."""
    keys = list(dict.fromkeys(key for run_arguments in arguments for key in run_arguments))
    reserved = taken | set(keys)
    used = set(taken)
    columns = {}
    for key in keys:
        column = key
        if column in used:
            column = f"{prefix}{key}"
            while column in reserved or column in used:
                column = f"{prefix}{column}"
        used.add(column)
        columns[key] = column
    return columns


def _repeat(value: str | None, rows: int) -> pa.Array:
    """``value`` ``rows`` times, built from its buffers (pyarrow's own repeat is a thousand times slower)."""
    if value is None:
        return pa.nulls(rows, pa.string())
    encoded = value.encode("utf-8")
    offsets = np.arange(rows + 1, dtype=np.int32) * len(encoded)
    return pa.Array.from_buffers(pa.string(), rows, [None, pa.py_buffer(offsets), pa.py_buffer(encoded * rows)])


def _column(value, kind: pa.DataType, rows: int) -> pa.Array:
    if isinstance(value, (pa.Array, pa.ChunkedArray)):
        return value.cast(kind) if value.type != kind else value
    return pa.repeat(pa.scalar(value, type=kind), rows)
