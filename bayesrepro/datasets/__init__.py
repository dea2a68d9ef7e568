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
    """Load a bundled dataset with identifier columns as categories (levels sorted as text)."""
    import pyarrow as pa
    import pyarrow.csv as pa_csv

    path = dataset_path(name)
    with resources.as_file(path) as file:
        header = pd.read_csv(file, nrows=0).columns
        text = pa.dictionary(pa.int32(), pa.string())
        types = {column: text for column in header if column not in _NUMERIC_COLUMNS[name]}
        table = pa_csv.read_csv(
            file, convert_options=pa_csv.ConvertOptions(column_types=types, strings_can_be_null=True, null_values=[""])
        )
    frame = table.to_pandas()
    for column in types:
        frame[column] = frame[column].cat.reorder_categories(sorted(frame[column].cat.categories))
    return frame
