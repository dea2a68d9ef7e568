"""A grid of runs (models × seeds × few-shot settings) with known truth, written as harness logs.

Each item is right or wrong with probability
``logistic(intercept + model + shots + item + seed)``: ``model`` and
``shots`` are fixed effects, ``item`` is drawn per item (sd ``sd_item``) and
``seed`` per model and training seed (sd ``sd_seed``). The logs are what
the harness would have written for those answers: lm-eval runs (one
folder per model, ``acc`` and ``acc_norm``) or Inspect ``.eval`` logs (one
per run, scorer ``choice`` with C/I, few-shot setting as a task argument).
With ``texts``, Inspect logs carry questions, choices and completions of
those lengths (words drawn from a vocabulary of made-up words, so that they
compress about as natural text does), token usage, metadata and Inspect's
other per-sample fields: logs the size of real ones.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Sequence

import numpy as np

from .log_writers import Document, InspectSample, LmEvalTask, write_inspect_log, write_lm_eval_run

START = datetime(2026, 1, 1, 9, 0, 0)


@dataclass(frozen=True)
class Truth:
    intercept: float = 0.3
    model_effects: dict[str, float] = field(default_factory=lambda: {"base": 0.0, "tuned": 0.5})
    shot_effects: dict[int, float] = field(default_factory=lambda: {0: 0.0, 5: 0.3})
    sd_item: float = 1.2
    sd_seed: float = 0.15


@dataclass(frozen=True)
class TextSizes:
    """Characters of a question, of each of its four choices, and of the model's completion (its reasoning)."""

    question: int = 600
    choice: int = 40
    completion: int = 400


@dataclass(frozen=True)
class SimulatedGrid:
    folder: Path
    harness: str
    runs: int
    items: int
    truth: Truth


def simulate_grid(folder: str | Path, *, harness: str = "lm-eval", seeds: Sequence[int] = (1, 2, 3), items: int = 100,
                  tasks: int = 1, truth: Truth = Truth(), random_seed: int = 0,
                  sample_members: bool = True, texts: TextSizes | None = None) -> SimulatedGrid:
    """Write one run per model × seed × few-shot setting under ``folder``; ``items`` per task, ``tasks`` tasks.

    ``sample_members=False`` writes Inspect archives without their full
    samples (header, journal, summaries and reductions only), much faster at
    scale. ``texts`` gives Inspect samples texts of real sizes.
    """
    if harness not in ("lm-eval", "inspect"):
        raise ValueError(f"harness must be 'lm-eval' or 'inspect', not {harness!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(random_seed)
    words = _Words(rng) if texts else None
    documents = [_documents(t, items, texts, words) for t in range(tasks)]
    item_effects = rng.normal(0.0, truth.sd_item, size=(tasks, items))
    lm_tasks = {shots: [LmEvalTask(f"sim_mc_{t}", docs, shots) for t, docs in enumerate(documents)]
                for shots in truth.shot_effects} if harness == "lm-eval" else {}
    run = 0
    for model, model_effect in truth.model_effects.items():
        for seed in seeds:
            seed_effect = rng.normal(0.0, truth.sd_seed)
            for shots, shot_effect in truth.shot_effects.items():
                logits = truth.intercept + model_effect + shot_effect + seed_effect + item_effects
                correct = rng.random(logits.shape) < 1.0 / (1.0 + np.exp(-logits))
                # acc_norm: the same answers with one in ten read differently by length normalisation
                normed = correct ^ (rng.random(logits.shape) < 0.1)
                date = (START + timedelta(seconds=run)).strftime("%Y-%m-%dT%H-%M-%S.%f")
                if harness == "lm-eval":
                    write_lm_eval_run(
                        folder, model=f"sim/{model}", date=date, seed=seed,
                        model_args={"pretrained": f"sim/{model}", "dtype": "float32"},
                        tasks={task: {"acc": correct[t].astype(float), "acc_norm": normed[t].astype(float)}
                               for t, task in enumerate(lm_tasks[shots])},
                    )
                else:
                    for t, docs in enumerate(documents):
                        completions = words.texts(len(docs), texts.completion) if words else [""] * len(docs)
                        _write_inspect_run(folder / f"{date}_sim-mc-{t}_{model}-{seed}-{shots}.eval", f"sim_mc_{t}",
                                           model, seed, shots, docs, correct[t], completions, sample_members)
                run += 1
    return SimulatedGrid(folder, harness, run, items * tasks, truth)


class _Words:
    """Made-up words of 2 to 9 letters, and texts of a given length drawn from them."""

    def __init__(self, rng: np.random.Generator, size: int = 5000):
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        self.rng = rng
        self.words = np.array(["".join(rng.choice(letters, rng.integers(2, 10))) for _ in range(size)])

    def texts(self, count: int, characters: int) -> list[str]:
        per_text = max(1, characters // 6)  # words average 5.5 letters and a space
        drawn = self.words[self.rng.integers(0, len(self.words), size=(count, per_text))]
        return [" ".join(row) for row in drawn]


def _documents(task: int, items: int, texts: TextSizes | None, words: _Words | None) -> list[Document]:
    if texts is None:
        return [
            Document(i, f"Task {task}, question {i}: which of these numbers is {i % 7 + task}?",
                     tuple(str(i % 7 + task + k) for k in range(4)), 0)
            for i in range(items)
        ]
    questions = words.texts(items, texts.question)
    choices = np.array(words.texts(items * 4, texts.choice), dtype=object).reshape(items, 4)
    return [Document(i, f"{question}?", tuple(options), i % 4) for i, (question, options) in enumerate(zip(questions, choices))]


def _write_inspect_run(path: Path, task: str, model: str, seed: int, shots: int, documents: list[Document],
                       correct: np.ndarray, completions: list[str], sample_members: bool) -> None:
    samples = []
    for doc, ok, completion in zip(documents, correct, completions, strict=True):
        if completion:  # the answer letter the scorer reads, right or wrong as drawn
            completion += f"\n\nANSWER: {'ABCD'[doc.answer if ok else (doc.answer + 1) % 4]}"
        target = "ABCD"[doc.answer] if completion else doc.choices[doc.answer]
        choices = doc.choices if completion else ()
        prompt_chars = len(doc.question) + sum(map(len, choices))
        samples.append(InspectSample(f"q{doc.doc_id}", 1, doc.question, target, {"choice": "C" if ok else "I"},
                                     choices=choices, metadata={"subject": task} if completion else None,
                                     completion=completion,
                                     tokens=(prompt_chars // 4 + 60, len(completion) // 4) if completion else (0, 0)))
    write_inspect_log(path, task=task, model=f"hf/{model}", samples=samples, seed=seed,
                      model_args={"dtype": "float32"}, task_args={"fewshot": shots}, sample_members=sample_members)
