"""Counts of levels per facet for D-studies, checked where the public API takes them."""

from __future__ import annotations


def facet_counts(given, argument: str) -> dict[str, list[int]]:
    """Counts of levels per facet as lists of whole numbers of at least one, the argument named when they are not."""
    from ..errors import BayesreproError

    if not isinstance(given, dict):
        raise BayesreproError(f"{argument}= maps each facet to its counts, e.g. {{'rater': [1, 5, 10]}}, not {given!r}")
    checked = {}
    for facet, values in given.items():
        values = list(values) if isinstance(values, (list, tuple, range)) else [values]
        if not values or not all(_whole_count(value) for value in values):
            raise BayesreproError(f"{argument}= gives facet '{facet}' the counts {values!r}; "
                                  "counts are whole numbers of at least 1")
        checked[str(facet)] = [int(value) for value in values]
    return checked


def _whole_count(value) -> bool:
    import numbers

    return (isinstance(value, numbers.Real) and not isinstance(value, bool) and float(value).is_integer()
            and value >= 1)


def designs(counts: dict[str, list[int]]) -> list[dict[str, int]]:
    """Every combination of the counts, one design each."""
    import itertools

    return [dict(zip(counts, combination)) for combination in itertools.product(*counts.values())]
