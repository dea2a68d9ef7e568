"""JSON text of a harness log parsed into Python objects, every failure one line naming where it is.

Python's parser recurses once per level of nesting: a document nested
deeper than the interpreter's recursion limit (``[[[[…`` 100,000 deep) ends
in RecursionError, which is refused here like any other invalid JSON.
Harness logs nest a few levels deep.
"""

from __future__ import annotations

import json

from ..errors import BayesreproError, first_line


def parse_json(text: str | bytes, where: str):
    """The value of ``text``; ``where`` names it in the message ("'log.json'", "'x.jsonl' line 3")."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise BayesreproError(f"{where} is not valid JSON ({exc.msg}, at character {exc.pos})") from None
    except UnicodeDecodeError as exc:
        raise BayesreproError(f"{where} is not UTF-8 text ({first_line(exc)})") from None
    except RecursionError:
        raise BayesreproError(f"{where} is not a harness log: its JSON is nested too deeply to read") from None
