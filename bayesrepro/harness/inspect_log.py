"""Inspect AI logs: ``.eval`` archives and ``.json`` logs, one run of one task each.

A ``.eval`` file is a ZIP: ``header.json`` (the log without samples:
``status``, ``eval`` with the task, model, model arguments and epochs,
``plan.config`` with the seed, ``task_args``, ``results.scores`` with the aggregates) and
``summaries.json`` (per sample and epoch: ``id``, ``epoch``, ``input``,
``target``, ``scores[<scorer>].value``, ``error``). A run still going, or
killed, has only ``_journal/start.json`` and journal summaries. A ``.json``
log is the same object in one file, its ``samples`` in place of the
summaries. Runs whose status is not "success" did not finish and are
skipped; the rows are built by ``inspect_rows.py`` and checked against the
header's aggregates by ``inspect_aggregates.py``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pyarrow as pa

from ..errors import BayesreproError, first_line
from .eval_zip import EvalArchive
from .fields import INT64, LogFields
from .json_text import parse_json
from .inspect_aggregates import ScoringPlan, check_scores, scoring_plan
from .inspect_rows import Rows, rows_from_records, rows_from_summaries
from .model_args import flatten_model_args
from .paths import FoundFile
from .runs import Block, Harness, Run, Skipped

SETTINGS = {"seed": pa.int64(), "epoch": pa.int64()}
HEADER, START, SUMMARIES = "header.json", "_journal/start.json", "summaries.json"
_JOURNAL_SUMMARY = re.compile(rb"_journal/summaries/(\d+)\.json")


@dataclass(frozen=True)
class LogDetail:
    task: str
    seed: int | None
    scoring: ScoringPlan


def find_runs(files: list[FoundFile]) -> tuple[list[Run], list[Skipped]]:
    runs, skipped = [], []
    for found in files:
        header = _header(found)
        if header is None:
            continue
        status = LogFields(found.path, "Inspect log").text(header, "status", "status")
        if status == "success":
            runs.append(_run(found.path, header))
        else:
            skipped.append(Skipped(found.path, _unfinished(header)))
    return runs, skipped


def _header(found: FoundFile) -> dict | None:
    suffix = found.path.suffix.lower()
    if suffix == ".eval":
        with EvalArchive(found.path) as archive:
            if header := archive.member(HEADER):
                return _checked(found.path, archive.read_json(header))
            if start := archive.member(START):
                return _checked(found.path, archive.read_json(start)) | {"status": "started"}
        raise BayesreproError(f"'{found.path}' is not an Inspect log: it has neither {HEADER} nor {START}")
    if suffix == ".json":
        log = _json_log(found.path)
        if isinstance(log, dict) and "eval" in log and "status" in log:
            return _checked(found.path, log)
        if found.named:
            raise BayesreproError(f"'{found.path}' is not an Inspect log: it has no 'eval' and 'status'")
        return None
    if found.named:
        raise BayesreproError(f"'{found.path}' is not an Inspect log: expected a .eval or .json file")
    return None


def _json_log(path: Path):
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise BayesreproError(f"Inspect log '{path}' cannot be read: {first_line(exc)}") from None
    return parse_json(data, f"Inspect log '{path}'")


def _checked(path: Path, header) -> dict:
    if not (isinstance(header, dict) and isinstance(header.get("eval"), dict)):
        raise BayesreproError(f"Inspect log '{path}' has no 'eval' section in its header")
    for key in ("task", "model"):
        if not isinstance(header["eval"].get(key), str):
            raise BayesreproError(f"Inspect log '{path}' names no {key} (eval.{key})")
    return header


def _unfinished(header: dict) -> str:
    status = header.get("status")
    if status == "started":
        return "the run did not finish (status 'started': no header.json; interrupted or still running)"
    if status == "error":
        error = header.get("error")
        message = (error.get("message") if isinstance(error, dict) else None) or ""
        message = str(message).strip().splitlines()
        return "the run ended in an error" + (f": {message[0]}" if message else "")
    return f"the run did not finish (status '{status}')"


def _run(path: Path, header: dict) -> Run:
    fields = LogFields(path, "Inspect log")
    spec = header["eval"]
    plan_config = fields.object(fields.object(header, "plan", "plan"), "config", "plan.config")
    seed = fields.whole(plan_config, "seed", "plan.config.seed", INT64)
    if "seed" not in plan_config:
        generate = fields.object(spec, "model_generate_config", "eval.model_generate_config")
        seed = fields.whole(generate, "seed", "eval.model_generate_config.seed", INT64)
    scoring = scoring_plan(fields, header)
    names = list(dict.fromkeys(score.name for score in scoring.scores))
    if not names:
        raise BayesreproError(f"Inspect log '{path}' has no scores in its results; score it (inspect score) first")
    identity = (fields.text(spec, "eval_id", "eval.eval_id")
                or f"{fields.text(spec, 'run_id', 'eval.run_id')}/{fields.text(spec, 'task_id', 'eval.task_id')}")
    detail = LogDetail(spec["task"], seed, scoring)
    return Run(path, path.stem, identity, spec["model"],
               flatten_model_args(fields.object(spec, "model_args", "eval.model_args"), f"Inspect log '{path}': eval.model_args"),
               flatten_model_args(fields.object(spec, "task_args", "eval.task_args"), f"Inspect log '{path}': eval.task_args"), tuple(names),
               {spec["task"]: (("seed", seed),)}, fields.text(spec, "created", "eval.created") or "", detail)


def read_blocks(run: Run) -> Iterator[Block]:
    if run.source.suffix.lower() == ".json":
        records = _json_log(run.source).get("samples")
        if records is None:
            raise BayesreproError(f"Inspect log '{run.source}' holds no samples; rerun it with log_samples=True")
        rows = rows_from_records(records, run.source, run.metrics)
    else:
        rows = _rows_of_archive(run)
    settings = {"seed": run.detail.seed, "epoch": rows.epochs}
    scores = {name: column.to_numpy(zero_copy_only=False) for name, column in rows.metrics.items()}
    checks = check_scores(run.detail.scoring, run.detail.task, rows.items.to_numpy(zero_copy_only=False),
                          rows.epochs.to_numpy(zero_copy_only=False), scores, rows.dropped)
    yield Block(run.source, run.detail.task, rows.items, rows.documents, settings | rows.metrics, rows.dropped, checks)


def _rows_of_archive(run: Run) -> Rows:
    with EvalArchive(run.source) as archive:
        if summaries := archive.member(SUMMARIES):
            return rows_from_summaries(archive.read_raw(summaries), run.source, run.metrics)
        journal = sorted(archive.members_matching(_JOURNAL_SUMMARY), key=lambda m: int(_JOURNAL_SUMMARY.fullmatch(m.name.encode())[1]))
        if not journal:
            raise BayesreproError(f"Inspect log '{run.source}' holds no sample summaries")
        records = [record for member in journal for record in archive.read_json(member)]
    return rows_from_records(records, run.source, run.metrics)


INSPECT = Harness("inspect", SETTINGS, find_runs, read_blocks)
