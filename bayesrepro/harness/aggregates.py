"""Each run's mean in the table against the harness's own aggregate, computed as the harness computes it.

A mean of floats depends on the order and the algorithm of its sum, so
"equal" is decided in three steps:

- **exact**: one of the ways the harness sums, applied to the values in the
  harness's order, gives its aggregate bit for bit. Sums of whole numbers
  (0/1 scores) are exact in any order; sums of other floats are reproduced
  in the harness's order (lm-eval: the samples file's order; Inspect: the
  dataset's) by the harness's algorithm (Python's built-in ``sum``, which
  adds left to right up to Python 3.11 and compensates with Neumaier's
  algorithm from 3.12 on; Inspect's ``accuracy`` adds left to right and its
  ``mean`` is NumPy's).
- **to rounding**: no reproduction matches bit for bit, but the difference
  is within the rounding error any order of summing the same values can
  make (Higham's bound for recursive summation, for both sums, plus the
  division). This happens when the harness summed in an order the log does
  not record, or with another NumPy.
- **mismatch**: anything larger. The samples then do not hold what the
  harness scored (an edited or mixed-up file), and the import is refused.

An aggregate that is not a plain mean (another aggregation or epoch reducer,
a metric with its own conversion) is **not applicable** and says why; it is
never compared with a mean. Where the harness's aggregate is a mean, anything
but a finite number in its place (text, a list, true/false, null, Infinity)
is a mismatch, and so is an infinite score among the values: its mean is not
a number two sums could agree on, and the rounding bound would be infinite.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import numpy as np

EXACT, TO_ROUNDING, NOT_APPLICABLE, MISMATCH = "exact", "to rounding", "not applicable", "mismatch"
_UNIT_ROUNDOFF = 2.0 ** -53


@dataclass(frozen=True)
class AggregateCheck:
    """One comparison of a run's task and metric: its status, our mean, the harness's, and why when not applicable."""

    task: str
    metric: str
    status: str
    ours: float | None = None
    theirs: float | None = None
    reason: str = ""


def not_applicable(task: str, metric: str, reason: str) -> AggregateCheck:
    return AggregateCheck(task, metric, NOT_APPLICABLE, reason=reason)


def compare_mean(task: str, metric: str, values: np.ndarray, theirs, ways: Sequence[Callable[[np.ndarray], float]],
                 *, count: int | None = None) -> AggregateCheck:
    """The mean of ``values`` (in the harness's order) against the harness's aggregate ``theirs``.

    ``ways`` are the sums the harness may have used, tried in turn; ``count``
    is the number of scored values the harness reports, when it reports one.
    """
    if not _finite_number(theirs):
        return AggregateCheck(task, metric, MISMATCH, theirs=theirs, reason="the harness's mean is no finite number")
    theirs = float(theirs)
    if np.isinf(values).any():
        return AggregateCheck(task, metric, MISMATCH, theirs=theirs,
                              reason=f"{int(np.isinf(values).sum())} of its scores are infinite")
    n = len(values)
    if count is not None and count != n:
        return AggregateCheck(task, metric, MISMATCH, theirs=theirs,
                              reason=f"{n} scored values, the harness counts {count}")
    if n == 0:
        return not_applicable(task, metric, "no scored values")
    means = []
    for way in (ways if not _whole_numbers(values) else ways[:1]):
        mean = way(values) / n
        if mean == theirs or (math.isnan(mean) and math.isnan(theirs)):
            return AggregateCheck(task, metric, EXACT, mean, theirs)
        means.append(mean)
    ours = means[0]
    if abs(ours - theirs) <= rounding_bound(values, theirs):
        return AggregateCheck(task, metric, TO_ROUNDING, ours, theirs)
    return AggregateCheck(task, metric, MISMATCH, ours, theirs)


def _finite_number(value) -> bool:
    """A JSON number that is finite as a double; NaN counts, as a mean of values that are all NaN."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    try:
        return not math.isinf(float(value))
    except OverflowError:
        return False


def _whole_numbers(values: np.ndarray) -> bool:
    """Whole numbers whose partial sums stay exact in float64: every order and algorithm gives the same sum."""
    return bool(np.all(np.floor(values) == values)) and float(np.abs(values).sum()) < 2.0 ** 53


def plain_sum(values: np.ndarray) -> float:
    """Left to right from 0.0, as a Python loop ``total += x`` or Python 3.11's ``sum`` adds floats."""
    return float(np.cumsum(values)[-1]) if len(values) else 0.0


def compensated_sum(values: np.ndarray) -> float:
    """Python's ``sum`` of floats from 3.12 on: Neumaier's compensated summation (CPython's ``builtin_sum_impl``)."""
    numbers = iter(values.tolist())
    total = 0.0 + next(numbers, 0.0)
    compensation = 0.0
    for x in numbers:
        t = total + x
        if abs(total) >= abs(x):
            compensation += (total - t) + x
        else:
            compensation += (x - t) + total
        total = t
    if compensation and math.isfinite(compensation):
        total += compensation
    return total


def numpy_sum(values: np.ndarray) -> float:
    """NumPy's pairwise sum, as ``np.mean`` sums."""
    return float(np.add.reduce(values))


def rounding_bound(values: np.ndarray, theirs: float) -> float:
    """How far two means of the same values can differ by rounding alone, whatever order either summed in.

    Each recursive sum of n terms is within γ(n−1)·Σ|x| of the exact sum
    (Higham, Accuracy and Stability of Numerical Algorithms, 2002, §4.2),
    γ(k) = k·u / (1 − k·u); each division adds a relative error of u.
    """
    n = len(values)
    gamma = (n - 1) * _UNIT_ROUNDOFF / (1 - (n - 1) * _UNIT_ROUNDOFF)
    return 2 * gamma * float(np.abs(values).sum()) / n + 4 * _UNIT_ROUNDOFF * abs(theirs)


@dataclass
class CheckSummary:
    """The checks of an import: counts by status, the means equal only to rounding, what was not checked and why."""

    counts: Counter = field(default_factory=Counter)
    to_rounding: list[dict] = field(default_factory=list)
    not_checked: Counter = field(default_factory=Counter)

    def add(self, run: str, checks: Iterable[AggregateCheck]) -> None:
        for check in checks:
            self.counts[check.status] += 1
            if check.status == TO_ROUNDING:
                self.to_rounding.append({"run": run, "task": check.task, "metric": check.metric, "ours": check.ours,
                                         "harness": check.theirs, "difference": check.ours - check.theirs})
            elif check.status == NOT_APPLICABLE:
                self.not_checked[(check.task, check.metric, check.reason)] += 1

    def to_dict(self) -> dict:
        return {
            "exact": self.counts[EXACT], "to_rounding": self.counts[TO_ROUNDING],
            "not_applicable": self.counts[NOT_APPLICABLE],
            "equal_to_rounding": self.to_rounding,
            "not_checked": [{"task": task, "metric": metric, "reason": reason, "runs": runs}
                            for (task, metric, reason), runs in self.not_checked.items()],
        }

    def line(self) -> str:
        text = f"means equal to the harness's aggregates: {self.counts[EXACT]} exactly"
        if self.counts[TO_ROUNDING]:
            text += f", {self.counts[TO_ROUNDING]} to rounding"
        if self.counts[NOT_APPLICABLE]:
            text += f"; {self.counts[NOT_APPLICABLE]} not checked (not a plain mean; see --json)"
        return text
