"""``br.load_spec``: a named analysis of ``models/`` (the command line's ``--spec``) for use from Python."""

from __future__ import annotations

from .display import public


@public
def load_spec(name: str, **columns: str):
    """A named analysis spec, its formulas written with your column names.

    Parameters
    ----------
    name : str
        A spec bundled in ``models/`` (``system_comparison``, ``conditional_length``, ``grid_vca``,
        ``learning_rate_length``, ``meta_importance``, ``annotation``, ``minimal_phi``, ``binary_grid``),
        one in ``./models``, or the path of a TOML file.
    **columns : str
        Column names replacing the spec's defaults, e.g. ``score="bleu", item="segment"`` (the command
        line's ``--column score=bleu``).

    Returns
    -------
    Spec
        ``formula`` (the model fitted; H1 of a test), ``h0``, ``factor``, ``by``, ``object``, ``split`` (a
        column to fit once per level of) and ``columns``; ``prepare(data)`` adds the columns the spec derives
        (the length classes of ``conditional_length``) and checks that every column it names exists.
    """
    from ..specs import load_spec as named_spec

    return named_spec(name, **columns)
