"""Checks across runs: one document per (task, item), each run once."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
import pyarrow as pa

from ..errors import BayesreproError
from .runs import Block, Run


def refuse_duplicate_runs(runs: list[Run]) -> None:
    """Two files that are the same run (a copied folder, a log given twice) would count its rows twice."""
    for key, problem in ((lambda r: r.identity, "are the same run ({name}); import each run once"),
                         (lambda r: r.name, "are both named run '{name}'; rename one of the files")):
        seen: dict[str, Run] = {}
        for run in runs:
            other = seen.setdefault(key(run), run)
            if other is not run:
                raise BayesreproError(f"'{run.source}' and '{other.source}' " + problem.format(name=run.name))


@dataclass
class _TaskDocuments:
    """The first run's items and documents of a task; every item seen, once a run brings other items."""

    first_items: pa.Array
    first_documents: pa.Array
    first_run: str
    seen: pd.DataFrame | None = None

    def known(self) -> pd.DataFrame:
        if self.seen is None:
            self.seen = _documents_table(self.first_items, self.first_documents, self.first_run)
        return self.seen

    def __len__(self) -> int:
        return len(self.first_items) if self.seen is None else len(self.seen)


class DocumentRegistry:
    """The document each (task, item) stands for, as first seen, and the run that showed it.

    Two runs that evaluated different documents under one id cannot be
    compared item by item: the second is refused, naming both runs.
    """

    def __init__(self):
        self._tasks: dict[str, _TaskDocuments] = {}

    @property
    def items(self) -> int:
        return sum(map(len, self._tasks.values()))

    @property
    def tasks(self) -> int:
        return len(self._tasks)

    def check(self, run: Run, block: Block) -> None:
        items, documents = _one_per_item(run, block)
        entry = self._tasks.get(block.task)
        if entry is None:
            self._tasks[block.task] = _TaskDocuments(items, documents, run.name)
            return
        if items.equals(entry.first_items) and documents.equals(entry.first_documents):
            return
        known = entry.known()
        shared = known.reindex(items.to_pylist())
        differs = shared["document"].notna().to_numpy() & (shared["document"].to_numpy() != documents.to_numpy(zero_copy_only=False))
        if differs.any():
            at = int(differs.argmax())
            raise BayesreproError(
                f"task '{block.task}', item {items[at]}: runs '{shared['run'].iloc[at]}' and '{run.name}' "
                f"evaluated different documents under one id ('{block.source}'); import runs of the same data only"
            )
        new = _documents_table(items, documents, run.name)
        entry.seen = pd.concat([known, new[~new.index.isin(known.index)]])


def _documents_table(items: pa.Array, documents: pa.Array, run: str) -> pd.DataFrame:
    return pd.DataFrame({"document": documents.to_pylist(), "run": run}, index=items.to_pylist())


def _one_per_item(run: Run, block: Block) -> tuple[pa.Array, pa.Array]:
    """Items and their documents once each (Inspect repeats items over epochs); one document per item within the run."""
    if len(block.items) == len(set(block.items.to_pylist())):
        return block.items, block.documents
    pairs = pd.DataFrame({"item": block.items.to_pylist(), "document": block.documents.to_pylist()}).drop_duplicates()
    repeated = pairs["item"].duplicated()
    if repeated.any():
        raise BayesreproError(
            f"task '{block.task}', item {pairs['item'][repeated].iloc[0]}: run '{run.name}' holds different "
            f"documents under one id ('{block.source}')"
        )
    return pa.array(pairs["item"], type=pa.string()), pa.array(pairs["document"], type=pa.string())
