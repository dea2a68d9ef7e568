"""The evaluation-data contract: read a table, filter it, validate it, describe its design.

Validation happens here, at the boundary, so that everything downstream can
trust its inputs: every problem becomes one BayesreproError line that names
the column or option and says what to do.
"""

from __future__ import annotations

import difflib
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Sequence

import numpy as np
import pandas as pd

from .datasets import DATASETS, load_dataset
from .errors import BayesreproError, shown
from .frame_types import check_frame
from .levels import level_factor, level_labels
from .readers import SUPPORTED_SUFFIXES, file_mode, parse_numbers, read_file

if TYPE_CHECKING:
    from .where import Where

# "lm-eval:runs/" or "inspect:logs/": harness logs read into the long table (bayesrepro.harness)
HARNESS_PREFIXES = ("lm-eval:", "inspect:")
# The index of a table read from a file (or a bundled dataset): each row's number, counted from 1 at the first
# row of data, so that messages name the row a user finds in the file; a DataFrame keeps its own index.
FILE_ROWS = "data row"
# Scores beyond this magnitude overflow double precision when squared and summed; scores that differ by less
# than its inverse underflow (squared differences below ~1e-300 are lost).
SCORE_SCALE = 1e100


def read_table(source, where: str | Where | None = None, categorical: Iterable[str] = ()) -> pd.DataFrame:
    """Read evaluation data and apply an optional row filter.

    Parameters
    ----------
    source : pandas.DataFrame, str or pathlib.Path
        A DataFrame (copied, its index kept); a file path (CSV/TSV, optionally
        gzipped, Parquet, JSON Lines), whose rows are then numbered from 1 at
        the first row of data; harness logs (``"lm-eval:PATH"``,
        ``"inspect:PATH"``); or the name of a bundled dataset.
    where : str or Where, optional
        A condition that keeps rows, in the package's own condition language
        (``"mode == 'Marking'"``); it is parsed, never run as code.
    categorical : iterable of str, default ()
        Columns that become categories of their text as written (a seed
        written ``3`` is the level ``'3'``).

    Returns
    -------
    pandas.DataFrame
        The kept rows, with categories that no kept row uses removed.

    Raises
    ------
    BayesreproError
        For a source that cannot be read, a condition that is not valid or
        keeps no rows, or a categorical column that is not in the data.
    """
    categorical = list(categorical)
    condition = None
    if where is not None:
        from .where import as_where   # the condition language, imported only for a condition (13 ms)

        condition = as_where(where)
    frame = _read_source(source, categorical)
    if not isinstance(source, pd.DataFrame):
        frame.index = pd.RangeIndex(1, len(frame) + 1, name=FILE_ROWS)
    if condition is not None:
        frame = _apply_where(frame, condition)
    frame = _drop_unused_categories(frame)
    for column in categorical:
        require_columns(frame, [column], "categorical column")
        frame[column] = level_factor(frame[column])
    return frame


def _read_source(source, text_columns: list[str]) -> pd.DataFrame:
    if isinstance(source, pd.DataFrame):
        check_frame(source)
        repeated = source.columns[source.columns.duplicated()]
        if len(repeated):
            raise BayesreproError(f"the data have the column '{repeated[0]}' more than once; rename one of them")
        return source.copy()
    if not isinstance(source, (str, Path)):
        raise BayesreproError(
            f"data must be a pandas DataFrame, a file path or a bundled dataset name, not {type(source).__name__}"
        )
    if isinstance(source, str) and source.startswith(HARNESS_PREFIXES):
        from .harness import read_logs

        harness, _, logs = source.partition(":")
        return read_logs(harness, [logs])
    path = Path(source)
    if file_mode(path) is None:
        if str(source) in DATASETS:
            return load_dataset(str(source))
        raise BayesreproError(
            f"data file '{source}' does not exist (bundled datasets: {', '.join(DATASETS)})"
        )
    if path.is_dir():
        raise BayesreproError(f"data '{source}' is a directory; name a file ({', '.join(SUPPORTED_SUFFIXES)})")
    if not path.is_file():   # a FIFO or a device: reading it may never end
        raise BayesreproError(f"data '{source}' is not a regular file; name a file ({', '.join(SUPPORTED_SUFFIXES)})")
    try:
        return read_file(path, text_columns)
    except PermissionError:
        raise BayesreproError(f"data file '{source}' cannot be read (permission denied)") from None


def _apply_where(frame: pd.DataFrame, where: Where) -> pd.DataFrame:
    kept = frame[where.mask(frame)]
    if kept.empty:
        raise BayesreproError(f"--where {where.text!r} keeps no rows of the {len(frame)} in the data")
    return kept


def _drop_unused_categories(frame: pd.DataFrame) -> pd.DataFrame:
    frame = frame.copy()
    for column in frame.columns:
        if isinstance(frame[column].dtype, pd.CategoricalDtype):
            values = frame[column].array
            codes = values.codes
            # counted first: pandas rebuilds the column even where every category is used (1-2 ms a column)
            if not np.bincount(codes[codes >= 0], minlength=len(values.categories)).all():
                frame[column] = frame[column].cat.remove_unused_categories()
    return frame


def require_columns(frame: pd.DataFrame, columns: Iterable[str], role: str) -> None:
    """Fail with one line naming the first missing column and its nearest match."""
    for column in columns:
        if column not in frame.columns:
            close = difflib.get_close_matches(column, [str(c) for c in frame.columns], n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise BayesreproError(
                f"{role} '{column}' is not a column of the data{hint} "
                f"(columns: {', '.join(map(str, frame.columns))})"
            )


def check_score(frame: pd.DataFrame, column: str) -> np.ndarray:
    """The score column as float64, refusing text, missing and infinite values and scales that overflow.

    A score is a number: in a text column every non-empty value must be
    written as one (``1`` and ``1.0`` are then the same score); a missing
    score is an empty field (or a missing value of a DataFrame or a Parquet
    or JSON file), and ``NA`` or ``nan`` written in a text file are text.
    """
    require_columns(frame, [column], "score column")
    values = frame[column]
    named_categorical = isinstance(values.dtype, pd.CategoricalDtype)
    if named_categorical:
        values = values.astype(object)
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        scores = values.to_numpy(dtype=float, na_value=np.nan)
    else:
        scores, bad = parse_numbers(values)
        if named_categorical and not bad.any():
            raise BayesreproError(f"score column '{column}' holds categories (is it named by --categorical?), but a "
                                  "score is a number; leave it out of --categorical")
        if bad.any():
            row = int(np.argmax(bad))
            raise BayesreproError(
                f"score column '{column}' is not numeric: {row_reference(frame.index, row)} holds "
                f"{values.iloc[row]!r}; a score must be a number and a missing score an empty field; fix those values "
                "or choose another column"
            )
    missing = np.isnan(scores)
    if missing.any():
        raise BayesreproError(
            f"score column '{column}' has {int(missing.sum())} missing value(s) (the first in "
            f"{row_reference(frame.index, int(np.argmax(missing)))}); remove those rows or pass --drop-missing"
        )
    infinite = np.isinf(scores)
    if infinite.any():
        raise BayesreproError(
            f"score column '{column}' has {int(infinite.sum())} infinite value(s) (the first in "
            f"{row_reference(frame.index, int(np.argmax(infinite)))}); remove them"
        )
    if len(scores):
        check_score_scale(column, float(np.abs(scores).max()), float(scores.max() - scores.min()))
    return scores


def check_score_scale(column: str, largest: float, spread: float) -> None:
    """Refuse scores whose squares overflow (largest |score|) or whose differences underflow (max − min)."""
    if largest > SCORE_SCALE:
        raise BayesreproError(
            f"score column '{column}' reaches {largest:.3g} in absolute value: squares of scores beyond "
            f"{SCORE_SCALE:g} overflow double precision in the sums every engine uses; rescale the scores "
            "(divide them by a power of ten) and read the variances on that scale"
        )
    if 0 < spread < 1 / SCORE_SCALE:
        raise BayesreproError(
            f"score column '{column}' spans only {spread:.3g} (its largest minus its smallest value): below "
            f"{1 / SCORE_SCALE:g} the squared differences every engine sums near the smallest numbers of double "
            "precision; rescale the scores (multiply them by a power of ten) and read the variances on that scale"
        )


def row_reference(index: pd.Index, position: int) -> str:
    """How a user finds a row: its data row in a file (counted from 1), or its label in a DataFrame's index."""
    label = index[position]
    if index.name == FILE_ROWS:
        return f"data row {label} (row 1 is the first row of data)"
    return f"the row with index label {shown(label)}"


def remove_missing(frame: pd.DataFrame, columns: Sequence[str], allowed: bool) -> tuple[pd.DataFrame, str]:
    """Drop rows with missing values in ``columns`` when allowed; say how many and why.

    Returns the kept rows and a note ('' when nothing was dropped). When not
    allowed, missing values are an error naming the column.
    """
    missing = frame[list(columns)].isna()
    counts = {column: int(n) for column, n in missing.sum().items() if n}
    if not counts:
        return frame, ""
    detail = ", ".join(f"'{column}' ({n})" for column, n in counts.items())
    if not allowed:
        raise BayesreproError(
            f"missing values in {detail}; remove those rows or pass --drop-missing"
        )
    kept = frame[~missing.any(axis=1)]
    if kept.empty:
        raise BayesreproError(f"every row has a missing value in {detail}; nothing is left to analyse")
    note = f"dropped {len(frame) - len(kept)} of {len(frame)} rows with missing values in {detail}"
    return _drop_unused_categories(kept), note


def as_factor(frame: pd.DataFrame, column: str) -> pd.Categorical:
    """A grouping column as a categorical of its level labels, whatever its dtype (ids are categories)."""
    values = frame[column]
    if isinstance(values.dtype, pd.CategoricalDtype) and all(isinstance(c, str) for c in values.cat.categories):
        return values.cat.remove_unused_categories().array
    return level_factor(values)


# 2**53: integers beyond it are not all held exactly by a double
EXACT_DOUBLE_INTEGERS = 2**53


def inexact_integer(values: pd.Series):
    """An integer of the column that a double cannot hold exactly (beyond 2**53), or None.

    Such a column read as numbers would be rounded, and two of its labels
    (ids, hashes) could become one number: it is read as labels instead.
    """
    if values.dtype.kind in "iu":
        numbers = values.to_numpy()
        large = numbers[(numbers > EXACT_DOUBLE_INTEGERS) | (numbers < -EXACT_DOUBLE_INTEGERS)] if values.dtype.kind == "i" \
            else numbers[numbers > EXACT_DOUBLE_INTEGERS]
        candidates = (int(v) for v in np.unique(large))
    elif values.dtype == object:
        candidates = (int(v) for v in values.dropna() if isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                      and abs(int(v)) > EXACT_DOUBLE_INTEGERS)
    else:
        return None
    return next((v for v in candidates if int(float(v)) != v), None)


def integers_as_labels(frame: pd.DataFrame, columns) -> tuple[pd.DataFrame, list[str]]:
    """``frame`` with each of ``columns`` whose integers a double cannot hold exactly as a factor of its labels,
    and a note for each (every engine reads such a column so: see ``inexact_integer``)."""
    notes = []
    for column in dict.fromkeys(columns):
        example = inexact_integer(frame[column])
        if example is None:
            continue
        labels = level_labels(frame[column])
        frame = frame.assign(**{column: pd.Categorical(labels, categories=sorted(set(labels.dropna())))})
        notes.append(f"column '{column}' holds integers a double cannot hold exactly ({example}, beyond 2^53): it is "
                     "read as labels (a factor), not as numbers; divide or recode them to use it as a covariate")
    return frame, notes


def is_categorical(values: pd.Series) -> bool:
    """Category or text: a column whose values are levels, not numbers."""
    return (
        isinstance(values.dtype, pd.CategoricalDtype)
        or pd.api.types.is_object_dtype(values)
        or pd.api.types.is_string_dtype(values)
    )


@dataclass(frozen=True)
class DesignDescription:
    """Levels per factor and how each pair of factors relates."""

    n_obs: int
    levels: dict[str, int]
    relations: dict[tuple[str, str], str]
    balanced: bool

    def __str__(self) -> str:
        lines = [f"{self.n_obs} observations; {'balanced' if self.balanced else 'unbalanced'} design"]
        lines += [f"  {name}: {n} levels" for name, n in self.levels.items()]
        lines += [f"  {a} / {b}: {relation}" for (a, b), relation in self.relations.items()]
        return "\n".join(lines)


def describe_design(frame: pd.DataFrame, factors: Sequence[str]) -> DesignDescription:
    """Levels per factor; each pair crossed (fully or partly) or nested; balance.

    A is nested in B when every level of A occurs with exactly one level of B.
    The design is balanced when every combination of all factors that occurs
    occurs equally often and every combination occurs.
    """
    require_columns(frame, factors, "factor")
    codes = {name: as_factor(frame, name).codes for name in factors}
    levels = {name: int(codes[name].max()) + 1 for name in factors}
    relations = {}
    for a, b in itertools.combinations(factors, 2):
        pairs = pd.DataFrame({"a": codes[a], "b": codes[b]}).drop_duplicates()
        if pairs["a"].nunique() == len(pairs) and levels[a] > levels[b]:
            relations[(a, b)] = f"{a} nested in {b}"
        elif pairs["b"].nunique() == len(pairs) and levels[b] > levels[a]:
            relations[(a, b)] = f"{b} nested in {a}"
        elif len(pairs) == levels[a] * levels[b]:
            relations[(a, b)] = "fully crossed"
        else:
            relations[(a, b)] = f"partly crossed ({len(pairs)} of {levels[a] * levels[b]} combinations)"
    cell_counts = pd.DataFrame(codes).value_counts()
    n_cells = int(np.prod(list(levels.values()))) if levels else 1
    balanced = bool(cell_counts.nunique() <= 1 and len(cell_counts) == n_cells)
    return DesignDescription(len(frame), levels, relations, balanced)

