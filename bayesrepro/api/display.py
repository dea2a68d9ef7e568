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

    def to_dict(self) -> dict:
        """The result as the matching command's ``--json`` prints it.

        Returns
        -------
        dict
            JSON-ready (NaN and infinities as None): ``Fit`` as ``vca``, ``Posterior`` as ``phi``, ``GlrtTest`` as
            ``glrt``, ``Comparison`` as ``compare`` and ``PowerPlan`` as ``plan`` print it.
        """
        return json_ready(self._payload())

    def summary(self) -> str:
        """The result as the matching command prints it.

        Returns
        -------
        str
            The tables and lines the command writes to stdout.
        """
        return self._text()

    def not_converged(self) -> list[str]:
        """What did not converge.

        Returns
        -------
        list of str
            One phrase per fit or sampler that did not converge; empty when everything did.
        """
        return self._problems()

    @abc.abstractmethod
    def _payload(self) -> dict:
        """The ``--json`` object, before NaN and NumPy scalars are made JSON-ready."""

    @abc.abstractmethod
    def _text(self) -> str:
        """The command's text."""

    @abc.abstractmethod
    def _problems(self) -> list[str]:
        """What did not converge."""

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return html_text(self.summary())
