"""Model frames from a SQL engine: the grouped sums computed where the data live, never rows in Python.

One validation pass counts rows, missing values and non-numeric or
non-finite scores and decides which fixed variables are numbers; one
grouping pass then returns n, Σy and Σ(y − ȳ)² per fixed cell, per (level,
cell) of each grouping factor and n per pair of levels (Spark: ``GROUP BY
GROUPING SETS``; DuckDB: a ``GROUP BY`` per set, all fed by one scan). The
result is assembled into the same ``GroupedSums`` that rows in memory give, in a
``GroupedFrame``, with the same level order, so both engines see identical
statistics whatever produced them. DuckDB and Spark differ only in their
``Dialect`` and in how they run a query.

Typing follows the reader's rule for text files: grouping columns are always
text as written; a text column is a number only if every value parses and no
two distinct texts give the same number.
"""

from __future__ import annotations

import copy
import difflib
import re
from dataclasses import dataclass
from typing import Callable

import numpy as np
import pandas as pd

from ...data import EXACT_DOUBLE_INTEGERS, check_score_scale
from ...errors import BayesreproError
from ...readers import INTEGER, NUMBER
from ...where import BOOL as BOOL_KIND, NUMBER as NUMBER_KIND, OTHER as OTHER_KIND, TEXT as TEXT_KIND
from ...where import duckdb_exact_integer
from ..binomial import BinomialCells
from ..cells import COUNT
from ..checks import confounded_pairs, require_estimable
from ..formula import FormulaSpec, parse_formula
from ..fixed_and_groups import GroupingFactor, fixed_design
from ..frame import GroupedFrame
from ..sums import GroupedSums, LevelCellSums, PairCounts

# Transforms whose result depends on the whole column (formulae's stateful
# transforms): evaluated on distinct cells instead of rows they would differ.
STATEFUL = re.compile(r"\b(scale|center|standardize)\s*\(")
# The coarse grouping set is fetched when the other factors' levels multiply to at most this many groups.
COARSE_GROUPS = 2_000_000
# The grouping factors' levels are estimated from this many first rows (DuckDB reads no further).
ESTIMATE_ROWS = 2_000_000
# Names of the aggregate columns of binomial cells, distinct from any data column a formula can name.
_AGGREGATE_SUCCESSES, _AGGREGATE_TRIALS = "__successes__", "__trials__"


@dataclass(frozen=True)
class Dialect:
    """How one SQL engine spells identifiers, text, a non-finite number and a text that is a number."""

    quote: Callable[[str], str]
    text: Callable[[str], str]        # a text literal
    text_tests: dict[str, str]        # the functions of --where's startswith, endswith and contains
    text_type: str
    exact_integer_type: str           # a type holding every integral double below 1e38 exactly
    exact_integer: Callable[[str, str], str]   # a number as that type, exactly (rounded when not an integer)
    nonfinite: Callable[[str], str]
    is_number: Callable[[str], str]   # the text is a number by the readers' rule (readers.NUMBER)
    is_integer: Callable[[str], str]  # the text is an integer (readers.INTEGER)
    grouping_sets: Callable[[str, str], str]   # GROUP BY clause of the sets, given the keys and the sets
    # the engine feeds every GROUP BY of a WITH query from one scan of its rows (DuckDB from 2.0: a streaming
    # CTE), so that each grouping set can be its own GROUP BY that sums only what is used of it
    shared_scan: bool = False


def quote_double(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def quote_backtick(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"


def text_doubled(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def text_escaped(text: str) -> str:
    """Spark's text literal: Spark reads backslashes in it as escapes."""
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


DUCKDB = Dialect(quote=quote_double, text=text_doubled,
                 text_tests={"startswith": "starts_with", "endswith": "ends_with", "contains": "contains"},
                 text_type="VARCHAR", exact_integer_type="HUGEINT",
                 exact_integer=duckdb_exact_integer, nonfinite=lambda e: f"NOT isfinite({e})",
                 is_number=lambda e: f"regexp_full_match({e}, '{NUMBER.pattern}')",
                 is_integer=lambda e: f"regexp_full_match({e}, '{INTEGER.pattern}')",
                 grouping_sets=lambda keys, sets: f"GROUP BY GROUPING SETS ({sets})", shared_scan=True)


def _spark_exact_integer(expression: str, rounding: str) -> str:
    """Spark's exact integer of a number (see ``where.duckdb_exact_integer``): Spark's floor and ceil return a
    BIGINT, which overflows, and its cast to DECIMAL rounds half up, so the rounding is corrected by one."""
    text, double = f"CAST({expression} AS STRING)", f"TRY_CAST({expression} AS DOUBLE)"
    rounded = f"TRY_CAST({double} AS DECIMAL(38, 0))"
    corrected = (f"CASE WHEN CAST({rounded} AS DOUBLE) > {double} THEN {rounded} - 1 ELSE {rounded} END"
                 if rounding == "floor" else
                 f"CASE WHEN CAST({rounded} AS DOUBLE) < {double} THEN {rounded} + 1 ELSE {rounded} END")
    return (f"CASE WHEN {text} RLIKE '^(?:{INTEGER.pattern})$' THEN TRY_CAST({text} AS DECIMAL(38, 0)) "
            f"ELSE {corrected} END")


# Spark orders grouping_id()'s bits by the grouping columns, which must then be listed in the key order
SPARK = Dialect(quote=quote_backtick, text=text_escaped,
                text_tests={"startswith": "startswith", "endswith": "endswith", "contains": "contains"},
                text_type="STRING", exact_integer_type="DECIMAL(38, 0)",
                exact_integer=lambda e, rounding: _spark_exact_integer(e, rounding),
                nonfinite=lambda e: f"(isnan({e}) OR abs({e}) = double('Infinity'))",
                is_number=lambda e: f"({e} RLIKE '^(?:{NUMBER.pattern})$')",
                is_integer=lambda e: f"({e} RLIKE '^(?:{INTEGER.pattern})$')",
                grouping_sets=lambda keys, sets: f"GROUP BY {keys} GROUPING SETS ({sets})")


# The kinds of column a relation holds, as --where names them; OTHER_KIND (dates, times) is read only as a level's
# text, NESTED_KIND (lists, structs, maps) not at all
NESTED_KIND = "nested"
_NUMBER_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER",
                 "UBIGINT", "UHUGEINT", "FLOAT", "REAL", "DOUBLE", "BYTE", "SHORT", "LONG", "INT"}


def column_kind_of_sql_type(name: str) -> str:
    """The kind of a column of DuckDB's or Spark's type ``name`` (``VARCHAR``, ``decimal(10,2)``, ``boolean``)."""
    upper = name.upper()
    if upper.endswith("]") or upper.startswith(("STRUCT", "MAP", "ARRAY", "UNION", "LIST")):
        return NESTED_KIND
    if upper in ("VARCHAR", "STRING"):
        return TEXT_KIND
    if upper == "BOOLEAN":
        return BOOL_KIND
    if upper in _NUMBER_TYPES or upper.startswith("DECIMAL"):
        return NUMBER_KIND
    return OTHER_KIND


def renamed_columns(kinds: dict[str, str]) -> dict[str, str]:
    """The name by position (``v0``, ``v1``, ...) a relation gives each column of the data."""
    return {name: f"v{k}" for k, name in enumerate(kinds)}


class GroupedSource:
    """A relation in a SQL engine that builds model frames of any formula over its rows.

    ``run(sql, params)`` returns a pandas DataFrame; ``relation`` is the SQL
    text of the rows (a subquery or a view) whose columns are named as
    ``aliases`` says (the data's names by position, so that no name of the
    data can be misread by the engine); ``schema`` maps each column of the
    data to its kind (``TEXT_KIND``, ``NUMBER_KIND``, ``BOOL_KIND``, ``OTHER_KIND``); ``where`` is the parsed
    ``--where`` condition (or None), rendered in the engine's SQL once the
    kinds of its columns are known; ``text_columns`` are read as text whatever
    they hold (``--categorical``); ``label`` names the data in messages; ``run_sums`` runs the query of the grouped
    sums, if not ``run``.
    """

    def __init__(self, run, relation: str, schema: dict[str, str], dialect: Dialect, label: str,
                 where=None, drop_missing: bool = False, params=None, text_columns=(), aliases=None, run_sums=None):
        self.run, self.relation, self.schema, self.dialect = run, relation, schema, dialect
        self.run_sums = run_sums or run
        self.aliases = aliases if aliases is not None else renamed_columns(schema)
        self.label, self.where, self.drop_missing, self.params = label, where, drop_missing, params
        self.text_columns = set(text_columns)
        unknown = sorted(self.text_columns - set(schema))
        if unknown:
            close = difflib.get_close_matches(unknown[0], list(schema), n=1)
            hint = f"; did you mean '{close[0]}'?" if close else ""
            raise BayesreproError(f"categorical column '{unknown[0]}' is not a column of {label}{hint}")
        self._row_filter: str | None = None
        self._kept: list[str] = []   # conditions of ``restricted`` parts

    @property
    def row_filter(self) -> str | None:
        """The ``--where`` condition in this engine's SQL (its columns' kinds found by one pass)."""
        if self.where is None or self._row_filter is not None:
            return self._row_filter
        kinds = dict(self.schema) | {name: TEXT_KIND for name in self.text_columns}
        for name, numeric in self._numeric_text(
                [c for c in self.where.columns if self.schema.get(c) == TEXT_KIND and c not in self.text_columns]).items():
            kinds[name] = NUMBER_KIND if numeric else TEXT_KIND
        self._row_filter = self.where.to_sql(self.ref, kinds, self.dialect.text, self.dialect.text_tests,
                                             self.dialect.exact_integer)
        return self._row_filter

    def ref(self, name: str) -> str:
        """The column ``name`` of the data in this engine's SQL."""
        return self.dialect.quote(self.aliases[name])

    def as_text(self, name: str) -> str:
        """The column as the text of its levels, as the memory engine writes them (``levels.level_labels``)."""
        column, kind, d = self.ref(name), self.schema[name], self.dialect
        if kind == BOOL_KIND:
            return f"CASE WHEN {column} THEN 'True' WHEN NOT {column} THEN 'False' END"
        if kind == NUMBER_KIND:
            return (f"CASE WHEN {column} % 1 = 0 AND abs({column}) < 1e38 "
                    f"THEN CAST(CAST({column} AS {d.exact_integer_type}) AS {d.text_type}) "
                    f"ELSE CAST(CAST({column} AS DOUBLE) AS {d.text_type}) END")
        return f"CAST({column} AS {d.text_type})"

    def as_number(self, name: str) -> str:
        """The column as a double: text by the readers' grammar (others are missing), numbers and booleans as such."""
        column = self.ref(name)
        return f"TRY_CAST({column} AS DOUBLE)" if self.schema[name] == TEXT_KIND else f"CAST({column} AS DOUBLE)"

    def _numeric_text(self, columns: list[str]) -> dict[str, bool]:
        """Which text columns are numbers by the readers' rule: every value parses, no two texts give one number."""
        if not columns:
            return {}
        parts = []
        for k, c in enumerate(columns):
            parts += self._numeric_counts(c, k)
        counts = self.run(f"SELECT {', '.join(parts)} FROM {self.relation}", self.params).iloc[0]
        return {c: _is_numeric(counts, k) for k, c in enumerate(columns)}

    def _numeric_counts(self, column: str, k: int) -> list[str]:
        """Counts telling whether a text column is numbers by the readers' rule (see ``_is_numeric``)."""
        c, d = self.ref(column), self.dialect
        return [f"COUNT(*) FILTER (WHERE {c} IS NOT NULL AND NOT {d.is_number(c)}) AS nonnum_{k}",
                f"COUNT(*) FILTER (WHERE {c} IS NOT NULL AND NOT ({d.is_integer(c)} AND TRY_CAST({c} AS BIGINT) "
                f"IS NOT NULL)) AS nonint_{k}",
                f"COUNT(DISTINCT {c}) AS texts_{k}", f"COUNT(DISTINCT TRY_CAST({c} AS DOUBLE)) AS numbers_{k}",
                f"COUNT(DISTINCT TRY_CAST({c} AS BIGINT)) AS integers_{k}"]

    def _inexact_integers(self, column: str, k: int) -> list[str]:
        """How many values of a column are integers beyond 2**53 that a double does not hold exactly, and one."""
        c, exact = self.ref(column), self.dialect.exact_integer_type
        if self.schema[column] == TEXT_KIND:
            integer = f"(CASE WHEN {self.dialect.is_integer(c)} THEN TRY_CAST({c} AS {exact}) END)"
        else:
            integer = f"(CASE WHEN {c} % 1 = 0 AND abs({c}) < 1e38 THEN CAST({c} AS {exact}) END)"
        inexact = (f"abs({integer}) > {EXACT_DOUBLE_INTEGERS} "
                   f"AND CAST(CAST({integer} AS DOUBLE) AS {exact}) <> {integer}")
        return [f"COUNT(*) FILTER (WHERE {inexact}) AS inexact_{k}",
                f"CAST(MIN({integer}) FILTER (WHERE {inexact}) AS {self.dialect.text_type}) AS inexact_example_{k}"]

    def frame(self, formula: str | FormulaSpec) -> GroupedFrame:
        spec = formula if isinstance(formula, FormulaSpec) else parse_formula(formula)
        self._check_formula(spec)
        if spec.trials is not None:
            raise BayesreproError(
                f"the binomial response {spec.response_term} is summed from rows in memory; use --engine memory, or "
                "give one 0/1 score per row"
            )
        plan, notes = self._validate(spec)
        return self._assemble(plan, self._grouped(plan), notes)

    def binomial_cells(self, frame: GroupedFrame) -> BinomialCells:
        """Successes and trials of every cell (fixed cell × one level of each factor) of 0/1 scores."""
        plan = frame.plan
        spec = plan.spec
        names = list(dict.fromkeys([*spec.fixed_variables, *plan.grouping]))
        columns = [f"{self.as_number(spec.response)} AS y"]
        columns += [f"{self.as_number(v) if plan.numeric.get(v) else self.as_text(v)} AS k{i}" for i, v in enumerate(names)]
        keys = ", ".join(f"k{i}" for i in range(len(names)))
        group = f" GROUP BY {keys}" if keys else ""
        table = self.run(f"SELECT {keys + ', ' if keys else ''}SUM(y) AS successes, COUNT(*) AS trials "
                         f"FROM (SELECT {', '.join(columns)} FROM {self._rows(plan.conditions)}) AS t{group}",
                         self.params)
        table = table.set_axis([*names, _AGGREGATE_SUCCESSES, _AGGREGATE_TRIALS], axis=1)
        return BinomialCells.from_aggregates(spec, table, successes=_AGGREGATE_SUCCESSES, trials=_AGGREGATE_TRIALS,
                                             n_rows=frame.n_obs)

    # --- checks -------------------------------------------------------------------------------

    def _check_formula(self, spec: FormulaSpec) -> None:
        stateful = [term for term in spec.fixed_terms if STATEFUL.search(term)]
        if stateful:
            raise BayesreproError(
                f"term '{stateful[0]}' of {spec.formula!r} is computed over the whole column, which needs the rows in "
                "memory; standardise the column in the data first or use --engine memory"
            )
        for role, columns in (("response (left of '~')", [spec.response]),
                              (f"formula term in {spec.formula!r},", spec.variables[1:])):
            for column in columns:
                if column not in self.schema:
                    close = difflib.get_close_matches(column, list(self.schema), n=1)
                    hint = f"; did you mean '{close[0]}'?" if close else ""
                    raise BayesreproError(
                        f"{role} '{column}' is not a column of {self.label}{hint} (columns: {', '.join(self.schema)})"
                    )
                if self.schema[column] == NESTED_KIND:
                    raise BayesreproError(f"column '{column}' holds lists or objects; a level is one number, text or "
                                          "true/false value per row")

    def _validate(self, spec: FormulaSpec):
        """One pass: rows, missing values per column, the response's validity and each fixed variable's type."""
        d = self.dialect
        y, y_number = self.ref(spec.response), self.as_number(spec.response)
        parts = ["COUNT(*) AS rows_"]
        parts += [f"COUNT(*) - COUNT({self.ref(c)}) AS null_{k}" for k, c in enumerate(spec.variables)]
        parts += [f"COUNT(*) FILTER (WHERE {y} IS NOT NULL AND {y_number} IS NULL) AS bad_y",
                  f"MIN({y}) FILTER (WHERE {y} IS NOT NULL AND {y_number} IS NULL) AS bad_y_example",
                  f"COUNT(*) FILTER (WHERE {d.nonfinite(y_number)}) AS nonfinite_y",
                  f"MIN({y_number}) AS y_min", f"MAX({y_number}) AS y_max", f"AVG({y_number}) AS y_mean",
                  f"COUNT(*) FILTER (WHERE {y_number} <> 0 AND {y_number} <> 1) AS nonbinary"]
        text_fixed = [v for v in spec.fixed_variables if self.schema[v] == TEXT_KIND and v not in self.text_columns]
        for k, v in enumerate(text_fixed):
            parts += self._numeric_counts(v, k)
        number_fixed = [v for v in dict.fromkeys(spec.fixed_variables)
                        if self.schema[v] in (NUMBER_KIND, TEXT_KIND) and v not in self.text_columns]
        for k, v in enumerate(number_fixed):
            parts += self._inexact_integers(v, k)
        counts = self.run(f"SELECT {', '.join(parts)} FROM {self._rows(None)}", self.params).iloc[0]
        n = int(counts["rows_"])
        if n == 0:
            raise BayesreproError(f"{self._rows_label()} has no rows")
        missing = {c: int(counts[f"null_{k}"]) for k, c in enumerate(spec.variables) if int(counts[f"null_{k}"])}
        conditions, notes = [], []
        if missing:
            detail = ", ".join(f"'{c}' ({k})" for c, k in missing.items())
            if not self.drop_missing:
                raise BayesreproError(f"missing values in {detail}; remove those rows or pass --drop-missing")
            conditions = [f"{self.ref(c)} IS NOT NULL" for c in missing]
            notes.append(f"dropped rows with missing values in {detail} (of {n} rows)")
        if int(counts["bad_y"]):
            raise BayesreproError(
                f"score column '{spec.response}' is not numeric: it holds {counts['bad_y_example']!r}; "
                "convert it to numbers or choose another column"
            )
        if int(counts["nonfinite_y"]):
            raise BayesreproError(
                f"score column '{spec.response}' has {int(counts['nonfinite_y'])} infinite or NaN value(s); remove them"
            )
        check_score_scale(spec.response, max(abs(float(counts["y_min"])), abs(float(counts["y_max"]))),
                          float(counts["y_max"]) - float(counts["y_min"]))
        if counts["y_min"] == counts["y_max"]:
            raise BayesreproError(
                f"score column '{spec.response}' is constant ({counts['y_min']:g} in every row); "
                "there is no variance to analyse"
            )
        numeric = {v: self.schema[v] in (NUMBER_KIND, BOOL_KIND) and v not in self.text_columns
                   for v in spec.fixed_variables}
        for k, v in enumerate(text_fixed):
            numeric[v] = _is_numeric(counts, k)
        for k, v in enumerate(number_fixed):
            if numeric[v] and int(counts[f"inexact_{k}"]):
                # as the memory engine reads such a column (``data.integers_as_labels``)
                numeric[v] = False
                notes.append(f"column '{v}' holds integers a double cannot hold exactly ({counts[f'inexact_example_{k}']}, "
                             "beyond 2^53): it is read as labels (a factor), not as numbers; divide or recode them to "
                             "use it as a covariate")
        plan = SumsPlan(spec, numeric, conditions, float(counts["y_mean"]), self._level_estimates(spec),
                        binary=int(counts["nonbinary"]) == 0)
        return plan, notes

    def _level_estimates(self, spec: FormulaSpec) -> list[int]:
        """Approximate levels of each grouping factor among the first ``ESTIMATE_ROWS`` rows (all of a smaller file).

        They only choose the coarse grouping set (``SumsPlan.coarse_set``), which changes which sums the engine
        adds and which Python adds, never their values; hashing every row of every factor took two thirds of
        the validation pass on large files. Rows ordered so that the first ones hide a factor's levels (sorted by
        that factor) can only make the choice a slower one (a coarse set of more groups, never more than there
        are rows); the sums are the same.
        """
        if len(spec.group_factors) < 2:   # no coarse set to choose
            return [0] * len(spec.group_factors)
        keys = [self.ref(columns[0]) if len(columns) == 1 else f"CONCAT_WS(':', {', '.join(self.as_text(c) for c in columns)})"
                for columns in spec.group_factors]
        counts = self.run(f"SELECT {', '.join(f'APPROX_COUNT_DISTINCT(k{k}) AS levels_{k}' for k in range(len(keys)))} "
                          f"FROM (SELECT {', '.join(f'{key} AS k{k}' for k, key in enumerate(keys))} "
                          f"FROM {self._rows(None)} LIMIT {ESTIMATE_ROWS}) AS first_rows", self.params).iloc[0]
        return [int(counts[f"levels_{k}"]) for k in range(len(keys))]

    # --- the grouped sums -----------------------------------------------------------------------

    def _grouped(self, plan: "SumsPlan") -> dict[frozenset, pd.DataFrame]:
        """n, Σy and Σ(y − ȳ)² of every grouping set the statistics need, from one pass over the rows.

        The sets that do not involve the factor with most levels are derived
        in Python from one coarse set (every other grouping column and the
        fixed variables), whose groups are few on evaluation grids; only the
        dominant factor's sets are left to the engine, and of those, a set
        within another that has few groups is derived from it too (without
        fixed variables, the dominant factor's own set from one of its pairs).
        Where the coarse set would be large, the engine computes every set itself.
        """
        d = self.dialect
        spec = plan.spec
        columns = [f"{self.as_number(spec.response)} AS y"]
        for k, v in enumerate(spec.fixed_variables):
            columns.append(f"{self.as_number(v) if plan.numeric[v] else self.as_text(v)} AS f{k}")
        columns += [f"{self.as_text(c)} AS c{k}" for k, c in enumerate(plan.grouping)]
        queried, derived = plan.queried_sets()
        keys = plan.keys
        shifted = f"(y - ({plan.shift!r}))"
        sums = f"COUNT(*) AS n, SUM(y) AS total, SUM({shifted} * {shifted}) AS squares"
        rows = f"(SELECT {', '.join(columns)} FROM {self._rows(plan.conditions)})"
        if keys and d.shared_scan:
            summed = plan.summed_sets(queried, derived)
            parts = []
            for s in queried:
                grouped = [keys[i] for i in sorted(s)]
                select = ", ".join(key if key in grouped else f"NULL AS {key}" for key in keys)
                aggregates = sums if s in summed else "COUNT(*) AS n, NULL AS total, NULL AS squares"
                group = f" GROUP BY {', '.join(grouped)}" if grouped else ""
                parts.append(f"SELECT {_set_id(s, len(keys))} AS set_id, {select}, {aggregates} FROM key_rows{group}")
            result = self.run_sums(f"WITH key_rows AS {rows} " + " UNION ALL ".join(parts), self.params)
        elif keys:
            sets = ", ".join("(" + ", ".join(keys[i] for i in sorted(s)) + ")" for s in queried)
            result = self.run_sums(f"SELECT GROUPING_ID({', '.join(keys)}) AS set_id, {', '.join(keys)}, {sums} "
                                   f"FROM {rows} AS t {d.grouping_sets(', '.join(keys), sets)}", self.params)
        else:
            result = self.run_sums(f"SELECT {sums} FROM {rows} AS t", self.params)
        result["m2"] = np.maximum(result["squares"] - (result["total"] - result["n"] * plan.shift) ** 2 / result["n"], 0.0)
        by_set = {s: result[result["set_id"] == _set_id(s, len(keys))] if keys else result for s in queried}
        for s, finer in derived.items():
            by_set[s] = _regroup(by_set[finer], [keys[i] for i in sorted(s)], plan.shift)
        return by_set

    def restricted(self, column: str, text: str) -> "GroupedSource":
        """The same rows, only those whose ``column`` reads ``text``."""
        part = copy.copy(self)
        part._kept = self._kept + [f"{self.as_text(column)} = {self.dialect.text(text)}"]
        return part

    def texts_of(self, column: str) -> tuple[list[str], int]:
        """The distinct values of ``column`` as text, sorted, and how many rows miss it."""
        text = self.as_text(column)
        table = self.run(f"SELECT {text} AS text, COUNT(*) AS n FROM {self._rows(None)} GROUP BY {text}", self.params)
        missing = table["text"].isna()
        return sorted(table.loc[~missing, "text"].astype(str)), int(table.loc[missing, "n"].sum())

    def _rows(self, conditions) -> str:
        filters = ([f"({self.row_filter})"] if self.row_filter else []) + self._kept + list(conditions or [])
        # the alias keeps Spark from reading "WHERE (`flag`)" as an alias of the relation and of its columns
        return f"{self.relation} AS data_rows" + (f" WHERE {' AND '.join(filters)}" if filters else "")

    def _rows_label(self) -> str:
        return f"{self.label} after --where" if self.row_filter else self.label

    # --- assembling the frame --------------------------------------------------------------------

    def _assemble(self, plan: "SumsPlan", by_set: dict[frozenset, pd.DataFrame], notes: list[str]) -> GroupedFrame:
        spec, numeric = plan.spec, plan.numeric
        fixed = [f"f{k}" for k in range(len(spec.fixed_variables))]
        key_of = {c: f"c{k}" for k, c in enumerate(plan.grouping)}
        positions = {name: i for i, name in enumerate(plan.keys)}

        cell_rows = by_set[frozenset(positions[f] for f in fixed)]
        cells = _typed_cells(cell_rows, spec, numeric)
        order = cells.sort_values(list(spec.fixed_variables)).index if fixed else cells.index
        cell_rows, cells = cell_rows.iloc[order], cells.loc[order].reset_index(drop=True)
        cell_index = pd.MultiIndex.from_frame(cell_rows[fixed]) if fixed else None
        n_obs = int(cell_rows["n"].sum())

        levels, factors = [], []
        for columns in spec.group_factors:
            member = [key_of[c] for c in columns]
            rows = by_set[frozenset(positions[k] for k in member + fixed)]
            labels, codes, level_keys = _levels(rows[member])
            cell = cell_index.get_indexer(pd.MultiIndex.from_frame(rows[fixed])) if fixed else np.zeros(len(rows), int)
            levels.append((member, labels, level_keys))
            factors.append(LevelCellSums(codes, cell.astype(np.int64), rows["n"].to_numpy(float),
                                         rows["total"].to_numpy(float)))
        pairs = {}
        for i in range(len(levels)):
            for j in range(i + 1, len(levels)):
                (mi, _, li), (mj, _, lj) = levels[i], levels[j]
                rows = by_set[frozenset(positions[k] for k in set(mi) | set(mj))]
                pairs[(i, j)] = PairCounts(_codes_of(rows[mi], li), _codes_of(rows[mj], lj), rows["n"].to_numpy(float))
        sums = GroupedSums(n_obs, cell_rows["n"].to_numpy(float), cell_rows["total"].to_numpy(float),
                           np.nan_to_num(cell_rows["m2"].to_numpy(float)), tuple(len(labels) for _, labels, _ in levels),
                           tuple(factors), pairs)
        groups = [GroupingFactor(":".join(columns), columns, None, pd.Index(labels))
                  for columns, (_, labels, _) in zip(spec.group_factors, levels)]
        notes = notes + confounded_pairs(groups, sums)
        fixed = fixed_design(spec, cells.drop(columns=COUNT))
        frame = GroupedFrame(spec=spec, fixed_names=fixed.names, fixed_term_columns=fixed.term_columns, groups=groups,
                             fixed_design=fixed.design, fixed_kept=fixed.kept, cells=cells, X_cells=fixed.X,
                             notes=notes + ([fixed.note] if fixed.note else []), sums=sums, source=self,
                             plan=plan)
        require_estimable(frame)
        return frame


@dataclass(frozen=True)
class SumsPlan:
    """What the grouped sums of one formula need: the validated types, filters and the response's shift."""

    spec: FormulaSpec
    numeric: dict[str, bool]
    conditions: list[str]
    shift: float                 # the response's mean: squares are summed around it, for accuracy
    level_estimates: list[int]   # approximate levels of each grouping factor
    binary: bool = False         # every score is 0 or 1

    @property
    def grouping(self) -> list[str]:
        return list(dict.fromkeys(c for columns in self.spec.group_factors for c in columns))

    @property
    def keys(self) -> list[str]:
        return [f"f{k}" for k in range(len(self.spec.fixed_variables))] + [f"c{k}" for k in range(len(self.grouping))]

    def member(self, factor: int) -> set[int]:
        p = len(self.spec.fixed_variables)
        return {p + self.grouping.index(c) for c in self.spec.group_factors[factor]}

    def sets(self) -> list[frozenset[int]]:
        """Key positions of each set: the fixed cells, each factor within cells, each pair of factors."""
        fixed = set(range(len(self.spec.fixed_variables)))
        member = [self.member(k) for k in range(len(self.spec.group_factors))]
        sets = [frozenset(fixed)] + [frozenset(m | fixed) for m in member]
        sets += [frozenset(member[i] | member[j]) for i in range(len(member)) for j in range(i + 1, len(member))]
        return list(dict.fromkeys(sets))

    def coarse_set(self) -> frozenset[int] | None:
        """Every key but the dominant factor's own columns, when its groups are few enough to fetch."""
        if len(self.spec.group_factors) < 2:
            return None
        dominant = int(np.argmax(self.level_estimates))
        others = set(range(len(self.spec.fixed_variables)))
        for k in range(len(self.spec.group_factors)):
            if k != dominant:
                others |= self.member(k)
        bound = np.prod([float(e) for k, e in enumerate(self.level_estimates) if k != dominant])
        return frozenset(others) if bound <= COARSE_GROUPS else None

    def queried_sets(self) -> tuple[list[frozenset[int]], dict[frozenset[int], frozenset[int]]]:
        """The sets the engine sums, and each other needed set with the queried set Python sums it from.

        Every set within the coarse set comes from it; a set within another queried set whose groups are
        estimated at most ``COARSE_GROUPS`` comes from the one of fewest groups (each costs the engine a pass of
        hashing over every row, and Python a pass over that set's groups).
        """
        needed = self.sets()
        coarse = self.coarse_set()
        if coarse is None:
            return needed, {}
        queried = [coarse] + [s for s in needed if not s <= coarse]
        derived = {s: coarse for s in needed if s not in queried}
        for s in sorted(queried[1:], key=len, reverse=True):   # a set is derived only from one the engine sums
            finer = [(self._estimated_groups(t), sorted(t)) for t in queried if t > s and t not in derived]
            groups, positions = min(((g, p) for g, p in finer if g is not None), default=(None, None))
            if groups is not None and groups <= COARSE_GROUPS:
                derived[s] = frozenset(positions)
        return [s for s in queried if s not in derived], derived

    def summed_sets(self, queried, derived) -> set[frozenset[int]]:
        """The queried sets whose sums are used (the fixed cells and each factor within them, or a set one of these
        is derived from); of the others (pairs of factors) only the counts are."""
        fixed = frozenset(range(len(self.spec.fixed_variables)))
        used = {fixed} | {frozenset(self.member(k) | fixed) for k in range(len(self.spec.group_factors))}
        return {derived.get(s, s) for s in used} & set(queried)

    def _estimated_groups(self, positions: frozenset[int]) -> float | None:
        """At most how many groups a set of grouping columns has, by the factors' estimates; None with fixed keys."""
        within = [k for k in range(len(self.spec.group_factors)) if self.member(k) <= positions]
        if set().union(*(self.member(k) for k in within)) != positions:
            return None
        return float(np.prod([float(self.level_estimates[k]) for k in within]))


def _is_numeric(counts, k: int) -> bool:
    """Every value of text column k is a number and no two of its texts give the same number: the same int64
    when every text is one (``readers.typed_column``), else the same double."""
    distinct = counts[f"integers_{k}"] if int(counts[f"nonint_{k}"]) == 0 else counts[f"numbers_{k}"]
    return int(counts[f"nonnum_{k}"]) == 0 and int(counts[f"texts_{k}"]) == int(distinct)


def _regroup(coarse: pd.DataFrame, keys: list[str], shift: float) -> pd.DataFrame:
    """A coarser grouping set from a finer one: counts and sums add, squares about the shift add."""
    if keys:
        grouped = coarse.groupby(keys, sort=False, observed=True, dropna=False)[["n", "total", "squares"]].sum()
        grouped = grouped.reset_index()
    else:
        grouped = coarse[["n", "total", "squares"]].sum().to_frame().T
    grouped["m2"] = np.maximum(grouped["squares"] - (grouped["total"] - grouped["n"] * shift) ** 2 / grouped["n"], 0.0)
    return grouped


def _set_id(positions: frozenset[int], n_keys: int) -> int:
    """GROUPING_ID of a set: bit (n_keys − 1 − k) is 1 when key k is not grouped."""
    return sum(1 << (n_keys - 1 - k) for k in range(n_keys) if k not in positions)


def _typed_cells(rows: pd.DataFrame, spec: FormulaSpec, numeric: dict[str, bool]) -> pd.DataFrame:
    cells = pd.DataFrame(index=pd.RangeIndex(len(rows)))
    for k, v in enumerate(spec.fixed_variables):
        values = rows[f"f{k}"].to_numpy()
        cells[v] = values.astype(float) if numeric[v] else pd.Categorical(
            values.astype(str), categories=sorted(set(values.astype(str))))
    cells[COUNT] = rows["n"].to_numpy(np.int64)
    return cells


def _levels(columns: pd.DataFrame) -> tuple[list[str], np.ndarray, pd.MultiIndex]:
    """Level labels (in the order the memory engine gives them), each row's level code and the levels as text tuples."""
    text = columns.astype(str)
    if text.empty:   # no rows left (a filter kept none): pandas before 3.0 cannot factorize an empty MultiIndex
        return [], np.zeros(0, dtype=np.int64), pd.MultiIndex.from_frame(text)
    ranks = [np.searchsorted(np.array(sorted(set(text[name])), dtype=object), text[name].to_numpy(dtype=object))
             for name in text.columns]
    codes, _ = pd.factorize(pd.MultiIndex.from_arrays(ranks), sort=True)
    first = pd.Series(np.arange(len(codes))).groupby(codes).first().to_numpy()
    keys = pd.MultiIndex.from_frame(text.iloc[first].reset_index(drop=True))
    return [":".join(key) for key in keys], codes.astype(np.int64), keys


def _codes_of(columns: pd.DataFrame, keys: pd.MultiIndex) -> np.ndarray:
    return keys.get_indexer(pd.MultiIndex.from_frame(columns.astype(str))).astype(np.int64)
