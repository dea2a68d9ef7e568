"""The fields of a harness log that the importers read, each with its type and range.

A log is JSON written by another program, or edited by hand: a seed may be
``Infinity``, a sample count ``1e30`` or ``"1"``, a configuration a list.
Every field the importers take from a log is read through ``LogFields``,
which returns it with the type the importer needs or refuses the log in one
line naming the file, the field's path (``config.random_seed``,
``results.scores[0].scored_samples``) and what it holds. A field that is
absent (or null) is None, or an empty object for objects.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..errors import BayesreproError

INT64 = (-2**63, 2**63 - 1)
COUNT = (0, 2**63 - 1)


class LogFields:
    """Typed reads of one log's JSON values; ``kind`` names the log in messages ("lm-eval results file")."""

    def __init__(self, source: Path, kind: str):
        self.source = source
        self.kind = kind

    def object(self, parent: dict, key: str, path: str) -> dict:
        value = parent.get(key)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.refusal(path, value, "an object")
        return value

    def whole(self, parent: dict, key: str, path: str, bounds: tuple[int, int] = COUNT) -> int | None:
        return self.whole_value(parent.get(key), path, bounds)

    def whole_value(self, value, path: str, bounds: tuple[int, int] = COUNT) -> int | None:
        """``value`` as a whole number within ``bounds``; a float, a text, a list or true/false is refused."""
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or not bounds[0] <= value <= bounds[1]:
            raise self.refusal(path, value, f"a whole number from {bounds[0]:,} to {bounds[1]:,}")
        return value

    def text(self, parent: dict, key: str, path: str) -> str | None:
        value = parent.get(key)
        if value is not None and not isinstance(value, str):
            raise self.refusal(path, value, "text")
        return value

    def identifier(self, value, path: str) -> str:
        """An id written as text or a whole number, as text."""
        if isinstance(value, str):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
        raise self.refusal(path, value, "text or a whole number")

    def listing(self, parent: dict, key: str, path: str) -> list | None:
        value = parent.get(key)
        if value is not None and not isinstance(value, list):
            raise self.refusal(path, value, "a list")
        return value

    def refusal(self, path: str, value, expected: str) -> BayesreproError:
        return BayesreproError(
            f"{self.kind} '{self.source}': field {path} must be {expected}, not {describe(value)}; "
            "the log was not written by the harness as it is (edited or damaged): re-copy or rerun it"
        )


def describe(value) -> str:
    """A JSON value as the log writes it, shortened: ``Infinity``, ``1e+30``, ``"1"``, ``[1]``, ``true``."""
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
