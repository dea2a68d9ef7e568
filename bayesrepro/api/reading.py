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
        A condition selecting rows, e.g. ``"task == 'qa'"`` (the README describes the language; it is parsed,
        never evaluated as Python).
    categorical : list of str, optional
        Columns read as categories of their text whatever they hold.

    Returns
    -------
    pandas.DataFrame
        The rows, numbered from 1 as in the file.
    """
    from ..data import read_table

    columns = [categorical] if isinstance(categorical, str) else list(categorical or ())
    return read_table(source, where=where, categorical=columns)


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
