"""Inspect's ``accuracy`` and ``mean`` of a scorer, recomputed from a run's rows and checked against its header.

Inspect scores each sample and epoch, reduces a sample's epochs with the
scorer's reducer (by default the mean: ``statistics.mean``, exact and
rounded once), leaves out samples whose reduced score is NaN, and applies
each metric to the reduced scores in the order the samples first completed
without error in its plan (epoch by epoch, each in the dataset's order,
``eval.dataset.sample_ids``). ``accuracy`` adds them left to right,
``mean`` is ``np.mean``. With ``epochs_reducer=[]`` the metrics see every
epoch unreduced, in the plan's order. The header records, per scorer and
reducer, the metrics and the number of scored samples.

Not checked (and said why): reducers other than the mean, metrics other
than ``accuracy`` and ``mean`` or with parameters of their own (another
``to_float``), and runs that scored samples which ended in an error
(``score_on_error``): the table leaves those samples out.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .aggregates import AggregateCheck, compare_mean, not_applicable, numpy_sum, plain_sum
from .fields import LogFields

CHECKED_METRICS = {"accuracy": plain_sum, "mean": numpy_sum}


@dataclass(frozen=True)
class HeaderScore:
    """One entry of the header's ``results.scores``: a scorer (or key of a dictionary score) under one reducer."""

    name: str
    reducer: str | None
    scored_samples: int | None
    metrics: dict[str, tuple[object, dict]]


@dataclass(frozen=True)
class ScoringPlan:
    """What the header says about how the run's scores were reduced and aggregated."""

    scores: tuple[HeaderScore, ...]
    reduced: bool
    sample_ids: tuple[str, ...] | None
    scored_errors: bool


def scoring_plan(fields: LogFields, header: dict) -> ScoringPlan:
    spec = fields.object(header, "eval", "eval")
    config = fields.object(spec, "config", "eval.config")
    entries = fields.listing(fields.object(header, "results", "results"), "scores", "results.scores") or []
    scores = tuple(_header_score(fields, entry, f"results.scores[{k}]") for k, entry in enumerate(entries))
    ids = fields.listing(fields.object(spec, "dataset", "eval.dataset"), "sample_ids", "eval.dataset.sample_ids")
    ids = None if ids is None else tuple(fields.identifier(sample, f"eval.dataset.sample_ids[{k}]")
                                         for k, sample in enumerate(ids))
    score_on_error = config.get("score_on_error")
    if score_on_error is not None and not isinstance(score_on_error, bool):
        raise fields.refusal("eval.config.score_on_error", score_on_error, "true or false")
    return ScoringPlan(scores, fields.listing(config, "epochs_reducer", "eval.config.epochs_reducer") != [],
                       ids, bool(score_on_error))


def _header_score(fields: LogFields, entry, path: str) -> HeaderScore:
    if not isinstance(entry, dict):
        raise fields.refusal(path, entry, "an object")
    name = fields.text(entry, "name", f"{path}.name")
    if name is None:
        raise fields.refusal(f"{path}.name", None, "the scorer's name")
    metrics = {}
    for key, metric in fields.object(entry, "metrics", f"{path}.metrics").items():
        if not isinstance(metric, dict):
            raise fields.refusal(f"{path}.metrics.{key}", metric, "an object")
        # the value is checked against the rows' mean, whatever it holds (aggregates.compare_mean)
        metrics[key] = (metric.get("value"), fields.object(metric, "params", f"{path}.metrics.{key}.params"))
    return HeaderScore(name, fields.text(entry, "reducer", f"{path}.reducer"),
                       fields.whole(entry, "scored_samples", f"{path}.scored_samples"), metrics)


def check_scores(plan: ScoringPlan, task: str, items: np.ndarray, epochs: np.ndarray, values: dict[str, np.ndarray],
                 dropped: int) -> list[AggregateCheck]:
    """One check per metric column, header entry and metric (accuracy, mean); the others say why they are not.

    ``values`` are the rows' scores by column, NaN where a sample has none.
    """
    order = _plan_order(items, epochs, plan.sample_ids)
    items = items[order]
    checks = []
    for entry in plan.scores:
        if entry.name not in values:
            continue
        label = entry.name if entry.reducer is None else f"{entry.name} ({entry.reducer} over epochs)"
        if plan.scored_errors and dropped:
            checks.append(not_applicable(task, label, "samples that ended in an error were scored (score_on_error); "
                                                      "the table leaves them out"))
            continue
        if entry.reducer not in (None, "mean"):
            checks.append(not_applicable(task, label, f"the epoch reducer '{entry.reducer}' is not a mean"))
            continue
        checked = [name for name in entry.metrics if name in CHECKED_METRICS]
        if not checked:
            checks.append(not_applicable(task, label, f"its metrics ({', '.join(entry.metrics) or 'none'}) hold no "
                                                      "accuracy or mean"))
            continue
        scored = _scored_values(items, values[entry.name][order], plan.reduced)
        for name in checked:
            value, params = entry.metrics[name]
            if params:
                checks.append(not_applicable(task, f"{label}: {name}", f"its {name} has parameters of its own"))
            else:
                checks.append(compare_mean(task, f"{label}: {name}", scored, value, (CHECKED_METRICS[name],),
                                           count=entry.scored_samples))
    return checks


def _plan_order(items: np.ndarray, epochs: np.ndarray, sample_ids: tuple[str, ...] | None) -> np.ndarray:
    """The rows in Inspect's plan order: epoch by epoch, the samples in the dataset's order.

    Ids the header does not list go after those it lists, in their order of appearance.
    """
    first_seen, uniques = pd.factorize(items)
    if sample_ids is None:
        position = first_seen
    else:
        listed = {sample: k for k, sample in enumerate(sample_ids)}
        positions = np.array([listed.get(sample, len(listed) + k) for k, sample in enumerate(uniques)], dtype=np.int64)
        position = positions[first_seen]
    return np.lexsort((position, epochs))


def _scored_values(items: np.ndarray, values: np.ndarray, reduced: bool) -> np.ndarray:
    """What Inspect's metrics see, from rows in plan order: per sample (in order of first appearance) the mean of
    its scored epochs, or every scored row when the run does not reduce epochs."""
    scored = ~np.isnan(values)
    if not reduced:
        return values[scored]
    codes, _ = pd.factorize(items)
    codes, values = codes[scored], values[scored]
    counts = np.bincount(codes, minlength=codes.max(initial=-1) + 1)
    means = np.bincount(codes, weights=values, minlength=len(counts)) / np.maximum(counts, 1)
    if not _sums_are_exact(values):
        # statistics.mean: the exact mean, rounded once, for samples with several scored epochs
        by_sample = np.argsort(codes, kind="stable")
        for group, epoch_values in enumerate(np.split(values[by_sample], np.cumsum(counts)[:-1])):
            if len(epoch_values) > 1:
                means[group] = statistics.mean(epoch_values.tolist())
    return means[counts > 0]


def _sums_are_exact(values: np.ndarray) -> bool:
    """Multiples of 1/2 (C, P, I scores and 0/1 numbers) small enough that their sums are exact in float64."""
    doubled = 2 * values
    return bool(np.all(np.floor(doubled) == doubled)) and float(np.abs(values).sum()) < 2.0 ** 51
