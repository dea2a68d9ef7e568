"""The random-effect terms of a formula, read from its bars: ``(1 + x | g)``, ``(0 + x | g)``, ``(x || g)``.

formulae gives one group term per column of a bar's left side, which loses
which columns share a covariance matrix; so the bars are found in the text
(by matching parentheses, nothing is evaluated) and each side is parsed by
formulae alone. As in lme4, ``(x | g)`` holds an intercept unless ``0 +`` or
``- 1`` removes it, ``(a | g/h)`` is ``(a | g) + (a | g:h)``, and the double
bar ``(1 + x || g)`` is ``(1 | g) + (0 + x | g)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import BayesreproError

# a name formulae reads without backticks; any other is written in backticks when a formula is rebuilt from parts
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


def quote_name(name: str) -> str:
    """A column name as a formula writes it: in backticks unless it is a plain name."""
    return name if _PLAIN_NAME.fullmatch(name) else f"`{name}`"


def masked(text: str) -> str:
    """``text`` with what backticks and quotes enclose (names, text values) blanked out: its parentheses, bars and
    tildes are then the formula's own, not a column name's (`x") | y`). An unclosed quote blanks the rest."""
    out, closing = [], None
    for char in text:
        if closing is not None:
            out.append(char if char == closing else "_")
            if char == closing:
                closing = None
        else:
            out.append(char)
            if char in "`'\"":
                closing = char
    return "".join(out)


def unquote_factor(text: str) -> str:
    """A grouping factor as an option names it (``--object `a b`:c``) as the formula's own name of it (``a b:c``)."""
    quoted = masked(text)
    parts, start = [], 0
    for k, char in enumerate(quoted + ":"):
        if char == ":":
            part = text[start:k].strip()
            parts.append(part[1:-1] if len(part) > 1 and part[0] == part[-1] == "`" else part)
            start = k + 1
    return ":".join(parts)


def right_of_tilde(formula: str) -> str:
    """The text right of the formula's '~' (the first outside backticks and quotes)."""
    at = masked(formula).find("~")
    return formula[at + 1:] if at >= 0 else ""


@dataclass(frozen=True)
class RandomTerm:
    """One block of Λ: the effects of ``columns`` (intercept first, then slopes) correlated within each level of
    ``factor``."""

    factor: tuple[str, ...]          # grouping columns; several for an interaction a:b
    intercept: bool
    slopes: tuple[str, ...]          # the slope terms as a formula writes them, e.g. "x", "cond", "x:z"
    slope_variables: tuple[str, ...]  # the data columns the slopes read

    @property
    def group(self) -> str:
        return ":".join(self.factor)

    @property
    def group_source(self) -> str:
        """The grouping factor as a formula writes it (odd names in backticks)."""
        return ":".join(quote_name(column) for column in self.factor)

    @property
    def intercept_only(self) -> bool:
        return self.intercept and not self.slopes

    @property
    def expression(self) -> str:
        """The left side of the bar, as a fixed-effects formula would write it."""
        return " + ".join(["1" if self.intercept else "0", *self.slopes])

    @property
    def text(self) -> str:
        return "(1|" + self.group_source + ")" if self.intercept_only else f"({self.expression}|{self.group_source})"


def bar_terms(formula: str, response: str, parse) -> tuple[RandomTerm, ...]:
    """The random-effect terms of ``formula`` in order, duplicates dropped. ``parse(text, formula)`` returns
    formulae's description of ``text`` (with its calls checked)."""
    terms: list[RandomTerm] = []
    for inside in _parenthesised(right_of_tilde(formula)):
        bar = _top_level_bar(inside)
        if bar is None:
            continue
        double = inside[bar:bar + 2] == "||"
        left, right = inside[:bar], inside[bar + (2 if double else 1):]
        if not left.strip() or not right.strip():
            raise BayesreproError(f"random-effect term '({inside})' in formula {formula!r} needs an expression "
                                  "on both sides of '|', e.g. (1 + x | g)")
        factors = _factors(parse(f"{quote_name(response)} ~ (1|{right})", formula), inside)
        intercept, slopes, variables = _effects(parse(f"{quote_name(response)} ~ {left}", formula), inside, formula)
        for factor in factors:
            _require_slope_columns(factor, response, variables, inside, formula)
            if double:
                blocks = ([RandomTerm(factor, True, (), ())] if intercept else [])
                blocks += [RandomTerm(factor, False, (s,), v) for s, v in zip(slopes, variables)]
            else:
                blocks = [RandomTerm(factor, intercept, tuple(slopes),
                                     tuple(dict.fromkeys(c for v in variables for c in v)))]
            terms += [block for block in blocks if block not in terms]
    return tuple(terms)


def require_flat_bars(formula: str) -> None:
    """Refuse a bar inside either side of another bar, ``((1|g)|h)`` or ``(1|g|h)``, before formulae reads it."""
    tail = right_of_tilde(formula) if "~" in masked(formula) else formula
    for inside in _parenthesised(tail):
        bar = _top_level_bar(inside)
        if bar is None:
            continue
        sides = masked(inside[:bar]), masked(inside[bar:]).lstrip("|")
        if any("|" in side for side in sides):
            raise BayesreproError(f"random-effect term '({inside})' in formula {formula!r} nests a bar in a bar; "
                                  "write each term separately, e.g. (1 + x|g) + (1|h), or (1|g/h) for nesting")


def _require_slope_columns(factor: tuple[str, ...], response: str, variables: list[tuple[str, ...]], inside: str,
                           formula: str) -> None:
    """A slope reads a column that varies within the levels of its grouping factor; a grouping column itself is
    constant there, so its "slope" per level would only relabel the level's own effect. Nor may it read the
    score it is to explain."""
    if any(response in columns for columns in variables):
        raise BayesreproError(f"random-effect term '({inside})' in formula {formula!r} has a slope of the score "
                              f"'{response}' itself; a slope must be a predictor: remove '{response}' from the left "
                              "of '|'")
    for column in factor:
        if any(column in columns for columns in variables):
            raise BayesreproError(f"random-effect term '({inside})' in formula {formula!r} has a slope of its own "
                                  f"grouping column '{column}'; a slope must vary within the levels of "
                                  f"'{':'.join(factor)}': remove '{column}' from the left of '|'")


def _parenthesised(text: str) -> list[str]:
    """The contents of the outermost parentheses of ``text``, in order."""
    found, depth, start = [], 0, 0
    for position, char in enumerate(masked(text)):
        if char == "(":
            if depth == 0:
                start = position + 1
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0:
                found.append(text[start:position])
    return found


def _top_level_bar(text: str) -> int | None:
    depth = 0
    for position, char in enumerate(masked(text)):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "|" and depth == 0:
            return position
    return None


def _factors(model, inside: str) -> list[tuple[str, ...]]:
    factors = []
    for term in model.group_terms:
        if any(type(component).__name__ != "Variable" for component in term.factor.components):
            raise BayesreproError(f"grouping factor '{term.factor.name}' must name data columns, not expressions")
        factors.append(tuple(component.name for component in term.factor.components))
    if not factors:
        raise BayesreproError(f"the grouping factor of '({inside})' must name data columns")
    return factors


def _effects(model, inside: str, formula: str) -> tuple[bool, list[str], list[tuple[str, ...]]]:
    """Intercept or not, the slope terms and the columns each reads, of a bar's left side."""
    intercept = any(type(term).__name__ == "Intercept" for term in model.common_terms)
    slopes = [term for term in model.common_terms if type(term).__name__ != "Intercept"]
    if not intercept and not slopes:
        raise BayesreproError(f"random-effect term '({inside})' in formula {formula!r} has no effect on the left "
                              "of '|'; write (1|g) for an intercept or (0 + x|g) for a slope alone")
    return intercept, [term_source(t) for t in slopes], [tuple(sorted(v for v in t.var_names if v)) for t in slopes]


def term_source(term) -> str:
    """A formulae term written back as formula text, names that are not plain in backticks. (formulae's own
    ``term.name`` writes names bare and drops the parentheses of nested operators: ``I((x + 1) * 2)`` comes
    back as ``I(x + 1 * 2)``.)"""
    return ":".join(_component_source(component) for component in term.components)


def _component_source(component) -> str:
    call = getattr(component, "call", None)
    return quote_name(component.name) if call is None else _lazy_source(call)


def _lazy_source(lazy, nested: bool = False) -> str:
    kind = type(lazy).__name__
    if kind == "LazyVariable":
        return quote_name(lazy.name)
    if kind == "LazyCall":
        parts = [_lazy_source(a) for a in lazy.args] + [f"{k}={_lazy_source(v)}" for k, v in lazy.kwargs.items()]
        return f"{lazy.callee}({', '.join(parts)})"
    if kind == "LazyOperator":
        if len(lazy.args) == 1:
            return f"{lazy.symbol}{_lazy_source(lazy.args[0], True)}"
        text = f"{_lazy_source(lazy.args[0], True)} {lazy.symbol} {_lazy_source(lazy.args[1], True)}"
        return f"({text})" if nested else text
    return str(lazy)   # a value: formulae keeps its text as written
