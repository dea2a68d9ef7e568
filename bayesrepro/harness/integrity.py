"""Checks across runs: one document per (task, item), each run once, and no two runs the table cannot tell apart."""

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


def replication_numbers(runs: list[Run]) -> dict[tuple[str, str], int]:
    """Each run's number, per task, among the runs of that task with the same model, arguments and settings
    (1, 2, … in the order they started): the ``replication`` column that tells such runs apart."""
    numbers = {}
    for repeats in _same_configuration(runs).values():
        for number, (run, task) in enumerate(sorted(repeats, key=lambda pair: (pair[0].started, pair[0].name)), 1):
            numbers[(run.name, task)] = number
    return numbers


def repeated_configurations(runs: list[Run]) -> list[Run]:
    """The runs that evaluated a task with the same model, arguments and settings as another run."""
    return list({run.name: run for repeats in _same_configuration(runs).values() if len(repeats) > 1
                 for run, _ in repeats}.values())


def refuse_repeated_configurations(runs: list[Run]) -> None:
    """Two runs of a task with the same model, arguments and settings would give rows that no column tells apart."""
    for repeats in _same_configuration(runs).values():
        if len(repeats) > 1:
            (first, task), (second, _) = sorted(repeats, key=lambda pair: (pair[0].started, pair[0].name))[:2]
            raise BayesreproError(
                f"runs '{first.name}' and '{second.name}' both evaluated task '{task}' with model '{first.model}' and "
                f"the same model arguments and settings ({_settings_text(first, task)}): their rows could not be told "
                "apart; import one of them, or both with 'bayesrepro import --replications' (a column 'replication' "
                "numbers them)"
            )


def _same_configuration(runs: list[Run]) -> dict[tuple, list[tuple[Run, str]]]:
    groups: dict[tuple, list[tuple[Run, str]]] = {}
    for run in runs:
        for task in run.settings:
            groups.setdefault(run.configuration(task), []).append((run, task))
    return groups


def _settings_text(run: Run, task: str) -> str:
    return ", ".join(f"{name} {value}" for name, value in run.settings[task])


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
