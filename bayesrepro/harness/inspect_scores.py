"""Inspect score values as numbers, the way Inspect's own ``value_to_float()`` reads them.

"C" (correct) is 1, "P" (partial) 0.5, "I" (incorrect) and "N" (no answer)
0; numbers and true/false are cast; the strings "yes"/"true" are 1 and
"no"/"false" 0 (any case); a string holding a finite number is that number.
Inspect turns anything else into 0 with a warning; a silent 0 would change
the averages, so here it is an error. NaN and null mean "not scored" and
stay missing, as Inspect leaves them out of its metrics.
"""

from __future__ import annotations

import math

CORRECT, PARTIAL, INCORRECT, NOANSWER = "C", "P", "I", "N"


class UnreadableScore(ValueError):
    """A score value that Inspect would not map to a number."""


def score_to_float(value) -> float:
    if value is None:
        return math.nan
    if isinstance(value, str):
        return _text_to_float(value)
    if isinstance(value, (bool, int, float)):
        return float(value)
    raise UnreadableScore(value)


def _text_to_float(value: str) -> float:
    if value == CORRECT:
        return 1.0
    if value == PARTIAL:
        return 0.5
    if value in (INCORRECT, NOANSWER):
        return 0.0
    lowered = value.lower()
    if lowered in ("yes", "true"):
        return 1.0
    if lowered in ("no", "false"):
        return 0.0
    try:
        number = float(lowered)
    except ValueError:
        raise UnreadableScore(value) from None
    if not math.isfinite(number):
        raise UnreadableScore(value)
    return number
