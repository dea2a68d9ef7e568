"""Every public result a piece of Python code reaches, and what it says to its Python reader: a command-line option
(``--object``) in any of it is a text written for the command line that reached Python untranslated.

``Tracking`` records every ``Result`` made while it is active (whoever makes it: a method, another result's
property, a notebook cell that discards it) and every ``BayesreproWarning``; ``options_named`` lists the texts that
name an option. Used in-process by tests/test_result_display.py and inside the notebooks' kernels by
tests/test_notebooks.py.
"""

import re
import warnings

from bayesrepro.api.display import Result, notes_in
from bayesrepro.errors import BayesreproWarning

OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def reader_texts(result) -> list[str]:
    """What a Python caller reads of a result: its summary, its HTML, its notes, flags and problems."""
    return [result.summary(), result._repr_html_(), *notes_in(result.to_dict()), *result.not_converged(),
            *getattr(result, "notes", []), *getattr(result, "flags", [])]


def _allocate(cls, *args, **kwargs):
    return object.__new__(cls)


class Tracking:
    """Records every result made and every package warning raised between ``start`` and ``stop``."""

    def __init__(self):
        self.results, self.messages = [], []
        self._catching = warnings.catch_warnings(record=True)

    def start(self) -> "Tracking":
        made = self.results

        def new(cls, *args, **kwargs):
            result = object.__new__(cls)
            made.append(result)
            return result

        Result.__new__ = staticmethod(new)
        self._caught = self._catching.__enter__()
        warnings.simplefilter("always")
        return self

    def stop(self) -> "Tracking":
        # not `del Result.__new__`: once assigned, CPython then calls object.__new__ with the constructor's
        # arguments and refuses them; a plain allocator stays in place instead
        Result.__new__ = staticmethod(_allocate)
        self._catching.__exit__(None, None, None)
        self.messages = [str(w.message) for w in self._caught if issubclass(w.category, BayesreproWarning)]
        return self

    def options_named(self) -> list[str]:
        """Each text that names a command-line option, with the result it came from."""
        texts = [(type(r).__name__, text) for r in self.results for text in reader_texts(r)]
        texts += [("warning", message) for message in self.messages]
        return [f"{where}: ...{text[max(0, m.start() - 150):m.end() + 50]!r}..." for where, text in texts
                if (m := OPTION.search(text))]
