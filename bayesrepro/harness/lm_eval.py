"""lm-evaluation-harness logs: ``results_<date>.json`` beside ``samples_<task>_<date>.jsonl``.

``lm_eval --log_samples --output_path OUT`` writes, per run, one results
file ``OUT/<model>/results_<date>.json`` (``<stem>_<date>.json`` when OUT
names a .json file) and one samples file per task in the same folder,
``samples_<task>_<date>.jsonl``, one line per document and filter with
``doc_id``, ``doc_hash``, ``filter`` and one key per metric. Runs of one
model share a folder and are told apart by the date alone. The results file
holds the settings (``config.random_seed``, ``config.model_args``,
``n-shot``), the number of documents per task (``n-samples``) and the
harness's aggregates under ``"<metric>,<filter>"``, which each task's rows
are checked against (``lm_eval_aggregates.py``).

lm-eval writes the results file first and then the samples files, one
after the other. A run stopped on the way leaves a results file whose
samples files are missing, short or cut inside a line; a folder copied in
part may hold samples files without their results file. Such runs did not
finish (or did not arrive) and are skipped, not refused.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Iterator

import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import BayesreproError, first_line
from .fields import INT64, LogFields
from .json_text import parse_json
from .jsonl import ID, NUMBER, TEXT, CutShort, read_fields
from .lm_eval_aggregates import aggregation_of, check_column
from .model_args import flatten_model_args
from .paths import FoundFile
from .runs import Block, Harness, Run, Skipped, UnfinishedRun

_DATE = r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?"
RESULTS_FILE = re.compile(rf"^(?P<stem>.+)_(?P<date>{_DATE})\.json$")
SAMPLES_FILE = re.compile(rf"^samples_(?P<task>.+)_(?P<date>{_DATE})\.jsonl$")
SETTINGS = {"group": pa.string(), "seed": pa.int64(), "num_fewshot": pa.int64()}


@dataclass(frozen=True)
class TaskSamples:
    """One task of a run: its samples file, settings, metric columns as (metric, filter), and each column's
    aggregate in the results file with the name of the aggregation that made it."""

    task: str
    path: Path
    group: str
    num_fewshot: int | None
    documents: int | None
    columns: dict[str, tuple[str, str]]
    aggregates: dict[str, tuple[object, str | None]]


@dataclass(frozen=True)
class RunDetail:
    seed: int | None
    tasks: tuple[TaskSamples, ...]


def find_runs(files: list[FoundFile]) -> tuple[list[Run], list[Skipped]]:
    results: dict[Path, FoundFile] = {}
    samples: dict[Path, FoundFile] = {}
    for found in files:
        if SAMPLES_FILE.match(found.path.name):
            samples[found.path.resolve()] = found
        elif RESULTS_FILE.match(found.path.name):
            results[found.path.resolve()] = found
        elif found.named:
            raise BayesreproError(
                f"'{found.path}' is not an lm-eval log: expected results_<date>.json or samples_<task>_<date>.jsonl"
            )
    for found in [f for f in samples.values() if f.named]:
        owner = _results_file_of(found.path)
        if owner is not None:
            results.setdefault(owner.resolve(), FoundFile(owner, named=True))
    runs, skipped = [], []
    for found in results.values():
        read = _read_results(found)
        if isinstance(read, Run):
            runs.append(read)
        elif isinstance(read, Skipped):
            skipped.append(read)
    claimed = {path.resolve() for path in _samples_paths(runs, skipped)}
    skipped += _orphans([found.path for path, found in samples.items() if path not in claimed], runs)
    return _told_apart(runs), skipped


def _told_apart(runs: list[Run]) -> list[Run]:
    """Runs of one model and date in different folders (seed 1 in a/, seed 2 in b/) named with the folders that
    tell them apart (a/org__model/<date>, b/org__model/<date>); copies of one run keep one name (and are refused
    as the same run)."""
    by_name: dict[str, list[Run]] = {}
    for run in runs:
        by_name.setdefault(run.name, []).append(run)
    renamed = {}
    for name, group in by_name.items():
        if len({run.identity for run in group}) < 2:
            continue
        folders = [run.source.parent.resolve().parts for run in group]
        common = 0
        while all(len(parts) > common + 1 and parts[common] == folders[0][common] for parts in folders):
            common += 1
        for run, parts in zip(group, folders):
            apart = parts[common:-1] or parts[common:]
            renamed[id(run)] = replace(run, name=f"{'/'.join(apart)}/{name}")
    return [renamed.get(id(run), run) for run in runs]


def _results_file_of(samples_path: Path) -> Path | None:
    date = SAMPLES_FILE.match(samples_path.name)["date"]
    candidates = sorted(samples_path.parent.glob(f"*_{date}.json"))
    return candidates[0] if candidates else None


def _samples_paths(runs: list[Run], skipped: list[Skipped]) -> list[Path]:
    """The samples files that belong to a results file read (imported or skipped)."""
    paths = [task.path for run in runs for task in run.detail.tasks]
    for entry in skipped:
        date = RESULTS_FILE.match(entry.path.name)["date"]
        paths += entry.path.parent.glob(f"samples_*_{date}.jsonl")
    return paths


def _orphans(paths: list[Path], read: list[Run]) -> list[Skipped]:
    """Samples files without their results file, one entry per run (folder and date); a samples file of a task
    that the results file of its folder and date does not list is named as such."""
    owners = {(run.source.parent.resolve(), run.started): run for run in read}
    runs: dict[tuple[Path, str], list[Path]] = {}
    for path in paths:
        runs.setdefault((path.parent, SAMPLES_FILE.match(path.name)["date"]), []).append(path)
    skipped = []
    for (folder, date), files in runs.items():
        owner = owners.get((folder.resolve(), date))
        if owner is None:
            skipped.append(Skipped(files[0], f"{len(files)} samples file(s) of {date} without their results file "
                                             f"(results_{date}.json): the run did not finish, or its results file "
                                             "was not copied"))
            continue
        listed = ", ".join(task.task for task in owner.detail.tasks)
        for path in files:
            task = SAMPLES_FILE.match(path.name)["task"]
            skipped.append(Skipped(path, f"samples of task '{task}', which the results file '{owner.source.name}' "
                                         f"beside it does not list (it lists: {listed}); its rows are not imported: "
                                         "remove the file, or copy in the results file of the run that wrote it"))
    return skipped


def _read_results(found: FoundFile) -> Run | Skipped | None:
    path = found.path
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise BayesreproError(f"lm-eval results file '{path}' cannot be read: {first_line(exc)}") from None
    data = parse_json(text, f"lm-eval results file '{path}'")
    if not (isinstance(data, dict) and isinstance(data.get("results"), dict) and isinstance(data.get("configs"), dict)):
        if found.named:
            raise BayesreproError(f"'{path}' is not an lm-eval results file: it has no 'results' and 'configs'")
        return None
    date = RESULTS_FILE.match(path.name)["date"]
    fields = LogFields(path, "lm-eval results file")
    config = fields.object(data, "config", "config")
    model_args = flatten_model_args(_model_args(fields, config), f"lm-eval results file '{path}': config.model_args")
    model = (fields.text(data, "model_name", "model_name") or _model_from_args(model_args)
             or fields.text(config, "model", "config.model"))
    if not model:
        raise BayesreproError(f"lm-eval results file '{path}' names no model (no model_name, no config.model)")
    folder = fields.text(data, "model_name_sanitized", "model_name_sanitized") or re.sub(r"[\"<>:/|\\?*\[\]]+", "__", model)
    name = f"{folder}/{date}"
    groups = _outer_groups(_group_subtasks(fields, data))
    tasks = tuple(_task_samples(fields, data, task, date, groups) for task in data["configs"])
    if not tasks:
        raise BayesreproError(f"lm-eval results file '{path}' lists no tasks under 'configs'")
    missing = next((task for task in tasks if not task.path.is_file()), None)
    if missing is not None:
        return Skipped(path, f"no samples file for task '{missing.task}' ({missing.path.name}): the run did not "
                             "finish writing its samples (or ran without --log_samples)")
    metrics = tuple(dict.fromkeys(column for task in tasks for column in task.columns))
    seed = fields.whole(config, "random_seed", "config.random_seed", INT64)
    settings = {task.task: (("seed", seed), ("num_fewshot", task.num_fewshot)) for task in tasks}
    # a copy of a run has the same content; two runs of one model and date (in two folders) do not
    identity = f"{name}#{hashlib.sha256(text).hexdigest()}"
    return Run(path, name, identity, model, model_args, {}, metrics, settings, date, RunDetail(seed, tasks))


def _model_from_args(model_args: dict[str, str]) -> str | None:
    # the keys lm-eval itself takes the model name from, in its order
    for key in ("peft", "delta", "pretrained", "model", "path", "engine"):
        if key in model_args:
            return model_args[key]
    return None


def _model_args(fields: LogFields, config: dict) -> str | dict | None:
    """``config.model_args``: lm-eval's argument string, or an object of arguments."""
    value = config.get("model_args")
    if value is not None and not isinstance(value, (str, dict)):
        raise fields.refusal("config.model_args", value, "an object or a text of name=value pairs")
    return value


def _group_subtasks(fields: LogFields, data: dict) -> dict[str, list[str]]:
    groups = fields.object(data, "group_subtasks", "group_subtasks")
    for group in groups:
        children = fields.listing(groups, group, f"group_subtasks.{group}") or []
        for k, child in enumerate(children):
            if not isinstance(child, str):
                raise fields.refusal(f"group_subtasks.{group}[{k}]", child, "a task's name")
    return groups


def _outer_groups(group_subtasks: dict) -> dict[str, str]:
    """Each task's outermost group (mmlu for mmlu_anatomy under mmlu_stem under mmlu)."""
    parent = {child: group for group, children in group_subtasks.items() for child in children or ()}
    outer = {}
    for task in parent:
        top, seen = task, {task}
        while top in parent and parent[top] not in seen:
            top = parent[top]
            seen.add(top)
        outer[task] = top
    return outer


def _task_samples(fields: LogFields, data: dict, task: str, date: str, groups: dict[str, str]) -> TaskSamples:
    path = fields.source
    aggregates = data["results"].get(task)
    if not isinstance(aggregates, dict):
        raise BayesreproError(f"lm-eval results file '{path}' has no results for task '{task}'")
    pairs = [tuple(key.split(",", 1)) for key in aggregates if "," in key and not key.split(",", 1)[0].endswith("_stderr")]
    if not pairs:
        raise BayesreproError(f"lm-eval results file '{path}' has no metrics for task '{task}'")
    filters = list(dict.fromkeys(f for _, f in pairs))
    columns = _metric_columns(pairs, len(filters) > 1, f"lm-eval results file '{path}', task '{task}'")
    task_config = fields.object(data["configs"], task, f"configs.{task}")
    checked = {column: (aggregates[f"{metric},{f}"], aggregation_of(task_config, metric))
               for column, (metric, f) in columns.items()}
    samples = path.parent / f"samples_{task}_{date}.jsonl"
    shots = fields.object(data, "n-shot", "n-shot")
    shots = (fields.whole(shots, task, f"n-shot.{task}") if task in shots
             else fields.whole(task_config, "num_fewshot", f"configs.{task}.num_fewshot"))
    counts = fields.object(fields.object(data, "n-samples", "n-samples"), task, f"n-samples.{task}")
    documents = fields.whole(counts, "effective", f"n-samples.{task}.effective")
    return TaskSamples(task, samples, groups.get(task, task), shots, documents, columns, checked)


def _metric_columns(pairs: list[tuple[str, str]], by_filter: bool, where: str) -> dict[str, tuple[str, str]]:
    """The column of each (metric, filter): the metric, or metric_filter when a task has several filters. Filters
    whose names differ only in signs (a-b, a_b) are written with the signs' code points where they would meet
    (acc_a_x2d_b beside acc_a_b)."""
    plain = [metric if not by_filter else f"{metric}_{_slug(f)}" for metric, f in pairs]
    meeting = {name for name in plain if plain.count(name) > 1}
    columns: dict[str, tuple[str, str]] = {}
    for name, (metric, f) in zip(plain, pairs):
        if name in meeting and by_filter and _slug(f) != f:
            name = f"{metric}_{_escaped(f)}"
        other = columns.setdefault(name, (metric, f))
        if other != (metric, f):
            raise BayesreproError(
                f"{where}: metric '{other[0]}' under filter '{other[1]}' and metric '{metric}' under filter '{f}' "
                f"would both become the column '{name}'; import one of them with --metric"
            )
    return columns


def _escaped(filter_name: str) -> str:
    """A filter's name with each sign that is not a letter, digit or '_' written as x and its code point."""
    return re.sub(r"\W", lambda m: f"_x{ord(m.group()):x}_", filter_name).strip("_").replace("__", "_")


def _slug(filter_name: str) -> str:
    """A filter's name as part of a column name that formulas can use (strict-match: strict_match)."""
    return re.sub(r"\W+", "_", filter_name).strip("_")


def read_blocks(run: Run) -> Iterator[Block]:
    for task in run.detail.tasks:
        columns = {column: pair for column, pair in task.columns.items() if column in run.metrics}
        if columns:
            yield _read_task(run, task, columns)


def _read_task(run: Run, task: TaskSamples, columns: dict[str, tuple[str, str]]) -> Block:
    metrics = list(dict.fromkeys(metric for metric, _ in columns.values()))
    fields = {"doc_id": ID, "doc_hash": TEXT, "filter": TEXT} | {metric: NUMBER for metric in metrics}
    try:
        lines = read_fields(task.path, fields)
    except CutShort as cut:
        raise UnfinishedRun(f"{cut}; the run did not finish writing its samples") from None
    filters = list(dict.fromkeys(f for _, f in columns.values()))
    unknown = set(pc.unique(lines["filter"]).to_pylist()) - {f for _, f in task.columns.values()}
    if unknown:
        raise BayesreproError(
            f"'{task.path}' has documents under filter '{sorted(unknown)[0]}', which its results file "
            f"'{run.source}' does not list for task '{task.task}'"
        )
    by_filter = {f: _rows_of_filter(task, lines, f) for f in filters}
    first = by_filter[filters[0]]
    items = first["doc_id"]
    values = {"group": task.group, "seed": run.detail.seed, "num_fewshot": task.num_fewshot}
    checks = []
    for column, (metric, f) in columns.items():
        values[column] = _aligned(task, by_filter[f], metric, items, f)
        in_file_order = by_filter[f][metric].to_numpy(zero_copy_only=False)
        checks.append(check_column(task.task, column, in_file_order, *task.aggregates[column]))
    return Block(task.path, task.task, items, first["doc_hash"], values, checks=checks)


def _rows_of_filter(task: TaskSamples, lines: dict[str, pa.Array], name: str) -> dict[str, pa.Array]:
    keep = pc.equal(lines["filter"], name)
    rows = {key: pc.filter(column, keep) for key, column in lines.items()}
    ids = rows["doc_id"]
    if len(ids) == 0:
        raise BayesreproError(f"'{task.path}' has no documents under filter '{name}'")
    if pc.count_distinct(ids).as_py() != len(ids):
        repeated = pd.Series(ids.to_pylist())
        raise BayesreproError(
            f"'{task.path}' holds doc_id {repeated[repeated.duplicated()].iloc[0]} twice under filter '{name}'; "
            "a samples file holds each document once"
        )
    if task.documents is not None and len(ids) < task.documents:
        raise UnfinishedRun(
            f"'{task.path}' holds {len(ids)} documents under filter '{name}' but its results file counts "
            f"{task.documents}: the run did not finish writing its samples"
        )
    if task.documents is not None and len(ids) > task.documents:
        raise BayesreproError(
            f"'{task.path}' holds {len(ids)} documents under filter '{name}' but its results file counts only "
            f"{task.documents}; the samples file is not the one this results file describes: re-copy the run"
        )
    return rows


def _aligned(task: TaskSamples, rows: dict[str, pa.Array], metric: str, items: pa.Array, name: str) -> pa.Array:
    """The metric of ``rows`` in the order of ``items`` (filters may list documents in different orders)."""
    if rows["doc_id"].equals(items):
        return rows[metric]
    positions = pd.Index(rows["doc_id"].to_pylist()).get_indexer(items.to_pylist())
    if (positions < 0).any():
        missing = items[int((positions < 0).argmax())]
        raise BayesreproError(f"'{task.path}' has no line for doc_id {missing} under filter '{name}'")
    return pc.take(rows[metric], pa.array(positions))


LM_EVAL = Harness("lm-eval", SETTINGS, find_runs, read_blocks)
