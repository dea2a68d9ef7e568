"""The exceptions users see, each a one-line, actionable message, and the exit statuses they map to."""

import contextvars
import re

# Exit statuses of the command line (the user guide's "Exit statuses, bad input and safety" documents them).
EXIT_OK = 0
EXIT_BAD_INPUT = 2        # bad data, option or formula: nothing was computed
EXIT_NOT_CONVERGED = 3    # the analysis ran but its fit or sampler did not converge
EXIT_INTERRUPTED = 130    # Ctrl-C: nothing was written
EXIT_BROKEN_PIPE = 141    # the reader of stdout went away (| head): as a shell reports SIGPIPE


_NUMPY_SCALAR = re.compile(r"\bnp\.(?:float|int|uint)\d+\(([^()]*)\)|\bnp\.(True|False)_")

# Messages name the options the command line takes (--object, --engine memory). Raised to a Python caller of the
# public API they name its keyword arguments instead (object=, engine="memory"): ``for_python`` renders them so.
COMMAND_LINE = contextvars.ContextVar("bayesrepro_command_line", default=False)
# an option, with its value when quoted, when it is a choice (--engine memory), a number (--nagq 1) or a
# placeholder (--simulations N) (not another program's option such as lm-eval's --log_samples, which a message may
# quote)
_OPTION = re.compile(r"(?<![\w-])--(?:(engine|family|link|method|reference|backend|prior|sampler|test|criterion) "
                     r"([a-z][a-z0-9_-]*)\b|([a-z][a-z0-9-]*)(?![\w])(?: ('[^']*'|\d+(?:\.\d+)?\b(?![.\w])|[A-Z]+\b))?)")
# --column PARAMETER=COLUMN: a spec's column parameters are keyword arguments of load_spec
_COLUMN_OPTION = re.compile(r"--column (?=[A-Za-z_]\w*=)")
# options whose Python argument has another name
PYTHON_ARGUMENTS = {"h1": "formula", "bootstrap": "n_boot", "prior-scale": "prior_scale", "max": "maximum",
                    "no-phi": "phi", "metric": "metrics"}


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

    def for_python(self) -> "BayesreproError":
        """Rewrite the options this error names as the public API's keyword arguments (``--object`` as ``object=``).

        The command line, while it runs, keeps the options.

        Returns
        -------
        BayesreproError
            This error, its message rewritten.
        """
        if not COMMAND_LINE.get() and self.args:
            self.args = (python_names(self.args[0]),)
        return self


class NotConvergedError(BayesreproError):
    """A fit or a sampler that did not converge, with the diagnostics that say so.

    Parameters
    ----------
    message : str
        The diagnostics and what to do, in one line.
    """

    exit_status = EXIT_NOT_CONVERGED


def python_names(text: str) -> str:
    """A message's command-line options as keyword arguments: ``--engine memory`` -> ``engine="memory"``,
    ``--object 'x'`` -> ``object='x'``, ``--nagq 1`` -> ``nagq=1``, ``--simulations N`` -> ``simulations=N``,
    ``--where`` -> ``where=``, ``--column score=COLUMN`` -> ``score=COLUMN``."""
    def keyword(match) -> str:
        option, value = match.group(1) or match.group(3), match.group(2) or match.group(4)
        name = PYTHON_ARGUMENTS.get(option, option.replace("-", "_"))
        if value is None:
            return f"{name}="
        plain = value.startswith("'") or value[0].isdigit() or value.isupper()   # quoted, a number, a placeholder
        return f"{name}={value}" if plain else f'{name}="{value}"'

    return _OPTION.sub(keyword, _COLUMN_OPTION.sub("", text))


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


class BayesreproWarning(UserWarning):
    """Base of the warnings the package issues to Python callers."""


class ConvergenceWarning(BayesreproWarning):
    """A fit or a sampler that did not converge: the results it returned are not to be trusted."""


def warn_unconverged(problems: list[str]) -> None:
    """A ``ConvergenceWarning`` naming what did not converge, for Python callers (the command line says it in its
    exit status and its own warning line)."""
    import warnings

    if problems and not COMMAND_LINE.get():
        said = "; ".join(python_names(problem) for problem in problems)
        warnings.warn(f"{said}; the results are not to be trusted", ConvergenceWarning, stacklevel=3)


def warn_note(text: str) -> None:
    """A note on the input (a run skipped): a ``BayesreproWarning`` naming the keyword arguments to Python callers,
    a ``bayesrepro: ...`` line, through the package's logger, on the command line."""
    if COMMAND_LINE.get():
        import logging

        logging.getLogger("bayesrepro").warning(text)
    else:
        import warnings

        warnings.warn(python_names(text), BayesreproWarning, stacklevel=2)
