"""``br.read`` and ``br.load_dataset``: evaluation data as a pandas DataFrame."""

from __future__ import annotations

from .display import public


@public
def read(source, where: str | None = None, categorical=None):
    """Read evaluation scores, optionally keeping only the rows a condition selects.

    Parameters
    ----------
    source : pandas.DataFrame or str
        A DataFrame, a CSV/TSV (optionally .gz), Parquet or JSON Lines file, harness logs (``"lm-eval:PATH"``,
        ``"inspect:PATH"``) or a bundled dataset name.
    where : str, optional
        A condition selecting rows, e.g. ``"task == 'qa'"`` (the user guide's page "Your data" describes the
        language; it is parsed, never evaluated as Python).
    categorical : list of str, optional
        Columns read as categories of their text whatever they hold.

    Returns
    -------
    pandas.DataFrame
        The rows, numbered from 1 as in the file.
    """
    from ..data import read_table

    return read_table(source, where=where, categorical=column_list(categorical))


def column_list(columns) -> list[str]:
    """One column name or several as a list (None: none)."""
    return [columns] if isinstance(columns, str) else list(columns or ())


def read_columns(source, columns, where=None, categorical=None, drop_missing: bool = False):
    """The rows an instrument uses: ``columns`` must exist; their missing values are refused or, with
    ``drop_missing``, dropped with a ``BayesreproWarning`` saying how many."""
    import warnings

    from ..data import read_table, remove_missing, require_columns
    from ..errors import BayesreproWarning, python_names

    frame = read_table(source, where=where, categorical=column_list(categorical))
    require_columns(frame, columns, "column")
    frame, note = remove_missing(frame, list(columns), drop_missing)
    if note:
        warnings.warn(python_names(note), BayesreproWarning, stacklevel=2)
    return frame


@public
def load_dataset(name: str):
    """A dataset bundled with the package, its identifier columns as categories.

    Parameters
    ----------
    name : str
        One of ``kreutzer_ter``, ``kreutzer_annotation``, ``kreutzer_marking_full``, ``kreutzer_marking_partial``,
        ``sofa_mlp_grid``.

    Returns
    -------
    pandas.DataFrame
        The dataset's rows.
    """
    from ..datasets import load_dataset as bundled

    return bundled(name)
