"""The exceptions users see, each a one-line, actionable message, and the exit statuses they map to."""

import re

# Exit statuses of the command line (documented in the README).
EXIT_OK = 0
EXIT_BAD_INPUT = 2        # bad data, option or formula: nothing was computed
EXIT_NOT_CONVERGED = 3    # the analysis ran but its fit or sampler did not converge
EXIT_INTERRUPTED = 130    # Ctrl-C: nothing was written
EXIT_BROKEN_PIPE = 141    # the reader of stdout went away (| head): as a shell reports SIGPIPE


_NUMPY_SCALAR = re.compile(r"\bnp\.(?:float|int|uint)\d+\(([^()]*)\)|\bnp\.(True|False)_")


class BayesreproError(ValueError):
    """Bad input or an analysis that cannot be trusted.

    The message is a single line that names the column, option or diagnostic
    at fault and says what to do about it. The command line prints it to
    stderr and exits with ``exit_status``; Python callers can catch it.

    Parameters
    ----------
    message : str
        What is wrong and how to fix it; line breaks and runs of spaces
        become single spaces.
    """

    exit_status = EXIT_BAD_INPUT

    def __init__(self, message: str):
        # one line, and NumPy scalars written as the numbers they hold (np.float64(0.5) -> 0.5)
        text = " ".join(str(message).split())
        super().__init__(_NUMPY_SCALAR.sub(lambda match: match.group(1) or match.group(2), text))


class NotConvergedError(BayesreproError):
    """A fit or a sampler that did not converge, with the diagnostics that say so."""

    exit_status = EXIT_NOT_CONVERGED


def shown(value) -> str:
    """A value for an error line as a user would write it: a NumPy scalar as the number it holds."""
    if isinstance(value, str):
        return repr(value)
    item = getattr(value, "item", None)
    if item is not None and getattr(value, "shape", None) == ():
        value = item()
    return repr(value)


def first_line(exc: BaseException) -> str:
    """The first line of a library's exception message, for a one-line error."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
