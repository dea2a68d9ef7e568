"""A formula evaluated on data: the model frame, of rows in memory or of a producer's grouped sums.

The fixed-effects design is dense (built by formulae); grouping factors are
held as integer codes, never as dense indicator matrices: evaluation data have
factors with thousands of levels and hundreds of thousands of rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

import numpy as np
import pandas as pd

from ..data import (as_factor, check_score, integers_as_labels, is_categorical, read_table, remove_missing,
                    require_columns)
from ..errors import BayesreproError, first_line
from ..frame_types import check_frame
from .binomial import binomial_cells, binomial_trials
from .cells import fixed_cells
from .checks import confounded_pairs, require_estimable, require_levels
from .formulae_loader import load_formulae
from .formula import FORMULA_NAMESPACE, FormulaSpec, parse_formula
from .gaussian import fixed_stats, stats_from_sums
from .memory_estimate import DenseEstimate, dense_estimate, parse_memory, require_within
from .sums import GroupedSums, sums_from_rows

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


@dataclass(frozen=True, kw_only=True)
class ModelFrame:
    """A formula evaluated on data: fixed design, grouping factors and the statistics of the response.

    Both kinds hold the grouped sums of the response: a ``RowFrame``, built from rows in memory, also holds them
    (``y``, ``X``, each row's cell and levels, ``data``); a ``GroupedFrame`` was summed by a producer where the
    data live (DuckDB, Spark). Both give ``is_binary()`` and ``sibling()``; engines need only ``stats()``; code
    that needs rows (resampling, Bambi's model) asks for them with ``require_rows``.
    """

    has_rows: ClassVar[bool] = False
    spec: FormulaSpec
    fixed_names: list[str]
    fixed_term_columns: dict[str, slice]
    groups: list[GroupingFactor]
    fixed_design: object                 # formulae's design, to evaluate new rows
    fixed_kept: list[int]                # its columns kept after dropping aliased ones
    cells: pd.DataFrame                  # distinct combinations of the fixed variables, with row counts
    X_cells: np.ndarray                  # the fixed design row of every cell
    sums: GroupedSums                    # n, Σy and Σ(y − ȳ)² per cell, per level within cells, pair counts
    notes: list[str] = field(default_factory=list)
    max_memory: int | str | None = None  # limit of any dense block built for it (None: half the machine's memory)
    # statistics computed once; not an init field, so dataclasses.replace gives a copy without them
    _computed: dict = field(default_factory=dict, init=False, compare=False, repr=False)

    def design_rows(self, new_data: pd.DataFrame) -> np.ndarray:
        """Fixed-effects design rows for new data (a reference grid), coded as in the fit."""
        frame = new_data.copy()
        for column in frame.columns:
            if column in self.cells.columns and isinstance(self.cells[column].dtype, pd.CategoricalDtype):
                frame[column] = pd.Categorical(frame[column], categories=self.cells[column].cat.categories)
        rows = np.asarray(self.fixed_design.evaluate_new_data(frame).design_matrix, dtype=float)
        return rows[:, self.fixed_kept]

    def stats(self):
        """The Gaussian sufficient statistics (``design.gaussian.GaussianStats``), computed once; refused for
        random slopes, and when its dense block and the engine's would pass the memory limit."""
        self._require_intercepts("this analysis")
        return self.intercept_stats()

    def intercept_stats(self):
        """The statistics of the frame's random intercepts, whatever slopes it has (the checks of the data use
        them; engines call ``stats``, which refuses slopes)."""
        if "gaussian" not in self._computed:
            require_within(self.dense_estimate("gaussian"), self.max_memory)
            self._computed["gaussian"] = stats_from_sums(self.sums, self.X_cells, self.group_names,
                                                         self.spec.intercept)
        return self._computed["gaussian"]

    def fitted(self, key, fit):
        """``fit()``, computed once per frame and ``key`` (the method and settings of a fit): every analysis of
        one model frame shares its REML and ML fits."""
        if ("fit", key) not in self._computed:
            self._computed[("fit", key)] = fit()
        return self._computed[("fit", key)]

    def fixed_products(self):
        """X'X, X'y, y'y, 1'y and 1'X (``design.gaussian.FixedStats``): from the full statistics where computed."""
        if "gaussian" in self._computed:
            return self._computed["gaussian"]
        if "fixed" not in self._computed:
            self._computed["fixed"] = fixed_stats(self.sums, self.X_cells, self.spec.intercept)
        return self._computed["fixed"]

    def binomial(self):
        """The binomial cell counts (``design.binomial.BinomialCells``), computed once."""
        self._require_intercepts("a binary model")
        if "binomial" not in self._computed:
            require_within(self.dense_estimate("binomial"), self.max_memory)
            self._computed["binomial"] = self._binomial_cells()
        return self._computed["binomial"]

    def dense_estimate(self, engine: str = "gaussian") -> DenseEstimate:
        """What the dense path of ``engine`` would allocate for this design (``memory_estimate``)."""
        sizes = [g.n_levels for g in self.groups]
        distinct = coupling = 0
        if engine == "bayes" and sizes:
            dominant = int(np.argmax(sizes))
            part = self.sums.factors[dominant]
            distinct = len(np.unique(np.bincount(part.level, weights=part.n, minlength=sizes[dominant])))
        if engine == "binomial" and sizes:
            coupling = max(sizes) * (sum(sizes) - max(sizes))
        return dense_estimate(sizes, self.n_fixed, engine, distinct, coupling)

    def with_memory_limit(self, max_memory) -> "ModelFrame":
        """The same frame under another memory limit (what it computed so far is kept)."""
        if max_memory is None or max_memory == self.max_memory:
            return self
        other = replace(self, max_memory=parse_memory(max_memory))
        other._computed.update(self._computed)
        return other

    def require_rows(self, purpose: str) -> "RowFrame":
        """This frame as rows in memory, for ``purpose``: refused for a frame of grouped sums."""
        if not isinstance(self, RowFrame):
            raise BayesreproError(
                f"{purpose} needs the rows in memory, but this model was built from grouped sums; use --engine memory"
            )
        return self

    def _require_intercepts(self, purpose: str) -> None:
        """Grouped statistics hold random intercepts only: refuse slopes rather than drop them silently."""
        if self.spec.has_slopes:
            slopes = next(term.text for term in self.spec.random_terms if not term.intercept_only)
            raise BayesreproError(f"random slope '{slopes}': {purpose} supports random intercepts only; random slopes "
                                  "are fitted by vca and glrt (REML/ML, or Laplace for 0/1 scores) and by phi")

    @property
    def formula(self) -> str:
        return self.spec.formula

    @property
    def response(self) -> str:
        return self.spec.response

    @property
    def group_names(self) -> list[str]:
        return [g.name for g in self.groups]

    @property
    def n_obs(self) -> int:
        return self.sums.n_obs

    @property
    def n_fixed(self) -> int:
        return len(self.fixed_names)


@dataclass(frozen=True, kw_only=True)
class RowFrame(ModelFrame):
    """A model frame built from rows in memory: the rows, their fixed design, and each row's cell and levels
    (``GroupingFactor.codes``)."""

    has_rows: ClassVar[bool] = True
    y: np.ndarray
    X: np.ndarray
    data: pd.DataFrame
    cell_codes: np.ndarray               # cell of every row
    trials: np.ndarray | None = None     # the trials of p(successes, trials); y holds the successes

    def is_binary(self) -> bool:
        """Is every score 0 or 1?"""
        return bool(np.all((self.y == 0) | (self.y == 1)))

    def with_response(self, y: np.ndarray) -> "RowFrame":
        """The same design with another response (resampling): nothing of the design is recomputed."""
        return replace(self, y=y, sums=_row_sums(y, self.cell_codes, len(self.cells), self.groups))

    def sibling(self, formula) -> "RowFrame":
        """The frame of another formula on the same rows (the null model of a test, say)."""
        return build_model_frame(formula, self.data).with_memory_limit(self.max_memory)

    def _binomial_cells(self):
        return binomial_cells(self)


@dataclass(frozen=True, kw_only=True)
class GroupedFrame(ModelFrame):
    """A model frame a producer built from grouped sums where the data live (DuckDB, Spark): no rows, and
    grouping factors without codes."""

    source: object   # the producer (``producers.grouped.GroupedSource``): it builds siblings and binomial cells
    plan: object     # what its validation pass found (``producers.grouped.SumsPlan``)

    def is_binary(self) -> bool:
        """Is every score 0 or 1? (From the producer's validation pass.)"""
        return bool(self.plan.binary)

    def sibling(self, formula) -> "GroupedFrame":
        """The frame of another formula on the same data, summed by the same producer."""
        return self.source.frame(formula).with_memory_limit(self.max_memory)

    def _binomial_cells(self):
        return self.source.binomial_cells(self)


def build_model_frame(formula: str | FormulaSpec, data: pd.DataFrame, drop_missing: bool = False) -> RowFrame:
    """Evaluate a formula on validated data."""
    spec = formula if isinstance(formula, FormulaSpec) else parse_formula(formula)
    if isinstance(data, pd.DataFrame):
        check_frame(data)
    else:
        data = read_table(data)
    require_columns(data, [spec.response], "response (left of '~')")
    require_columns(data, spec.variables[1:], f"formula term in {spec.formula!r},")
    frame, note = remove_missing(data, spec.variables, drop_missing)
    frame, notes = integers_as_labels(frame, spec.fixed_variables)
    notes = ([note] if note else []) + notes
    y = check_score(frame, spec.response)
    trials = None
    if spec.trials is not None:
        trials = binomial_trials(frame, spec, y)
    elif len(y) and y.min() == y.max():
        raise BayesreproError(
            f"score column '{spec.response}' is constant ({y[0]:g} in every row); there is no variance to analyse"
        )
    fixed = fixed_design(spec, frame)
    notes += [fixed.note] if fixed.note else []
    groups = [_grouping_factor(frame, columns) for columns in spec.group_factors]
    cell_codes, cells = fixed_cells(frame, spec.fixed_variables)
    model = RowFrame(spec=spec, fixed_names=fixed.names, fixed_term_columns=fixed.term_columns, groups=groups,
                     fixed_design=fixed.design, fixed_kept=fixed.kept, cells=cells, notes=notes, y=y, X=fixed.X,
                     X_cells=fixed.X[np.unique(cell_codes, return_index=True)[1]], data=frame, cell_codes=cell_codes,
                     sums=_row_sums(y, cell_codes, len(cells), groups), trials=trials)
    if trials is None:
        require_estimable(model)
    else:  # counts of several trials: a level per row is identified, the Gaussian checks do not apply
        require_levels(model)
    model.notes.extend(confounded_pairs(groups, model.sums))
    return model


def _row_sums(y: np.ndarray, cell_codes: np.ndarray, n_cells: int, groups: list[GroupingFactor]) -> GroupedSums:
    return sums_from_rows(y, cell_codes, n_cells, [g.codes for g in groups], [g.n_levels for g in groups])


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


def _grouping_factor(frame: pd.DataFrame, columns: tuple[str, ...]) -> GroupingFactor:
    name = ":".join(columns)
    if len(columns) == 1:
        factor = as_factor(frame, columns[0])
        return GroupingFactor(name, columns, factor.codes.astype(np.int64), pd.Index(factor.categories.astype(str)))
    parts = [as_factor(frame, column) for column in columns]
    combined = pd.MultiIndex.from_arrays([p.codes for p in parts])
    codes, uniques = pd.factorize(combined, sort=True)
    labels = [":".join(str(p.categories[c]) for p, c in zip(parts, combo)) for combo in uniques]
    return GroupingFactor(name, columns, codes.astype(np.int64), pd.Index(labels))


def _text_as_category(values: pd.Series) -> pd.Series:
    """Text columns become categories for formulae; categories keep their level order."""
    if is_categorical(values) and not isinstance(values.dtype, pd.CategoricalDtype):
        return values.astype(str).astype("category")
    return values
