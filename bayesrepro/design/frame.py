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

from ..data import check_score, integers_as_labels, read_table, remove_missing, require_columns
from ..errors import BayesreproError
from ..frame_types import check_frame
from .binomial import binomial_cells, binomial_trials
from .cells import fixed_cells
from .checks import confounded_pairs, require_estimable, require_levels
from .fixed_and_groups import GroupingFactor, fixed_design, grouping_factor
from .formula import FormulaSpec, parse_formula
from .gaussian import fixed_stats, stats_from_sums
from .memory_estimate import DenseEstimate, dense_estimate, parse_memory, require_within
from .sums import GroupedSums, sums_from_rows


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
    groups = [grouping_factor(frame, columns) for columns in spec.group_factors]
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
