"""Per-sample scores that are infinite (``Infinity`` or ``1e400`` in a log): refused, or left out and counted.

A mean with an infinite term is infinite, and so is every variance the
analyses estimate from it. Missing scores (null, NaN) are no concern here:
the analyses refuse or drop them by their own options.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import BayesreproError
from .aggregates import not_applicable
from .runs import Block

DROP_OPTION = "--drop-infinite"


def infinite_rows(block: Block, metrics: tuple[str, ...]) -> tuple[np.ndarray, str | None]:
    """Which rows hold an infinite score in any metric column, and the first such metric."""
    rows = np.zeros(len(block), dtype=bool)
    first = None
    for name in metrics:
        column = block.values.get(name)
        if isinstance(column, (pa.Array, pa.ChunkedArray)):
            infinite = pc.fill_null(pc.is_inf(column.cast(pa.float64())), False).to_numpy(zero_copy_only=False)
            if first is None and infinite.any():
                first = name
            rows |= infinite
    return rows, first


def refuse_infinite(block: Block, rows: np.ndarray, metric: str) -> None:
    item = block.items[int(np.argmax(rows))]
    raise BayesreproError(
        f"'{block.source}': {int(rows.sum())} score(s) of task '{block.task}' are infinite (the first: metric "
        f"'{metric}' of item {item}); a score is a finite number: rerun or re-copy the log, or leave those samples "
        f"out with {DROP_OPTION}"
    )


def without_rows(block: Block, rows: np.ndarray) -> Block:
    """The block without ``rows``, counted as dropped; its mean can no longer be checked against the harness's."""
    keep = pa.array(~rows)
    values = {name: value.filter(keep) if isinstance(value, (pa.Array, pa.ChunkedArray)) else value
              for name, value in block.values.items()}
    left_out = int(rows.sum())
    checks = [not_applicable(check.task, check.metric, f"samples with an infinite score were left out ({DROP_OPTION})")
              for check in block.checks]
    return replace(block, items=block.items.filter(keep), documents=block.documents.filter(keep), values=values,
                   dropped=block.dropped + left_out, infinite=left_out, checks=checks)
