"""What every public result shares: its JSON form, its notebook display, and errors naming Python arguments."""

from __future__ import annotations

import abc
import functools
import html
import math


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


def html_text(text: str) -> str:
    """A result's text summary for a notebook, every character escaped (data labels are user strings)."""
    return f"<pre>{html.escape(text)}</pre>"


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

    @abc.abstractmethod
    def to_dict(self) -> dict:
        """The result as the matching command's ``--json`` prints it."""

    @abc.abstractmethod
    def summary(self) -> str:
        """The result as the matching command prints it."""

    @abc.abstractmethod
    def not_converged(self) -> list[str]:
        """What did not converge, one phrase each; empty when everything did."""

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return html_text(self.summary())
