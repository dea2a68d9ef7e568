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
    """Load a bundled dataset with identifier columns as categories."""
    path = dataset_path(name)
    with resources.as_file(path) as file:
        frame = pd.read_csv(file, dtype=str, keep_default_na=False, na_values=[""])
    for column in frame.columns:
        if column in _NUMERIC_COLUMNS[name]:
            frame[column] = pd.to_numeric(frame[column])
        else:
            frame[column] = frame[column].astype("category")
    return frame
