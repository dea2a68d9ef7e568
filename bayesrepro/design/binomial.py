"""Binomial cell counts: the sufficient statistics of a binomial random-intercept model.

For 0/1 scores (or Bambi's ``p(successes, trials)``) with random intercepts,
the likelihood depends on the data only through the successes and trials of
each distinct *cell*: a combination of a fixed-design row and one level of
every grouping factor. Rows that share a cell collapse into one binomial
count, so the engines' cost follows the cells, not the rows (5 seeds of a
system scored on one item with one prompt are one cell of 5 trials when the
seeds are not a grouping factor).

``BinomialCells`` is built from rows in memory (``binomial_cells(frame)``) or
from a table of grouped aggregates such as a database ``GROUP BY`` returns
(``BinomialCells.from_aggregates``), so producers that never load rows build
the same object.

Collapsing rows changes the binomial coefficients (k Bernoulli rows are not
one binomial count with coefficient C(k, y)), so the cells carry the sum of
the coefficients of the rows as observed: log-likelihoods of models that
collapse the same rows differently stay comparable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..data import check_score, require_columns, row_reference
from ..errors import BayesreproError
from ..links import log_binomial_coefficient
from .cells import COUNT, fixed_cells
from .fixed_and_groups import GroupingFactor, fixed_design, grouping_factor
from .formula import FormulaSpec, parse_formula
from .sums import GroupedSums, LevelCellSums, PairCounts

# Transforms whose value depends on the whole column: on a table of cells they would differ from rows.
STATEFUL = re.compile(r"\b(scale|center|standardize)\s*\(")


@dataclass(frozen=True)
class BinomialCells:
    """Successes and trials per distinct cell (fixed-design row × one level of every grouping factor)."""

    formula: str
    successes: np.ndarray            # (C,)
    trials: np.ndarray               # (C,)
    fixed_cell: np.ndarray           # (C,) row of X_fixed that each cell has
    X_fixed: np.ndarray              # (F, p) the distinct fixed-design rows
    fixed_names: tuple[str, ...]
    group_names: tuple[str, ...]     # formula order
    codes: tuple[np.ndarray, ...]    # (C,) level of each cell, one array per grouping factor, formula order
    levels: tuple[pd.Index, ...]     # level labels of each grouping factor
    n_rows: int                      # observations the cells summarise
    log_coefficient: float = 0.0     # Σ log C(trials, successes) over the rows as observed (0 for 0/1 scores)

    @property
    def X(self) -> np.ndarray:
        """The fixed-design row of every cell, (C, p)."""
        return self.X_fixed[self.fixed_cell]

    @property
    def n_cells(self) -> int:
        return len(self.successes)

    @property
    def n_fixed(self) -> int:
        return self.X_fixed.shape[1]

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(levels) for levels in self.levels)

    @property
    def n_levels(self) -> dict[str, int]:
        return dict(zip(self.group_names, self.sizes))

    @property
    def total_trials(self) -> float:
        return float(self.trials.sum())

    def grouped_sums(self) -> GroupedSums:
        """The Gaussian grouped sums of the same data, every trial a 0/1 row (a linear probability model)."""
        F = len(self.X_fixed)
        cell_n = np.bincount(self.fixed_cell, weights=self.trials, minlength=F)
        cell_total = np.bincount(self.fixed_cell, weights=self.successes, minlength=F)
        cell_m2 = np.maximum(cell_total - cell_total**2 / np.maximum(cell_n, 1.0), 0.0)  # Σy² = Σy for 0/1 rows
        factors = []
        for codes, size in zip(self.codes, self.sizes):
            keys, (n, total) = _weighted_key_sums(codes * F + self.fixed_cell, self.trials, self.successes)
            level, cell = np.divmod(keys, F)
            factors.append(LevelCellSums(level, cell, n, total))
        pairs = {}
        for i in range(len(self.sizes)):
            for j in range(i + 1, len(self.sizes)):
                keys, (n,) = _weighted_key_sums(self.codes[i] * self.sizes[j] + self.codes[j], self.trials)
                first, second = np.divmod(keys, self.sizes[j])
                pairs[(i, j)] = PairCounts(first, second, n)
        return GroupedSums(int(self.total_trials), cell_n, cell_total, cell_m2, self.sizes, tuple(factors), pairs)

    @classmethod
    def from_aggregates(cls, formula: str | FormulaSpec, table: pd.DataFrame, successes: str = "successes",
                        trials: str = "trials", n_rows: int | None = None,
                        log_coefficient: float = 0.0) -> "BinomialCells":
        """Cells from grouped aggregates: one row per cell with its fixed variables, grouping columns,
        ``successes`` and ``trials`` (as ``SELECT …, SUM(score), COUNT(*) … GROUP BY`` every formula column).

        Rows of ``table`` that repeat a cell are added up. Level labels follow the
        rows-in-memory rule (grouping columns as text, sorted), so both routes give
        identical cells and labels. ``n_rows`` is the number of observations the
        table summarises (default: the trials, right for 0/1 scores);
        ``log_coefficient`` is Σ log C(n, y) over those observations (0 for 0/1 scores).
        """
        spec = formula if isinstance(formula, FormulaSpec) else parse_formula(formula)
        stateful = [term for term in spec.fixed_terms if STATEFUL.search(term)]
        if stateful:
            raise BayesreproError(
                f"term '{stateful[0]}' of {spec.formula!r} is computed over the whole column, which grouped "
                "aggregates cannot reproduce; standardise the column before aggregating"
            )
        grouping = list(dict.fromkeys(c for columns in spec.group_factors for c in columns))
        require_columns(table, [successes, trials, *spec.fixed_variables, *grouping], "aggregate column")
        counts = _checked_counts(table, successes, trials)
        fixed_codes, cells = fixed_cells(table, spec.fixed_variables)
        fixed = fixed_design(spec, cells.drop(columns=COUNT))
        groups: list[GroupingFactor] = [grouping_factor(table, columns) for columns in spec.group_factors]
        return _collapse(spec.formula, counts[0], counts[1], fixed_codes, fixed.X, fixed.names, groups,
                         int(n_rows) if n_rows is not None else int(counts[1].sum()), log_coefficient)


def binomial_cells(frame) -> BinomialCells:
    """The cells of a model frame built from rows in memory (0/1 scores, or ``p(successes, trials)``)."""
    frame = frame.require_rows("binomial cell counts")
    if frame.trials is None:
        if not frame.is_binary():
            raise BayesreproError(
                f"a binomial model needs 0/1 scores in '{frame.response}' or the response p(successes, trials)"
            )
        trials = np.ones(frame.n_obs)
    else:
        trials = frame.trials
    return _collapse(frame.formula, frame.y, trials, frame.cell_codes, frame.X_cells, frame.fixed_names,
                     frame.groups, frame.n_obs, float(log_binomial_coefficient(frame.y, trials).sum()))


def row_cells(frame) -> np.ndarray:
    """The cell of ``binomial_cells(frame)`` that holds each row (the cells depend on the design, not the scores)."""
    frame = frame.require_rows("the binomial cells of the rows")
    keys = _cell_keys([frame.cell_codes] + [g.codes for g in frame.groups],
                      [len(frame.X_cells)] + [g.n_levels for g in frame.groups])
    return np.unique(keys, return_inverse=True)[1]


def binomial_trials(data: pd.DataFrame, spec: FormulaSpec, successes: np.ndarray) -> np.ndarray:
    """The trials of ``p(successes, trials)``, checked: whole numbers, at least one, at least the successes."""
    if isinstance(spec.trials, str):
        trials = check_score(data, spec.trials)
    else:
        trials = np.full(len(successes), float(spec.trials))
    _check_counts(successes, trials, spec.response, spec.trials, data.index)
    return trials


def _checked_counts(table: pd.DataFrame, successes: str, trials: str) -> tuple[np.ndarray, np.ndarray]:
    s, n = check_score(table, successes), check_score(table, trials)
    _check_counts(s, n, successes, trials, table.index)
    return s, n


def _check_counts(successes, trials, successes_name, trials_name, index) -> None:
    problems = (
        (successes != np.round(successes)) | (successes < 0),
        (trials != np.round(trials)) | (trials < 1),
        successes > trials,
    )
    messages = (
        f"successes '{successes_name}' must be whole numbers of at least 0",
        f"trials '{trials_name}' must be whole numbers of at least 1",
        f"successes '{successes_name}' exceed the trials '{trials_name}'",
    )
    for bad, message in zip(problems, messages):
        if bad.any():
            row = int(np.argmax(bad))
            raise BayesreproError(f"{message} ({row_reference(index, row)}: {successes[row]:g} of {trials[row]:g}); "
                                  "fix or remove those rows")


def _collapse(formula, successes, trials, fixed_codes, X_fixed, fixed_names, groups, n_rows,
              log_coefficient) -> BinomialCells:
    """Add up rows that share a fixed cell and every grouping level."""
    keys = _cell_keys([fixed_codes] + [g.codes for g in groups], [len(X_fixed)] + [g.n_levels for g in groups])
    unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    cell_successes = np.bincount(inverse, weights=successes, minlength=len(unique))
    cell_trials = np.bincount(inverse, weights=trials, minlength=len(unique))
    total, attempts = cell_successes.sum(), cell_trials.sum()
    if total == 0 or total == attempts:
        outcome = "failures" if total == 0 else "successes"
        raise BayesreproError(
            f"every one of the {attempts:g} trials of {formula!r} is a {outcome[:-1]}: there is no variation to model"
        )
    return BinomialCells(
        formula=formula,
        successes=cell_successes,
        trials=cell_trials,
        fixed_cell=np.asarray(fixed_codes, dtype=np.int64)[first],
        X_fixed=np.asarray(X_fixed, dtype=float),
        fixed_names=tuple(fixed_names),
        group_names=tuple(g.name for g in groups),
        codes=tuple(np.asarray(g.codes, dtype=np.int64)[first] for g in groups),
        levels=tuple(g.levels for g in groups),
        n_rows=int(n_rows),
        log_coefficient=float(log_coefficient),
    )


def _weighted_key_sums(keys: np.ndarray, *weights: np.ndarray):
    """The distinct keys and the sums of each weight over them."""
    unique, inverse = np.unique(keys, return_inverse=True)
    return unique, tuple(np.bincount(inverse, weights=w, minlength=len(unique)) for w in weights)


def _cell_keys(codes: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """One int64 key per row that differs exactly where any code differs (mixed radix, refactorised before overflow)."""
    key = np.asarray(codes[0], dtype=np.int64)
    span = max(int(sizes[0]), 1)
    for values, size in zip(codes[1:], sizes[1:]):
        size = max(int(size), 1)
        if span * size >= 2**62:
            key = np.unique(key, return_inverse=True)[1].astype(np.int64)
            span = int(key.max()) + 1
        key = key * size + np.asarray(values, dtype=np.int64)
        span *= size
    return key
