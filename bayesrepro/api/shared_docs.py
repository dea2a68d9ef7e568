"""Descriptions of the parameters several public functions share, written once and put into their docstrings."""

from __future__ import annotations

_DATA = """data : pandas.DataFrame or str
        The scores: a DataFrame, a file, harness logs or a bundled dataset name, as ``read`` takes them."""
_WHERE = """where : str, optional
        A condition selecting rows (the user guide's page "Your data" describes the language).
    categorical : list of str, optional
        Columns read as categories of their text whatever they hold."""
_ROWS = f"""{_WHERE}
    drop_missing : bool, default False
        Drop rows with a missing value in a column used instead of refusing them."""
_SHARED = {
    "<data>": _DATA,
    "<where>": _WHERE,
    "<rows>": _ROWS,
    "<rows_progress>": f"""{_ROWS}
    progress : bool, optional
        Show progress on stderr (default: when stderr is a terminal).""",
    "<pair>": f"""{_DATA}
    item : str
        Column of the evaluation items (the pairs).
    system : str
        Column of the systems.
    score : str
        Column of the per-item scores.
    a, b : str
        The systems compared: the statistic is metric(a) - metric(b), the metric the mean score.""",
}


def shared_parameters(function):
    """Put the shared descriptions in place of their markers (``<rows>``, ``<pair>`` ...) in the docstring."""
    for marker, text in _SHARED.items():
        function.__doc__ = function.__doc__.replace(marker, text)
    return function
