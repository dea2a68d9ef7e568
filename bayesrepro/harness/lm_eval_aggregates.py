"""lm-eval's aggregate of a metric, and the check of a samples file's values against it.

lm-eval aggregates each metric of a task with the function its task
configuration names (``metric_list[].aggregation``), else with the default
its metric registry gives the built-in metric, else (a key that only
``process_results`` returns) with ``mean``, ``sum(arr) / len(arr)`` over
the values in the order the samples file lists them. ``nanmean`` is NumPy's
mean of the values that are not NaN. Other aggregations (perplexity, F1,
BLEU, median, a function of the task's own) are not a plain mean, and the
check says so instead of comparing.
"""

from __future__ import annotations

import numpy as np

from .aggregates import AggregateCheck, compare_mean, compensated_sum, not_applicable, numpy_sum, plain_sum

# The built-in metrics' default aggregations (lm_eval/api/metrics.py), for metric_list entries that name none.
DEFAULT_AGGREGATIONS = {
    "acc": "mean", "acc_norm": "mean", "acc_mutual_info": "mean", "acc_bytes": "mean", "exact_match": "mean",
    "likelihood": "mean", "perplexity": "perplexity", "word_perplexity": "weighted_perplexity",
    "byte_perplexity": "weighted_perplexity", "bits_per_byte": "bits_per_byte", "f1": "f1",
    "mcc": "matthews_corrcoef", "bleu": "bleu", "chrf": "chrf", "chrf++": "chrf++", "ter": "ter",
    "brier_score": "brier_score", "bypass": "bypass",
}
# The metrics a task computes when its configuration lists none, by output type (lm_eval/api/registry.py).
DEFAULT_METRICS = {
    "loglikelihood": ("perplexity", "acc"), "multiple_choice": ("acc", "acc_norm"),
    "generate_until": ("exact_match",), "loglikelihood_rolling": ("word_perplexity", "byte_perplexity", "bits_per_byte"),
}
UNKNOWN = None


def aggregation_of(task_config: dict, metric: str) -> str | None:
    """The name of the aggregation lm-eval applied to ``metric`` of a task, or None when it cannot be told."""
    metric_list = task_config.get("metric_list")
    if not isinstance(metric_list, list):
        defaults = DEFAULT_METRICS.get(task_config.get("output_type"))
        if defaults is None:
            return UNKNOWN
        return DEFAULT_AGGREGATIONS[metric] if metric in defaults else "mean"
    for entry in metric_list:
        if isinstance(entry, dict) and entry.get("metric") == metric:
            if "aggregation" not in entry:
                return DEFAULT_AGGREGATIONS.get(metric, UNKNOWN)
            named = entry["aggregation"]
            return named if isinstance(named, str) else UNKNOWN
    return "mean"  # a key only process_results returns: lm-eval falls back to its mean


def check_column(task: str, column: str, values: np.ndarray, aggregate, aggregation: str | None) -> AggregateCheck:
    """The values of one metric and filter, in the samples file's order, against the results file's aggregate."""
    if aggregation == "mean":
        return compare_mean(task, column, values, aggregate, (plain_sum, compensated_sum))
    if aggregation == "nanmean":
        return compare_mean(task, column, values[~np.isnan(values)], aggregate, (numpy_sum,))
    if aggregation is UNKNOWN:
        return not_applicable(task, column, "its aggregation is not recorded in the results file")
    shown = aggregation.strip().splitlines()[0][:40] if aggregation.strip() else "(empty)"
    return not_applicable(task, column, f"its aggregation '{shown}' is not a plain mean")
