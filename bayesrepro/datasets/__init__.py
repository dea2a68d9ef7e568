"""The papers' evaluation data, shipped with the package (see NOTICE.md)."""

from __future__ import annotations

from importlib import resources

import pandas as pd

from ..errors import BayesreproError

# Columns that are measurements; every other column of a bundled file is an
# identifier or a meta-parameter value and is read as a category.
_NUMERIC_COLUMNS = {
    "kreutzer_ter": ("ter", "src_length"),
    "kreutzer_annotation": ("score",),
    "kreutzer_marking_full": ("ter", "src_length"),
    "kreutzer_marking_partial": ("ter", "src_length"),
    "sofa_mlp_grid": ("accuracy",),
}

DATASETS = tuple(_NUMERIC_COLUMNS)


def dataset_path(name: str):
    """Path of a bundled dataset file."""
    if name not in _NUMERIC_COLUMNS:
        raise BayesreproError(
            f"no bundled dataset named '{name}'; choose one of: {', '.join(DATASETS)}"
        )
    return resources.files(__package__) / f"{name}.csv.gz"


def load_dataset(name: str) -> pd.DataFrame:
    """Load a bundled dataset, read by the same rule as any CSV file.

    The measurement columns must come out numeric under that rule; every other
    column keeps its text as written and becomes a category, with its levels
    sorted as text.

    Parameters
    ----------
    name : str
        One of ``kreutzer_ter``, ``kreutzer_annotation``,
        ``kreutzer_marking_full``, ``kreutzer_marking_partial`` and
        ``sofa_mlp_grid`` (their sources are in the package's NOTICE.md).

    Returns
    -------
    pandas.DataFrame
        One row per row of the bundled file.

    Raises
    ------
    BayesreproError
        For a name that is not a bundled dataset, or a bundled file whose
        measurement columns are not numeric (a damaged installation).
    """
    from ..readers import read_delimited, read_header

    path = dataset_path(name)
    with resources.as_file(path) as file:
        header = read_header(file, ",")
        identifiers = [column for column in header if column not in _NUMERIC_COLUMNS[name]]
        frame = read_delimited(file, ",", text_columns=identifiers)
    for column in _NUMERIC_COLUMNS[name]:
        if not pd.api.types.is_numeric_dtype(frame[column]):
            raise BayesreproError(f"bundled dataset '{name}': column '{column}' is not numeric; reinstall the package")
    for column in identifiers:
        frame[column] = pd.Categorical(frame[column])
    return frame
