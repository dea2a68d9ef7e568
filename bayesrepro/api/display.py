"""What every public result shares: its JSON form, its notebook display, and the words it uses for a Python reader.

A result displays in a notebook as HTML tables: one line saying what it is, then one table per part of it (the
hook ``_html_tables``, by default built from ``to_dict``), then its notes as a list. Every value is escaped, since
labels, column names and formulas are the user's strings. Text a Python caller reads (``summary``, the notes of
``to_dict``, warnings) names the keyword arguments (``object=``) where the command line names its options
(``--object``), as errors do (``errors.python_names``).
"""

from __future__ import annotations

import abc
import functools
import html
import json
import math

# keys of a result's JSON whose texts are notes to its reader: shown as a list under the tables, and rewritten with
# Python's argument names for a Python caller
NOTE_KEYS = ("notes", "flags", "note", "not_converged")
# keys holding further prose, rewritten for a Python caller like the notes (a test's "reason", a plan's "method"
# and "search")
PROSE_KEYS = (*NOTE_KEYS, "reason", "method", "search")


def json_ready(value):
    """JSON has no NaN/inf: they become None; NumPy scalars become the Python numbers they hold, tuples lists."""
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def for_reader(text: str) -> str:
    """``text`` as its reader should see it: unchanged on the command line, with Python's argument names for a
    Python caller (``--object`` as ``object=``)."""
    from ..errors import COMMAND_LINE, python_names

    return text if COMMAND_LINE.get() else python_names(text)


def prose_for_reader(value, prose: bool = False):
    """A JSON value with the texts under ``PROSE_KEYS`` passed through ``for_reader`` (data values untouched)."""
    if isinstance(value, dict):
        return {k: prose_for_reader(v, prose or k in PROSE_KEYS) for k, v in value.items()}
    if isinstance(value, list):
        return [prose_for_reader(v, prose) for v in value]
    return for_reader(value) if prose and isinstance(value, str) else value


def public(function):
    """An entry of the public API: the numerical work runs as the package runs it (one BLAS thread, the libraries'
    log chatter and warnings silenced), errors leaving it name the Python arguments, not the command-line
    options, and a result that did not converge warns (``ConvergenceWarning``)."""
    from ..errors import BayesreproError, warn_unconverged
    from ..runtime import numerical_work

    @functools.wraps(function)
    def call(*args, **kwargs):
        try:
            with numerical_work():
                result = function(*args, **kwargs)
        except BayesreproError as error:
            raise error.for_python() from None
        if isinstance(result, Result):
            warn_unconverged(result.not_converged())
        return result

    return call


class Result(abc.ABC):
    """Base of the public results: ``to_dict`` (the command's ``--json``), ``summary`` (its text) and their
    displays."""

    # what qualifies the result, in the command line's words: set by the results that have notes
    _notes: tuple | list = ()

    @property
    def notes(self) -> list[str]:
        """What qualifies the result, in the reader's words (Python's arguments from Python).

        Empty for a result without notes.
        """
        return [for_reader(note) for note in self._notes]

    def to_dict(self) -> dict:
        """The result as the matching command's ``--json`` prints it.

        Returns
        -------
        dict
            JSON-ready (NaN and infinities as None): ``Fit`` as ``vca``, ``Posterior`` as ``phi``, ``GlrtTest`` as
            ``glrt``, ``Comparison`` as ``compare`` and ``PowerPlan`` as ``plan`` print it. Called from Python,
            its notes name the keyword arguments (``object=``) where the command names its options.
        """
        return prose_for_reader(json_ready(self._payload()))

    def summary(self) -> str:
        """The result as the matching command prints it.

        Returns
        -------
        str
            The tables and lines the command writes to stdout; called from Python, its notes name the keyword
            arguments (``object=``) where the command names its options.
        """
        return for_reader(self._text())

    def not_converged(self) -> list[str]:
        """What did not converge.

        Returns
        -------
        list of str
            One phrase per fit or sampler that did not converge; empty when everything did.
        """
        return [for_reader(problem) for problem in self._problems()]

    @abc.abstractmethod
    def _payload(self) -> dict:
        """The ``--json`` object, before NaN and NumPy scalars are made JSON-ready."""

    @abc.abstractmethod
    def _text(self) -> str:
        """The command's text."""

    @abc.abstractmethod
    def _problems(self) -> list[str]:
        """What did not converge."""

    def _html_header(self) -> str:
        """The one line above the tables: by default the first line of the summary."""
        return next((line.strip() for line in self.summary().splitlines() if line.strip()), "")

    def _html_tables(self) -> list:
        """The (caption, DataFrame) pairs the notebook display shows: by default one table per list of records
        in ``to_dict``, one per object of plain values, and one of the plain values at the top."""
        return tables_from_json(self.to_dict())

    def _html_notes(self) -> list[str]:
        """The notes listed under the tables: what did not converge, then every note of ``to_dict``."""
        return [*(f"did not converge: {problem}" for problem in self.not_converged()), *notes_in(self.to_dict())]

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return result_html(type(self).__name__, self._html_header(), self._html_tables(), self._html_notes())


def notes_in(payload: dict) -> list[str]:
    """Every text under a note key (``NOTE_KEYS``) of a JSON object, at any depth, in order, each once."""
    found: list[str] = []

    def walk(value, noted: bool) -> None:
        if isinstance(value, dict):
            for key, item in value.items():
                walk(item, noted or key in NOTE_KEYS)
        elif isinstance(value, list):
            for item in value:
                walk(item, noted)
        elif noted and isinstance(value, str) and value not in found:
            found.append(value)

    walk(payload, False)
    return found


def _plain(value) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _records(value) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def tables_from_json(payload: dict, caption: str = "") -> list:
    """(caption, DataFrame) pairs of a JSON object: its plain values (and lists of them) as one row, each list of
    records as a table, each object within it likewise (its caption prefixed by the key); notes are left out."""
    import pandas as pd

    plain, tables = {}, []
    for key, value in payload.items():
        if key in NOTE_KEYS:
            continue
        name = f"{caption}: {key}" if caption else key
        if _plain(value):
            plain[key] = value
        elif isinstance(value, list) and all(_plain(item) for item in value):
            plain[key] = ", ".join("" if item is None else str(item) for item in value)
        elif _records(value):
            tables.append((name, pd.DataFrame(value)))
        elif isinstance(value, dict):
            tables += tables_from_json(value, name)
        else:   # anything else (a list mixing kinds) as its JSON text, in one cell
            plain[key] = json.dumps(value)
    if plain:
        tables.insert(0, (caption or "result", pd.DataFrame([plain])))
    return tables


def cell_text(value) -> str:
    """A table cell as text: numbers to four significant digits, missing values empty."""
    if hasattr(value, "item") and getattr(value, "shape", None) == ():
        value = value.item()
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(json_ready(value))
    return str(value)


def table_html(caption: str, table) -> str:
    """One HTML table with its caption on one line; the index is shown when it is named."""
    index = table.index.name is not None or any(name is not None for name in table.index.names)
    head = [*([str(table.index.name or "")] if index else []), *map(str, table.columns)]
    rows = []
    for label, values in zip(table.index, table.itertuples(index=False, name=None)):
        cells = [*([label] if index else []), *values]
        rows.append("<tr>" + "".join(f"<td>{html.escape(cell_text(v))}</td>" for v in cells) + "</tr>")
    return (f"<table class='bayesrepro-table' style='margin: 0.5em 0'>"
            f"<caption style='text-align: left'>{html.escape(caption)}</caption>"
            f"<thead><tr>{''.join(f'<th>{html.escape(h)}</th>' for h in head)}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table>")


def result_html(kind: str, header: str, tables, notes) -> str:
    """A result for a notebook: a one-line header, its tables, its notes as a list; every text escaped."""
    parts = [f"<div class='bayesrepro-result'><p><strong>{html.escape(kind)}</strong>: {html.escape(header)}</p>"]
    parts += [table_html(caption, table) for caption, table in tables]
    if notes:
        parts.append("<ul class='bayesrepro-notes'>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    return "".join(parts) + "</div>"
