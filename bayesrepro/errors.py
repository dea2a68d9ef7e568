"""The one exception type users see: a one-line, actionable message."""


class BayesreproError(ValueError):
    """Bad input or an analysis that cannot be trusted.

    The message is a single line that names the column, option or diagnostic
    at fault and says what to do about it. The command line prints it to
    stderr and exits non-zero; Python callers can catch it.
    """

    def __init__(self, message: str):
        super().__init__(" ".join(str(message).split()))


def first_line(exc: BaseException) -> str:
    """The first line of a library's exception message, for a one-line error."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
