"""The two parts of a formula evaluated on a table: the dense fixed-effects design and the grouping factors.

The fixed-effects design is built by formulae, its aliased columns dropped as
lme4 drops them; a grouping factor is held as integer codes, never as a dense
indicator matrix. Both the model frame (``frame``) and the binomial cells of
grouped aggregates (``binomial``) are built from them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import as_factor, is_categorical
from ..errors import BayesreproError, first_line
from .formulae_loader import load_formulae
from .formula import FORMULA_NAMESPACE, FormulaSpec

formulae = load_formulae()


@dataclass(frozen=True)
class GroupingFactor:
    """A random-intercept grouping: its levels and, with rows in memory, one integer code per row."""

    name: str
    columns: tuple[str, ...]
    codes: np.ndarray | None
    levels: pd.Index

    @property
    def n_levels(self) -> int:
        return len(self.levels)


@dataclass(frozen=True)
class FixedDesign:
    """The fixed-effects design of a formula on a table: formulae's design and its columns kept."""

    design: object              # formulae's design, to evaluate new rows
    X: np.ndarray               # the kept columns, one row per row of the table
    kept: list[int]             # columns of formulae's design kept (aliased ones dropped, as lme4 does)
    names: list[str]
    term_columns: dict[str, slice]
    note: str                   # which columns were dropped, if any


def fixed_design(spec: FormulaSpec, table: pd.DataFrame) -> FixedDesign:
    """The fixed design of ``spec`` on ``table`` (rows, or distinct cells), aliased columns dropped."""
    design = _fixed_design(spec, table.assign(**{spec.response: 0.0}) if spec.response not in table else table)
    if design is None:
        raise BayesreproError(
            f"formula {spec.formula!r} has no fixed part (no intercept and no fixed term); "
            "write '1 +' before the (1|g) terms for an intercept"
        )
    X = np.asarray(design.design_matrix, dtype=float)
    kept = _independent_columns(X)
    names, term_columns, note = _aliasing(list(design.as_dataframe().columns), dict(design.slices), kept)
    return FixedDesign(design, X[:, kept], kept, names, term_columns, note)


def _fixed_design(spec: FormulaSpec, frame: pd.DataFrame):
    for variable in spec.fixed_variables:
        if is_categorical(frame[variable]) and frame[variable].nunique() < 2:
            raise BayesreproError(
                f"fixed-effect factor '{variable}' has a single level in the data; drop it from the formula "
                "or widen --where"
            )
    columns = {v: frame[v] for v in spec.fixed_variables}
    columns[spec.response] = frame[spec.response]
    fixed_data = pd.DataFrame(
        {name: _text_as_category(values) for name, values in columns.items()}
    )
    try:
        return formulae.design_matrices(spec.fixed_formula, fixed_data, na_action="error",
                                        env=formulae.environment.Environment([FORMULA_NAMESPACE])).common
    except Exception as exc:  # formulae surfaces pandas/numpy errors from inside term evaluation
        raise BayesreproError(f"could not build the fixed effects of {spec.formula!r}: {first_line(exc)}") from None


def _independent_columns(X: np.ndarray) -> list[int]:
    """Columns that are not linear combinations of earlier ones (lme4 drops the others)."""
    scale = np.linalg.norm(X, axis=0)
    scale[scale == 0] = 1.0
    gram = (X / scale).T @ (X / scale)
    kept: list[int] = []
    for j in range(X.shape[1]):
        candidate = kept + [j]
        eigenvalues = np.linalg.eigvalsh(gram[np.ix_(candidate, candidate)])
        if eigenvalues.min() > 1e-10 * max(1.0, eigenvalues.max()):
            kept = candidate
    return kept


def _aliasing(names: list[str], term_columns: dict[str, slice], kept: list[int]):
    """Names and term slices after dropping aliased columns, and a note saying which."""
    if len(kept) == len(names):
        return names, term_columns, ""
    position = {old: new for new, old in enumerate(kept)}
    new_columns = {}
    for term, columns in term_columns.items():
        survivors = [position[j] for j in range(columns.start, columns.stop) if j in position]
        if survivors:
            new_columns[term] = slice(survivors[0], survivors[-1] + 1)
    dropped = [names[j] for j in range(len(names)) if j not in position]
    return [names[j] for j in kept], new_columns, f"fixed-effect design is rank deficient: dropped {', '.join(dropped)}"


def grouping_factor(frame: pd.DataFrame, columns: tuple[str, ...]) -> GroupingFactor:
    """The grouping factor of ``columns`` (one, or several crossed into ``a:b`` levels) with a code per row."""
    name = ":".join(columns)
    if len(columns) == 1:
        factor = as_factor(frame, columns[0])
        return GroupingFactor(name, columns, factor.codes.astype(np.int64), pd.Index(factor.categories.astype(str)))
    parts = [as_factor(frame, column) for column in columns]
    codes, uniques = _crossed_codes([p.codes for p in parts], [len(p.categories) for p in parts])
    labels = [":".join(str(p.categories[c]) for p, c in zip(parts, combo)) for combo in uniques]
    return GroupingFactor(name, columns, codes.astype(np.int64), pd.Index(labels))


def _crossed_codes(codes: list[np.ndarray], sizes: list[int]) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """A code per row for each distinct combination of ``codes`` (factors with ``sizes`` levels), numbered in the
    combinations' lexicographic order, and the combinations: one integer key per row (mixed radix) and a sort,
    where factorising the rows' tuples builds a Python tuple per row."""
    if np.prod([size + 1.0 for size in sizes]) >= 2.0**62:
        codes, uniques = pd.factorize(pd.MultiIndex.from_arrays(codes), sort=True)
        return codes, list(uniques)
    key = np.zeros(len(codes[0]), dtype=np.int64)
    for part, size in zip(codes, sizes):
        key = key * (size + 1) + (part.astype(np.int64) + 1)   # codes from -1 (a missing label) up
    distinct, inverse = np.unique(key, return_inverse=True)
    combinations = []
    for size in reversed(sizes):
        combinations.append(distinct % (size + 1) - 1)
        distinct = distinct // (size + 1)
    return inverse.reshape(-1), list(zip(*(c.tolist() for c in reversed(combinations))))


def _text_as_category(values: pd.Series) -> pd.Series:
    """Text columns become categories for formulae; categories keep their level order."""
    if is_categorical(values) and not isinstance(values.dtype, pd.CategoricalDtype):
        return values.astype(str).astype("category")
    return values
