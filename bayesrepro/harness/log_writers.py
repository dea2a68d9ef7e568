"""Logs in the harnesses' own formats, written from given scores (simulated runs, examples, tests).

``LmEvalTask`` + ``write_lm_eval_run`` write what ``lm_eval --log_samples``
writes for multiple-choice tasks: a results file with the harness's
aggregates (its ``mean``: ``sum / len``) and one samples file per task whose
lines carry the same keys in the same order. ``write_inspect_log`` writes
an Inspect ``.eval`` archive (header, sample members, summaries,
reductions, or the journal of a run that did not finish) or a ``.json`` log.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import statistics
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Sequence

from .eval_zip import ZSTANDARD
from .inspect_scores import UnreadableScore, score_to_float
from .zip_writer import write_zip


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Document:
    """A multiple-choice question: its id, text, choices and the index of the right choice."""

    doc_id: int | str
    question: str
    choices: tuple[str, ...]
    answer: int

    def as_dict(self) -> dict:
        return {"question": self.question, "choices": list(self.choices), "answer": self.answer}


class LmEvalTask:
    """A multiple-choice task as lm-eval logs it; each document's line, up to its metrics, is built once."""

    def __init__(self, name: str, documents: Sequence[Document], num_fewshot: int = 0):
        self.name = name
        self.documents = list(documents)
        self.num_fewshot = num_fewshot
        self._line_starts = [self._line_start(doc) for doc in self.documents]

    def _line_start(self, doc: Document) -> tuple[str, str]:
        """A line's JSON before and after its filter and metric names (lm-eval's key order), without the values."""
        prompt = f"{doc.question}\nAnswer:"
        arguments = {f"gen_args_{k}": {"arg_0": prompt, "arg_1": f" {choice}"} for k, choice in enumerate(doc.choices)}
        loglikelihoods = [[[str(-1.0 - 0.1 * k), "False"]] for k in range(len(doc.choices))]
        before = {
            "doc_id": doc.doc_id, "doc": doc.as_dict(), "target": str(doc.answer), "arguments": arguments,
            "resps": loglikelihoods, "filtered_resps": [r[0] for r in loglikelihoods],
        }
        after = {
            # lm-eval hashes the document as json.dumps(doc, indent=2, ensure_ascii=False)
            "doc_hash": _sha256(json.dumps(doc.as_dict(), indent=2, ensure_ascii=False)),
            "prompt_hash": _sha256(prompt), "target_hash": _sha256(str(doc.answer)),
        }
        return json.dumps(before, ensure_ascii=False)[:-1], json.dumps(after, ensure_ascii=False)[1:-1]

    def lines(self, scores: Mapping[str, Sequence]) -> str:
        """The samples file's text for ``scores`` keyed as lm-eval keys them: ``"acc"`` or ``"acc,<filter>"``."""
        by_filter: dict[str, dict[str, list]] = {}
        for key, values in scores.items():
            metric, _, name = key.partition(",")
            by_filter.setdefault(name or "none", {})[metric] = [v.item() if hasattr(v, "item") else v for v in values]
        out = []
        for name, metrics in by_filter.items():
            middle = f', "filter": {json.dumps(name)}, "metrics": {json.dumps(list(metrics))}, '
            for position, (before, after) in enumerate(self._line_starts):
                values = ", ".join(f'"{metric}": {json.dumps(column[position])}' for metric, column in metrics.items())
                out.append(f"{before}{middle}{after}, {values}}}\n")
        return "".join(out)


def write_lm_eval_run(folder: Path, *, model: str, date: str, seed: int | None,
                      tasks: Mapping[LmEvalTask, Mapping[str, Sequence[float]]],
                      model_args: Mapping | None = None, groups: Mapping[str, Sequence[str]] | None = None) -> Path:
    """One run: ``folder/<model>/results_<date>.json`` and a samples file per task; returns the results file."""
    sanitized = model.replace("/", "__")
    run_folder = Path(folder) / sanitized
    run_folder.mkdir(parents=True, exist_ok=True)
    results, configs, shots, samples_count, better = {}, {}, {}, {}, {}
    for task, scores in tasks.items():
        (run_folder / f"samples_{task.name}_{date}.jsonl").write_text(task.lines(scores), encoding="utf-8")
        results[task.name] = {"alias": task.name} | _aggregates(scores)
        configs[task.name] = {
            "task": task.name, "dataset_path": "json", "output_type": "multiple_choice",
            "num_fewshot": task.num_fewshot,
            "metric_list": [{"metric": m, "aggregation": "mean", "higher_is_better": True}
                            for m in dict.fromkeys(k.split(",")[0] for k in scores)],
            "repeats": 1,
        }
        shots[task.name] = task.num_fewshot
        samples_count[task.name] = {"original": len(task.documents), "effective": len(task.documents)}
        better[task.name] = {k.split(",")[0]: True for k in scores}
    payload = {
        "results": results, "group_subtasks": {k: list(v) for k, v in (groups or {}).items()}, "configs": configs,
        "versions": {name: "Yaml" for name in configs}, "n-shot": shots, "higher_is_better": better,
        "n-samples": samples_count,
        "config": {
            "model": "hf", "model_args": dict(model_args or {"pretrained": model}), "batch_size": 1, "batch_sizes": [],
            "device": "cpu", "use_cache": None, "limit": None, "bootstrap_iters": 100000, "gen_kwargs": {},
            "random_seed": seed, "numpy_seed": seed, "torch_seed": seed, "fewshot_seed": seed,
        },
        "git_hash": None, "date": 0.0, "lm_eval_version": "0.4.13", "task_hashes": {}, "model_source": "hf",
        "model_name": model, "model_name_sanitized": sanitized,
    }
    path = run_folder / f"results_{date}.json"
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False), encoding="utf-8")
    return path


def _aggregates(scores: Mapping[str, Sequence[float]]) -> dict[str, float]:
    """lm-eval's mean (``sum(arr) / len(arr)``) and its standard error, under ``"<metric>,<filter>"``."""
    out = {}
    for key, values in scores.items():
        metric, _, name = key.partition(",")
        values = [float(v) for v in values]
        mu = sum(values) / len(values)
        spread = math.sqrt(sum((v - mu) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0
        out[f"{metric},{name or 'none'}"] = mu
        out[f"{metric}_stderr,{name or 'none'}"] = spread / math.sqrt(len(values))
    return out


@dataclass(frozen=True)
class InspectSample:
    """One sample and epoch of an Inspect run: input, target and the value of each scorer.

    The optional fields make a log the size of a real one: the choices of a
    multiple-choice question, metadata, the model's completion (which the
    scorer keeps as its explanation) and its token counts.
    """

    id: int | str
    epoch: int
    input: str
    target: str
    scores: Mapping[str, object]
    error: str | None = None
    choices: tuple[str, ...] = ()
    metadata: Mapping[str, object] | None = None
    completion: str = ""
    tokens: tuple[int, int] = (0, 0)


def write_inspect_log(path: Path, *, task: str, model: str, samples: Sequence[InspectSample], seed: int | None = None,
                      status: str = "success", model_args: Mapping | None = None, task_args: Mapping | None = None,
                      eval_id: str | None = None, method: int = ZSTANDARD, sample_members: bool = True) -> Path:
    """An Inspect log at ``path`` (``.eval`` archive or ``.json``); a ``.eval`` with status "started" holds only the journal.

    ``sample_members=False`` leaves the full samples out of a ``.eval``
    archive (Inspect writes them; a reader of the summaries never opens them).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    eval_id = eval_id or hashlib.blake2b(str(path.name).encode(), digest_size=8).hexdigest()
    epochs = max((s.epoch for s in samples), default=1)
    ids = list(dict.fromkeys(s.id for s in samples))
    spec = {
        "eval_id": eval_id, "run_id": f"run-{eval_id}", "created": "2026-01-01T00:00:00+00:00", "task": task,
        "task_id": f"task-{eval_id}", "task_version": 0, "task_args": dict(task_args or {}),
        "dataset": {"samples": len(ids), "sample_ids": ids, "shuffled": False}, "model": model,
        "model_args": dict(model_args or {}), "config": {"epochs": epochs, "log_samples": True},
        "packages": {"inspect_ai": "0.3.285"}, "scorers": [{"name": n} for n in _scorer_names(samples)],
    }
    plan = {"name": "plan", "steps": [{"solver": "generate", "params": {}}], "config": {} if seed is None else {"seed": seed}}
    summaries = [_summary(s, model) for s in samples]
    header = {"version": 2, "status": status, "eval": spec, "plan": plan,
              "stats": {"started_at": "2026-01-01T00:00:00+00:00", "completed_at": "2026-01-01T00:01:00+00:00", "model_usage": {}}}
    if status == "success":
        header["results"] = _inspect_results(samples)
    if status == "error":
        header["error"] = {"message": "RuntimeError: the model endpoint went away", "traceback": "", "traceback_ansi": ""}
    if path.suffix == ".json":
        path.write_text(json.dumps(header | {"samples": [_full_sample(s, model) for s in samples]}), encoding="utf-8")
        return path
    members = itertools.chain(
        [("_journal/start.json", {"version": 2, "eval": spec, "plan": plan})],
        ((f"samples/{s.id}_epoch_{s.epoch}.json", _full_sample(s, model)) for s in samples if sample_members),
        [("_journal/summaries/1.json", summaries)],
        [("summaries.json", summaries), ("reductions.json", _reductions(samples)), ("header.json", header)]
        if status != "started" else [],
    )
    write_zip(path, ((name, json.dumps(content).encode("utf-8")) for name, content in members), method)
    return path


def _scorer_names(samples: Sequence[InspectSample]) -> list[str]:
    return list(dict.fromkeys(name for s in samples for name in s.scores))


def _summary(sample: InspectSample, model: str) -> dict:
    usage = {} if sample.tokens == (0, 0) else {
        model: {"input_tokens": sample.tokens[0], "output_tokens": sample.tokens[1], "total_tokens": sum(sample.tokens)}}
    summary = {
        "id": sample.id, "epoch": sample.epoch, "input": sample.input, "target": sample.target,
        **({"choices": list(sample.choices)} if sample.choices else {}), "metadata": dict(sample.metadata or {}),
        "scores": {name: {"value": value, "answer": _answer(sample), "explanation": sample.completion or None,
                          "history": []} for name, value in sample.scores.items()},
        "model_usage": usage, "role_usage": {}, "started_at": "2026-01-01T00:00:01+00:00",
        "completed_at": "2026-01-01T00:00:04+00:00", "total_time": 3.2, "working_time": 3.1,
        "uuid": _uuid(sample), "retries": 0, "completed": True, "message_count": 2, "turn_count": 1,
    }
    if sample.error is not None:
        summary |= {"error": sample.error, "scores": None}
    return summary


def _answer(sample: InspectSample) -> str | None:
    return sample.completion.rsplit("ANSWER: ", 1)[1].strip() if "ANSWER: " in sample.completion else None


def _uuid(sample: InspectSample) -> str:
    return hashlib.blake2b(f"{sample.id}/{sample.epoch}/{sample.completion}".encode(), digest_size=11).hexdigest()


# Inspect's multiple_choice() template, before the question
_MULTIPLE_CHOICE = ("Answer the following multiple choice question. The entire content of your response should be of "
                    "the following format: 'ANSWER: $LETTER' (without quotes) where LETTER is one of {letters}.\n\n")


def _full_sample(sample: InspectSample, model: str) -> dict:
    """The sample as Inspect logs it: messages, output, and the events of its solver and scorer within their spans."""
    summary = _summary(sample, model)
    letters = "ABCDEFGH"[:len(sample.choices)]
    prompt = (_MULTIPLE_CHOICE.format(letters=",".join(letters)) if sample.choices else "") + sample.input \
        + "".join(f"\n{letter}) {choice}" for letter, choice in zip(letters, sample.choices))
    user = {"id": _event_id(sample, "user"), "content": prompt, "source": "input", "role": "user"}
    assistant = {"id": _event_id(sample, "assistant"), "content": sample.completion, "source": "generate",
                 "role": "assistant", "model": model}
    output = {"model": model, "choices": [{"message": assistant, "stop_reason": "stop"}],
              "completion": sample.completion, "usage": (summary["model_usage"] or {}).get(model), "time": 2.9}
    events = [
        {"event": "sample_init", "sample": {key: summary[key] for key in ("id", "input", "target", "metadata")}
         | {"choices": list(sample.choices)}, "state": {"messages": [user]}},
        {"event": "model", "model": model, "input": [user], "tools": [], "tool_choice": "none", "config": {},
         "output": output, "completed": summary["completed_at"], "working_time": 2.9},
        {"event": "state", "changes": [{"op": "add", "path": "/messages/1", "value": assistant}]},
        *({"event": "score", "score": score, "target": sample.target, "intermediate": False, "scorer": name}
          for name, score in (summary["scores"] or {}).items()),
    ]
    spans = ("init", "solvers", "multiple_choice", "scorers", *(summary["scores"] or {}))
    events = [{"event": "span_begin", "id": _event_id(sample, span), "type": span, "name": span} for span in spans] \
        + events + [{"event": "span_end", "id": _event_id(sample, span)} for span in spans]
    events = [{"uuid": _event_id(sample, k), "span_id": _event_id(sample, f"span{k}"),
               "timestamp": f"2026-01-01T00:00:0{1 + k % 3}.{(7919 * k + len(sample.input)) % 1000000:06d}+00:00",
               "working_start": 0.25 * k} | event for k, event in enumerate(events)]
    full = {key: value for key, value in summary.items() if key not in ("completed", "message_count", "retries")}
    full |= {"messages": [user, assistant] if sample.completion else [user], "output": output, "store": {},
             "events": events, "attachments": {}}
    if sample.error is not None:
        full["error"] = {"message": sample.error, "traceback": "", "traceback_ansi": ""}
    return full


def _event_id(sample: InspectSample, what: str) -> str:
    """A 22-character id, as Inspect's shortuuid ids, fixed by the sample and what it names."""
    return hashlib.blake2b(f"{_uuid(sample)}/{what}".encode(), digest_size=11).hexdigest()


def _reductions(samples: Sequence[InspectSample]) -> list[dict]:
    """Each score's per-sample mean over epochs, as Inspect's reductions.json lists them."""
    first = {s.id: s for s in samples if s.error is None and s.epoch == 1}
    return [{"scorer": name, "samples": [{"value": value, "answer": _answer(first[sample]) if sample in first else None,
                                          "explanation": first[sample].completion or None if sample in first else None,
                                          "history": [], "sample_id": sample} for sample, value in reduced.items()]}
            for name, reduced in _reduced_scores(samples).items()]


def _inspect_results(samples: Sequence[InspectSample]) -> dict:
    """Inspect's ``accuracy`` of each score: the mean over samples of the mean over epochs, summed left to right."""
    scores = []
    for name, reduced in _reduced_scores(samples).items():
        total = 0.0
        for value in reduced.values():
            total += value
        scores.append({
            "name": name, "scorer": name, "reducer": None, "scored_samples": len(reduced), "unscored_samples": 0,
            "params": {}, "metrics": {"accuracy": {"name": "accuracy", "value": total / len(reduced), "params": {}}},
        })
    return {"total_samples": len(samples), "completed_samples": sum(s.error is None for s in samples), "scores": scores}


def _reduced_scores(samples: Sequence[InspectSample]) -> dict[str, dict]:
    """Per score name, each sample's ``statistics.mean`` over its epochs, in the order samples first appear.

    A dictionary value gives one score per key, as Inspect reports them; a
    value Inspect cannot read counts as 0, as Inspect counts it (with a
    warning); a missing or NaN value and a sample that ended in an error are
    not scored.
    """
    per_name: dict[str, dict] = {}
    for s in samples:
        if s.error is not None:
            continue
        for scorer, value in s.scores.items():
            for name, entry in (value.items() if isinstance(value, dict) else [(scorer, value)]):
                number = _inspect_float(entry)
                if not math.isnan(number):
                    per_name.setdefault(name, {}).setdefault(s.id, []).append(number)
    return {name: {sample: statistics.mean(values) for sample, values in per_sample.items()}
            for name, per_sample in per_name.items()}


def _inspect_float(value) -> float:
    try:
        return score_to_float(value)
    except UnreadableScore:
        return 0.0
