"""A grid of runs (models × seeds × few-shot settings) with known truth, written as harness logs.

Each item is right or wrong with probability
``logistic(intercept + model + shots + item + seed)``: ``model`` and
``shots`` are fixed effects, ``item`` is drawn per item (sd ``sd_item``) and
``seed`` per model and training seed (sd ``sd_seed``). The logs are what
the harness would have written for those answers: lm-eval runs (one
folder per model, ``acc`` and ``acc_norm``) or Inspect ``.eval`` logs (one
per run, scorer ``choice`` with C/I, few-shot setting as a task argument).
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
class SimulatedGrid:
    folder: Path
    harness: str
    runs: int
    items: int
    truth: Truth


def simulate_grid(folder: str | Path, *, harness: str = "lm-eval", seeds: Sequence[int] = (1, 2, 3), items: int = 100,
                  tasks: int = 1, truth: Truth = Truth(), random_seed: int = 0,
                  sample_members: bool = True) -> SimulatedGrid:
    """Write one run per model × seed × few-shot setting under ``folder``; ``items`` per task, ``tasks`` tasks.

    ``sample_members=False`` writes Inspect archives without their full
    samples (header, journal and summaries only), much faster at scale.
    """
    if harness not in ("lm-eval", "inspect"):
        raise ValueError(f"harness must be 'lm-eval' or 'inspect', not {harness!r}")
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(random_seed)
    documents = [_documents(t, items) for t in range(tasks)]
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
                        _write_inspect_run(folder / f"{date}_sim-mc-{t}_{model}-{seed}-{shots}.eval", f"sim_mc_{t}",
                                           model, seed, shots, docs, correct[t], sample_members)
                run += 1
    return SimulatedGrid(folder, harness, run, items * tasks, truth)


def _documents(task: int, items: int) -> list[Document]:
    return [
        Document(i, f"Task {task}, question {i}: which of these numbers is {i % 7 + task}?",
                 tuple(str(i % 7 + task + k) for k in range(4)), 0)
        for i in range(items)
    ]


def _write_inspect_run(path: Path, task: str, model: str, seed: int, shots: int, documents: list[Document],
                       correct: np.ndarray, sample_members: bool) -> None:
    samples = [InspectSample(f"q{doc.doc_id}", 1, doc.question, doc.choices[doc.answer], {"choice": "C" if ok else "I"})
               for doc, ok in zip(documents, correct, strict=True)]
    write_inspect_log(path, task=task, model=f"hf/{model}", samples=samples, seed=seed,
                      model_args={"dtype": "float32"}, task_args={"fewshot": shots}, sample_members=sample_members)
