"""``--where``: a small expression language that selects rows, never code.

The text is parsed by Python's ``ast`` and only a whitelist of node kinds is
turned into an expression tree; everything else (attribute access, subscripts,
``@`` references, lambdas, calls other than the named tests below) is refused
in one line. The tree is then evaluated on columns: on a pandas DataFrame
(``Where.mask``) or rendered as a SQL condition (``Where.to_sql``), with the
same meaning in both.

The language::

    mode == 'Post Edit'                      comparisons: == != < <= > >= (chains too)
    `sentence id` > 10                       backticks for names that are not identifiers
    system in ['A', 'B'] / not in (...)      membership in a list of literals
    a > 1 and b < 2 / or / not               also & | ~, with pandas' precedence
    (src_length - 5) * 2 > ter / 10          + - * / on numeric columns
    startswith(col, 'x') endswith contains   text tests (contains: a substring, not a pattern)
    isna(col) notna(col)                     missing values

Types are checked before anything is evaluated: text is compared with text,
numbers with numbers, and a boolean column may stand alone as a condition.
Missing values follow SQL: a comparison with a missing value is unknown, and
rows whose condition is unknown are not kept (``x != 'a'`` drops rows where x
is missing; add ``or isna(x)`` to keep them). Division by zero gives a
missing value. Numbers compare as exact values: an integer column with an
integer beyond 2^53 (where doubles are 2 apart) is compared without rounding
either to a double, in memory and in SQL alike. The result is one boolean per
row.
"""

from __future__ import annotations

import ast
import difflib
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Union

import numpy as np
import pandas as pd

from .errors import BayesreproError, first_line
from .levels import level_labels

MAX_LENGTH = 10_000
MAX_DEPTH = 60
NUMBER, TEXT, BOOL = "number", "text", "bool"
OTHER = "other"   # dates, times, lists, objects: no condition reads them
COMPARISONS = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
ARITHMETIC = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
TEXT_TESTS = ("startswith", "endswith", "contains")
MISSING_TESTS = ("isna", "notna")
# Integers below this magnitude are doubles exactly and no larger value rounds onto one; from it on, a comparison
# with one is made on exact integers
EXACT_DOUBLE_INTEGER = 2**53


# --- the expression tree ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Column:
    name: str


@dataclass(frozen=True)
class Literal:
    value: Union[bool, int, float, str]


@dataclass(frozen=True)
class Negate:
    operand: "Expr"


@dataclass(frozen=True)
class Arithmetic:
    op: str               # + - * /
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class Compare:
    op: str               # == != < <= > >=
    left: "Expr"
    right: "Expr"


@dataclass(frozen=True)
class IsIn:
    operand: "Expr"
    values: tuple[Literal, ...]
    negated: bool


@dataclass(frozen=True)
class TextTest:
    function: str         # startswith endswith contains
    column: Column
    text: str


@dataclass(frozen=True)
class MissingTest:
    function: str         # isna notna
    column: Column


@dataclass(frozen=True)
class And:
    parts: tuple["Expr", ...]


@dataclass(frozen=True)
class Or:
    parts: tuple["Expr", ...]


@dataclass(frozen=True)
class Not:
    operand: "Expr"


Expr = Union[Column, Literal, Negate, Arithmetic, Compare, IsIn, TextTest, MissingTest, And, Or, Not]


def children(node: Expr) -> tuple:
    """The sub-expressions of a node, for walking the tree."""
    if isinstance(node, (Negate, Not)):
        return (node.operand,)
    if isinstance(node, (Arithmetic, Compare)):
        return (node.left, node.right)
    if isinstance(node, IsIn):
        return (node.operand, *node.values)
    if isinstance(node, (TextTest, MissingTest)):
        return (node.column,)
    if isinstance(node, (And, Or)):
        return node.parts
    return ()


def columns_of(node: Expr) -> list[str]:
    """The column names an expression reads, in order of first use."""
    found = [node.name] if isinstance(node, Column) else []
    for child in children(node):
        found += [name for name in columns_of(child) if name not in found]
    return found


# --- parsing: text → tree ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Where:
    """A parsed ``--where`` condition: its text and its expression tree."""

    text: str
    tree: Expr

    @property
    def columns(self) -> list[str]:
        return columns_of(self.tree)

    def check(self, kinds: Mapping[str, str]) -> None:
        """Check names and types against the data's column kinds (``number``, ``text``, ``bool``)."""
        _Typing(self.text, kinds).condition(self.tree)

    def mask(self, frame: pd.DataFrame) -> np.ndarray:
        """One boolean per row of ``frame``: True where the condition holds (unknown counts as not holding)."""
        _require_known(self.text, self.columns, frame.columns)
        kinds = {name: column_kind(frame[name], name) for name in self.columns}
        self.check(kinds)
        value, missing = _Evaluator(frame, kinds).condition(self.tree)
        return np.asarray(value & ~missing, dtype=bool)

    def to_sql(self, quote: Callable[[str], str], kinds: Mapping[str, str],
               text: Callable[[str], str] | None = None, text_tests: Mapping[str, str] | None = None,
               exact_integer: Callable[[str, str], str] | None = None) -> str:
        """The condition as a SQL expression; ``quote`` quotes an identifier, ``text`` writes a text literal
        (default: quotes doubled, standard SQL), ``text_tests`` names the SQL functions of startswith,
        endswith and contains (default: DuckDB's), ``kinds`` as in ``check``; ``exact_integer(expr,
        rounding)`` is the number ``expr`` holds as an exact integer, rounded by ``rounding`` (floor or ceil)
        when it is not one (default: DuckDB's HUGEINT).

        A number column is read through ``TRY_CAST(... AS DOUBLE)`` so that
        numbers stored as text compare as numbers; NaN counts as missing.
        """
        _require_known(self.text, self.columns, list(kinds))
        self.check(kinds)
        return _Sql(quote, kinds, text or _text_literal, text_tests or _TEXT_TESTS,
                    exact_integer or duckdb_exact_integer).render(self.tree)


def parse_where(text: str) -> Where:
    """Parse a ``--where`` text into a checked expression tree, or fail with one line saying why."""
    if not isinstance(text, str) or not text.strip():
        raise BayesreproError("--where needs a condition, e.g. \"mode == 'Post Edit'\"")
    if len(text) > MAX_LENGTH:
        raise BayesreproError(f"--where is {len(text)} characters long; keep it under {MAX_LENGTH}")
    source, names = _replace_backticks(text)
    try:
        module = ast.parse(source.strip(), mode="eval")
    except SyntaxError as exc:
        what = "a number in it has too many digits" if "digits" in str(exc.msg) else exc.msg
        raise BayesreproError(f"--where {_shown(text)} is not a valid condition: {what}") from None
    except ValueError as exc:  # null bytes; integer literals of more than 4300 digits
        what = "a number in it has too many digits" if "digits" in str(exc) else first_line(exc)
        raise BayesreproError(f"--where {_shown(text)} cannot be read: {what}") from None
    except (MemoryError, RecursionError):
        raise BayesreproError(f"--where {_shown(text)} is nested too deeply") from None
    builder = _Builder(text, source.strip(), names)
    try:
        tree = builder.condition(module.body, 0)
    except RecursionError:
        raise BayesreproError(f"--where {_shown(text)} is nested too deeply") from None
    if not columns_of(tree):
        raise BayesreproError(f"--where {_shown(text)} does not read any column; compare a column with a value")
    return Where(text, tree)


def as_where(where) -> Where | None:
    """A Where from text (parsed), a Where (as is) or None."""
    if where is None or isinstance(where, Where):
        return where
    return parse_where(where)


def _replace_backticks(text: str) -> tuple[str, dict[str, str]]:
    """Backtick-quoted names become placeholder identifiers; string literals are skipped over, not touched."""
    prefix = "_bq"
    while prefix in text:
        prefix += "_"
    out, names, i = [], {}, 0
    while i < len(text):
        ch = text[i]
        if ch in "'\"":
            end = _end_of_string(text, i)
            out.append(text[i:end])
            i = end
        elif ch == "`":
            close = text.find("`", i + 1)
            if close < 0:
                raise BayesreproError(f"--where {_shown(text)} has an opening backtick without a closing one")
            placeholder = f"{prefix}{len(names)}"
            names[placeholder] = text[i + 1:close]
            out.append(f" {placeholder} ")
            i = close + 1
        else:
            out.append(ch)
            i += 1
    return "".join(out), names


def _end_of_string(text: str, start: int) -> int:
    quote = text[start:start + 3] if text[start:start + 3] in ("'''", '"""') else text[start]
    i = start + len(quote)
    while i < len(text):
        if text[i] == "\\":
            i += 2
        elif text.startswith(quote, i):
            return i + len(quote)
        else:
            i += 1
    return len(text)  # unterminated: ast reports it


class _Builder:
    """Python's syntax tree → the expression tree, accepting only whitelisted nodes."""

    def __init__(self, text: str, source: str, names: dict[str, str]):
        self.text, self.source, self.names = text, source, names
        self.line_starts = [0]
        for line in source.encode("utf-8").splitlines(keepends=True):
            self.line_starts.append(self.line_starts[-1] + len(line))
        self.encoded = source.encode("utf-8")

    def fail(self, what: str):
        raise BayesreproError(f"--where {_shown(self.text)}: {what}")

    # conditions: and/or/not, the pandas-style & | ~, comparisons, tests, boolean columns

    def condition(self, node: ast.AST, depth: int) -> Expr:
        if depth > MAX_DEPTH:
            self.fail("the condition is nested too deeply")
        if isinstance(node, ast.BoolOp):
            parts = tuple(self.condition(v, depth + 1) for v in node.values)
            return And(parts) if isinstance(node.op, ast.And) else Or(parts)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Invert):
            return Not(self.condition(node.operand, depth + 1))
        if self._is_bitwise(node) or isinstance(node, ast.Compare) or \
                (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            return _PandasPrecedence(self, self.flatten(node, root=True), depth).parse()
        if isinstance(node, ast.Call):
            return self.call(node)
        return self.value(node, depth)

    def _is_bitwise(self, node) -> bool:
        return isinstance(node, ast.BinOp) and isinstance(node.op, (ast.BitAnd, ast.BitOr))

    def flatten(self, node: ast.AST, root: bool = False) -> list:
        """Operands and operators of & |, ``not`` and comparisons in source order, stopping at parentheses.

        Python binds & and | tighter than comparisons (``a == 1 & b == 2`` is
        ``a == (1 & b) == 2``); pandas gives them the precedence of ``and`` and
        ``or``. Flattening the unparenthesised part and parsing it again with
        pandas' precedence gives the meaning a pandas user expects.
        """
        if not root and self._parenthesised(node):
            return [node]
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ["not"] + self.flatten(node.operand)
        if self._is_bitwise(node):
            op = "&" if isinstance(node.op, ast.BitAnd) else "|"
            return self.flatten(node.left) + [op] + self.flatten(node.right)
        if isinstance(node, ast.Compare):
            items = self.flatten(node.left)
            for op, right in zip(node.ops, node.comparators):
                items += [op] + self.flatten(right)
            return items
        return [node]

    def _parenthesised(self, node: ast.AST) -> bool:
        start = self.line_starts[node.lineno - 1] + node.col_offset
        end = self.line_starts[node.end_lineno - 1] + node.end_col_offset
        before = self.encoded[:start].rstrip()
        after = self.encoded[end:].lstrip()
        return before.endswith(b"(") and after.startswith(b")")

    def compare(self, left_node, op, right_node, depth: int) -> Expr:
        if isinstance(op, (ast.In, ast.NotIn)):
            return IsIn(self.value(left_node, depth + 1), self.literal_list(right_node), isinstance(op, ast.NotIn))
        if type(op) not in COMPARISONS:
            self.fail(f"'{_op_text(op)}' is not a comparison this language has; use == != < <= > >= in")
        return Compare(COMPARISONS[type(op)], self.value(left_node, depth + 1), self.value(right_node, depth + 1))

    def call(self, node: ast.Call) -> Expr:
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in TEXT_TESTS + MISSING_TESTS:
            shown = name or ast.get_source_segment(self.source, node.func) or "this"
            self.fail(f"'{shown}(...)' is not allowed; the only functions are {', '.join(TEXT_TESTS + MISSING_TESTS)}")
        if node.keywords:
            self.fail(f"{name}() takes no keyword arguments")
        expected = 2 if name in TEXT_TESTS else 1
        if len(node.args) != expected:
            usage = f"{name}(column, 'text')" if name in TEXT_TESTS else f"{name}(column)"
            self.fail(f"{name}() takes {expected} argument(s): {usage}")
        column = self.value(node.args[0], 0)
        if not isinstance(column, Column):
            self.fail(f"the first argument of {name}() must be a column name")
        if name in MISSING_TESTS:
            return MissingTest(name, column)
        text = self.value(node.args[1], 0)
        if not (isinstance(text, Literal) and isinstance(text.value, str)):
            self.fail(f"the second argument of {name}() must be a quoted text, e.g. {name}({_name_text(column.name)}, 'x')")
        return TextTest(name, column, text.value)

    def literal_list(self, node: ast.AST) -> tuple[Literal, ...]:
        if not isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            self.fail("'in' needs a list of values, e.g. system in ['A', 'B']")
        values = tuple(self.value(element, 0) for element in node.elts)
        if not all(isinstance(v, Literal) for v in values):
            self.fail("the list after 'in' may hold only numbers, quoted texts, True or False")
        return values

    # values: columns, literals, arithmetic

    def finite(self, number: int | float) -> int | float:
        """A number the columns' double precision can hold; 10**400 or 1e400 would compare as infinity."""
        try:
            finite = math.isfinite(float(number))
        except OverflowError:
            finite = False
        if not finite:
            self.fail("a number in it is beyond the range of double precision (about 1.8e308); "
                      "compare with a smaller number")
        return number

    def value(self, node: ast.AST, depth: int) -> Expr:
        if depth > MAX_DEPTH:
            self.fail("the condition is nested too deeply")
        if isinstance(node, ast.Name):
            return Column(self.names.get(node.id, node.id))
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
                return Literal(self.finite(node.value))
            if isinstance(node.value, (bool, str)):
                return Literal(node.value)
            if node.value is None:
                self.fail("None is not a value here; test for missing values with isna(column)")
            self.fail(f"{node.value!r} is not a number, a quoted text, True or False")
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            operand = self.value(node.operand, depth + 1)
            if isinstance(node.op, ast.UAdd):
                return operand
            if isinstance(operand, Literal) and isinstance(operand.value, (int, float)) \
                    and not isinstance(operand.value, bool):
                return Literal(-operand.value)
            return Negate(operand)
        if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:
            return Arithmetic(ARITHMETIC[type(node.op)], self.value(node.left, depth + 1),
                              self.value(node.right, depth + 1))
        if isinstance(node, (ast.BoolOp, ast.Compare, ast.Call)) or self._is_bitwise(node) or \
                (isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.Invert))):
            return self.condition(node, depth + 1)
        self.fail(_refusal(node, self.source))


class _PandasPrecedence:
    """Parse a flattened sequence with | lowest, then &, then ``not``, then comparison chains (pandas' order)."""

    def __init__(self, builder: _Builder, items: list, depth: int):
        self.builder, self.items, self.depth, self.at = builder, items, depth, 0

    def parse(self) -> Expr:
        result = self.either()
        if self.at != len(self.items):  # cannot happen for a sequence taken from a valid Python tree
            self.builder.fail("the condition could not be read")
        return result

    def either(self) -> Expr:
        return self.joined("|", self.both, Or)

    def both(self) -> Expr:
        return self.joined("&", self.negation, And)

    def joined(self, operator: str, part, node) -> Expr:
        parts = [part()]
        while self.peek() == operator:
            self.at += 1
            parts.append(part())
        return parts[0] if len(parts) == 1 else node(tuple(parts))

    def negation(self, depth: int = 0) -> Expr:
        if self.peek() == "not":
            if self.depth + depth > MAX_DEPTH:
                self.builder.fail("the condition is nested too deeply")
            self.at += 1
            return Not(self.negation(depth + 1))
        return self.chain()

    def chain(self) -> Expr:
        operands, ops = [self.take()], []
        while isinstance(self.peek(), ast.cmpop):
            ops.append(self.items[self.at])
            self.at += 1
            operands.append(self.take())
        if not ops:
            return self.builder.condition(operands[0], self.depth + 1)
        links = [self.builder.compare(a, op, b, self.depth) for a, op, b in zip(operands, ops, operands[1:])]
        return links[0] if len(links) == 1 else And(tuple(links))

    def take(self):
        item = self.items[self.at]
        self.at += 1
        return item

    def peek(self):
        return self.items[self.at] if self.at < len(self.items) else None


def _refusal(node: ast.AST, source: str) -> str:
    segment = ast.get_source_segment(source, node) or type(node).__name__
    if isinstance(node, ast.Attribute):
        return f"'{segment}' reads an attribute; only column names, values and the listed tests are allowed"
    if isinstance(node, ast.Subscript):
        return f"'{segment}' is a subscript; only column names, values and the listed tests are allowed"
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.MatMult):
        return "'@' references are not allowed; write the value itself"
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return f"a list ('{segment}') is allowed only after 'in'"
    return f"'{segment}' is not allowed; use column names, values, comparisons, and/or/not and the listed tests"


def _op_text(op: ast.cmpop) -> str:
    return {ast.Is: "is", ast.IsNot: "is not"}.get(type(op), type(op).__name__)


def _shown(text: str) -> str:
    """The condition as quoted in messages, shortened when long."""
    return repr(text if len(text) <= 80 else text[:77] + "...")


def _listed(names: list[str], limit: int = 12) -> str:
    shown = ", ".join(_name_text(n) for n in names[:limit])
    return shown + (f", ... ({len(names)} in all)" if len(names) > limit else "")


def _name_text(name: str) -> str:
    return name if name.isidentifier() else f"`{name}`"


# --- types --------------------------------------------------------------------------------------------

def column_kind(values: pd.Series, name: str) -> str:
    """``number``, ``text`` or ``bool``: how a DataFrame column takes part in a condition."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        return TEXT
    if pd.api.types.is_bool_dtype(values):
        return BOOL
    if pd.api.types.is_numeric_dtype(values):
        return NUMBER
    if pd.api.types.is_object_dtype(values):
        kinds = {_kind_of_value(v) for v in values.dropna()}
        if "other" in kinds:
            unreadable_column(name)
        if len(kinds) == 1:
            return {"text": TEXT, "number": NUMBER, "true/false value": BOOL}[kinds.pop()]
        if kinds:
            raise BayesreproError(f"--where: column '{name}' mixes {' and '.join(sorted(kinds))}s; give it one type")
        return TEXT
    if pd.api.types.is_string_dtype(values):
        return TEXT
    unreadable_column(name)


def unreadable_column(name: str):
    """Refuse a condition on a column of dates, times, lists or objects: the same words in every engine."""
    raise BayesreproError(f"--where: column '{name}' holds values that are not numbers, text or true/false (dates, "
                          "times, lists or objects), which a condition cannot read; filter the data before")


def _require_known(text: str, used: list[str], known) -> None:
    known = [str(c) for c in known]
    for name in used:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {_name_text(close[0])}?" if close else f" (columns: {_listed(known)})"
            raise BayesreproError(f"--where {_shown(text)}: '{name}' is not a column of the data{hint}")


class _Typing:
    """The type of every node, refusing mixtures (text with numbers) and non-boolean conditions."""

    def __init__(self, text: str, kinds: Mapping[str, str]):
        self.text, self.kinds = text, kinds

    def fail(self, what: str):
        raise BayesreproError(f"--where {_shown(self.text)}: {what}")

    def condition(self, node: Expr) -> None:
        kind = self.kind(node)
        if kind != BOOL:
            shown = f"column '{node.name}' holds {kind}s" if isinstance(node, Column) else f"this gives a {kind}"
            self.fail(f"the condition must be true or false for each row, but {shown}; compare it with a value, "
                      "e.g. x > 0 or x == 'a'")

    def kind(self, node: Expr) -> str:
        if isinstance(node, Column):
            if self.kinds[node.name] not in (NUMBER, TEXT, BOOL):
                unreadable_column(node.name)
            return self.kinds[node.name]
        if isinstance(node, Literal):
            return BOOL if isinstance(node.value, bool) else TEXT if isinstance(node.value, str) else NUMBER
        if isinstance(node, Negate):
            self.number(node.operand, "'-'")
            return NUMBER
        if isinstance(node, Arithmetic):
            self.number(node.left, f"'{node.op}'")
            self.number(node.right, f"'{node.op}'")
            return NUMBER
        if isinstance(node, Compare):
            self.comparable(node.left, node.right, node.op)
            return BOOL
        if isinstance(node, IsIn):
            for value in node.values:
                self.comparable(node.operand, value, "in")
            return BOOL
        if isinstance(node, TextTest):
            if self.kinds[node.column.name] != TEXT:
                self.fail(f"{node.function}() needs a text column, but '{node.column.name}' holds "
                          f"{self.kinds[node.column.name]}s")
            return BOOL
        if isinstance(node, MissingTest):
            self.kind(node.column)
            return BOOL
        for part in children(node):  # And, Or, Not
            self.condition(part)
        return BOOL

    def number(self, node: Expr, operator: str) -> None:
        kind = self.kind(node)
        if kind != NUMBER:
            what = f"column '{node.name}'" if isinstance(node, Column) else "its operand"
            self.fail(f"{operator} needs numbers, but {what} holds {kind}s")

    def comparable(self, left: Expr, right: Expr, op: str) -> None:
        a, b = self.kind(left), self.kind(right)
        if a == b:
            if a == BOOL and op not in ("==", "!=", "in"):
                self.fail(f"true/false values cannot be ordered with '{op}'; use == or !=")
            return
        column, value = (left, right) if isinstance(left, Column) else (right, left)
        if isinstance(column, Column) and isinstance(value, Literal):
            kind = self.kinds[column.name]
            written = _suggest(value.value, kind)
            hint = f"; write {_name_text(column.name)} {'==' if op == 'in' else op} {written}" if written else ""
            self.fail(f"column '{column.name}' holds {kind}s but is compared with the {_kind_of_value(value.value)} "
                      f"{value.value!r}{hint}")
        self.fail(f"'{op}' compares a {a} with a {b}; compare text with text and numbers with numbers")


def _kind_of_value(value) -> str:
    if isinstance(value, (bool, np.bool_)):
        return "true/false value"
    return "text" if isinstance(value, str) else "number" if isinstance(value, (int, float, np.number)) else "other"


def _suggest(value, kind: str) -> str | None:
    if kind == TEXT and not isinstance(value, str):
        return repr(str(value))
    if kind == NUMBER and isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
        return value if math.isfinite(number) else None
    return None


# --- evaluation on a pandas DataFrame ------------------------------------------------------------------

class _Evaluator:
    """Values as numpy arrays with a missing mask: numbers float64, text object, conditions bool (Kleene logic)."""

    def __init__(self, frame: pd.DataFrame, kinds: Mapping[str, str]):
        self.frame, self.kinds, self.n = frame, kinds, len(frame)

    def condition(self, node: Expr) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(node, Column):  # a boolean column
            return self.column(node)
        if isinstance(node, Literal):
            return np.full(self.n, bool(node.value)), np.zeros(self.n, bool)
        if isinstance(node, Compare):
            (a, a_missing), (b, b_missing) = self.value(node.left), self.value(node.right)
            missing = a_missing | b_missing
            result = np.zeros(self.n, bool)
            known = ~missing
            result[known] = _compare_exactly(node.op, a[known], b[known])
            return result, missing
        if isinstance(node, IsIn):
            value, missing = self.value(node.operand)
            hit = np.zeros(self.n, bool)
            for literal in node.values:
                other = self.value(literal)[0]
                hit[~missing] |= _compare_exactly("==", value[~missing], other[~missing])
            if not node.values:
                missing = np.zeros(self.n, bool)
            return (~hit if node.negated else hit) & ~missing, missing
        if isinstance(node, TextTest):
            text, missing = self.value(node.column)
            test = {"startswith": str.startswith, "endswith": str.endswith, "contains": str.__contains__}[node.function]
            result = np.array([not m and test(t, node.text) for t, m in zip(text, missing)], dtype=bool)
            return result, missing
        if isinstance(node, MissingTest):
            missing = self.value(node.column)[1]
            return (missing if node.function == "isna" else ~missing), np.zeros(self.n, bool)
        if isinstance(node, Not):
            value, missing = self.condition(node.operand)
            return ~value & ~missing, missing
        parts = [self.condition(part) for part in node.parts]
        if isinstance(node, And):
            false = np.logical_or.reduce([~v & ~m for v, m in parts])
            missing = np.logical_or.reduce([m for _, m in parts]) & ~false
            return ~false & ~missing, missing
        true = np.logical_or.reduce([v & ~m for v, m in parts])
        missing = np.logical_or.reduce([m for _, m in parts]) & ~true
        return true, missing

    def value(self, node: Expr) -> tuple[np.ndarray, np.ndarray]:
        if isinstance(node, Column):
            return self.column(node)
        if isinstance(node, Literal):
            return np.full(self.n, node.value, dtype=_literal_dtype(node.value)), np.zeros(self.n, bool)
        if isinstance(node, Negate):
            value, missing = self.value(node.operand)
            return -value.astype(float), missing
        if isinstance(node, Arithmetic):
            (a, a_missing), (b, b_missing) = self.value(node.left), self.value(node.right)
            a, b = a.astype(float), b.astype(float)
            with np.errstate(all="ignore"):
                if node.op == "/":
                    result = np.divide(a, np.where(b == 0, np.nan, b))
                else:
                    result = {"+": np.add, "-": np.subtract, "*": np.multiply}[node.op](a, b)
            missing = a_missing | b_missing | np.isnan(result)
            return result, missing
        return self.condition(node)

    def column(self, node: Column) -> tuple[np.ndarray, np.ndarray]:
        values = self.frame[node.name]
        missing = values.isna().to_numpy()
        kind = self.kinds[node.name]
        if kind == NUMBER and pd.api.types.is_signed_integer_dtype(values):
            return values.to_numpy(dtype=np.int64, na_value=0), missing
        if kind == NUMBER and pd.api.types.is_unsigned_integer_dtype(values):
            return values.astype(object).where(~missing, 0).to_numpy(), missing
        if kind == NUMBER:
            numbers = values.to_numpy(dtype=float, na_value=np.nan)
            return numbers, missing | np.isnan(numbers)
        if kind == BOOL:
            return values.fillna(False).to_numpy(dtype=bool), missing
        if isinstance(values.dtype, pd.CategoricalDtype):
            values = level_labels(values)
        return values.astype(object).to_numpy(), missing


_COMPARE = {"==": np.equal, "!=": np.not_equal, "<": np.less, "<=": np.less_equal, ">": np.greater,
            ">=": np.greater_equal}


def _literal_dtype(value):
    if isinstance(value, bool):
        return bool
    if isinstance(value, int):
        return np.int64 if -2**63 <= value < 2**63 else object
    return object if isinstance(value, str) else float


def _compare_exactly(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a op b``; integers and doubles are compared as Python compares them (exactly), not as doubles."""
    kinds = {a.dtype.kind, b.dtype.kind}
    if "f" in kinds and kinds & {"i", "u", "O"}:
        integers = b if a.dtype.kind == "f" else a
        small = integers.dtype.kind in "iu" and (len(integers) == 0 or (
            -EXACT_DOUBLE_INTEGER < integers.min() and integers.max() < EXACT_DOUBLE_INTEGER))
        # integers below 2^53 are doubles exactly; beyond, Python's own comparison is exact
        a, b = (a.astype(float), b.astype(float)) if small else (a.astype(object), b.astype(object))
    return np.asarray(_COMPARE[op](a, b), dtype=bool)


# --- rendering as SQL -------------------------------------------------------------------------------------

_NAN = "CAST('NaN' AS DOUBLE)"
_TEXT_TESTS = {"startswith": "starts_with", "endswith": "ends_with", "contains": "contains"}


class _Sql:
    """The tree as a SQL condition with the same meaning (three-valued logic is SQL's own)."""

    def __init__(self, quote: Callable[[str], str], kinds: Mapping[str, str], text: Callable[[str], str],
                 text_tests: Mapping[str, str], exact_integer: Callable[[str, str], str]):
        self.quote, self.kinds, self.text, self.text_tests = quote, kinds, text, text_tests
        self.exact_integer = exact_integer

    def render(self, node: Expr) -> str:
        if isinstance(node, Column):
            if self.kinds[node.name] == NUMBER:
                return f"NULLIF(TRY_CAST({self.quote(node.name)} AS DOUBLE), {_NAN})"
            return self.quote(node.name)
        if isinstance(node, Literal):
            return self.text(node.value) if isinstance(node.value, str) else _sql_literal(node.value)
        if isinstance(node, Negate):
            return f"(- {self.render(node.operand)})"
        if isinstance(node, Arithmetic):
            left, right = self.render(node.left), self.render(node.right)
            if node.op == "/":
                right = f"NULLIF({right}, 0)"
            return f"NULLIF(({left} {node.op} {right}), {_NAN})"
        if isinstance(node, Compare):
            if self._exact(node.left, node.right) or self._exact(node.right, node.left):
                return self._exact_compare(node)
            op = {"==": "=", "!=": "<>"}.get(node.op, node.op)
            return f"({self.render(node.left)} {op} {self.render(node.right)})"
        if isinstance(node, IsIn):
            if not node.values:
                return "TRUE" if node.negated else "FALSE"
            if any(self._exact(node.operand, value) for value in node.values):
                either = " OR ".join(self.render(Compare("==", node.operand, value)) for value in node.values)
                return f"({'NOT ' if node.negated else ''}({either}))"
            values = ", ".join(self.render(v) for v in node.values)
            return f"({self.render(node.operand)} {'NOT IN' if node.negated else 'IN'} ({values}))"
        if isinstance(node, TextTest):
            return f"{self.text_tests[node.function]}({self.render(node.column)}, {self.text(node.text)})"
        if isinstance(node, MissingTest):
            return f"({self.render(node.column)} {'IS NULL' if node.function == 'isna' else 'IS NOT NULL'})"
        if isinstance(node, Not):
            return f"(NOT {self.render(node.operand)})"
        joiner = " AND " if isinstance(node, And) else " OR "
        return "(" + joiner.join(self.render(part) for part in node.parts) + ")"


    def _exact(self, column: Expr, literal: Expr) -> bool:
        """Is this a number column against an integer a double cannot hold exactly?"""
        return (isinstance(column, Column) and self.kinds[column.name] == NUMBER and isinstance(literal, Literal)
                and isinstance(literal.value, (int, float)) and not isinstance(literal.value, bool)
                and EXACT_DOUBLE_INTEGER <= abs(literal.value) < 10**38)   # a float this large is an integer

    def _exact_compare(self, node: Compare) -> str:
        """column op integer on exact integers: a non-integral value x lies between floor(x) and ceil(x)."""
        column, literal, op = node.left, node.right, node.op
        if not self._exact(column, literal):
            column, literal, op = literal, column, {"<": ">", "<=": ">=", ">": "<", ">=": "<="}.get(op, op)
        raw = self.quote(column.name)
        low, high = self.exact_integer(raw, "floor"), self.exact_integer(raw, "ceil")
        value = self.exact_integer(f"'{int(literal.value)}'", "floor")
        return {"==": f"({low} = {value} AND {high} = {value})", "!=": f"(NOT ({low} = {value} AND {high} = {value}))",
                "<": f"({low} < {value})", "<=": f"({high} <= {value})", ">": f"({high} > {value})",
                ">=": f"({low} >= {value})"}[op]


def duckdb_exact_integer(expression: str, rounding: str) -> str:
    from .readers import INTEGER

    text = f"CAST({expression} AS VARCHAR)"
    return (f"CASE WHEN regexp_full_match({text}, '{INTEGER.pattern}') THEN TRY_CAST({text} AS HUGEINT) "
            f"ELSE TRY_CAST({rounding}(TRY_CAST({expression} AS DOUBLE)) AS HUGEINT) END")


def _text_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _sql_literal(value) -> str:
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    number = float(value)
    if not math.isfinite(number):
        return f"CAST('{'Infinity' if number > 0 else '-Infinity'}' AS DOUBLE)"
    return f"CAST({number!r} AS DOUBLE)"
