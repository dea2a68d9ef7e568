"""The random-effect terms of a formula, read from its bars: ``(1 + x | g)``, ``(0 + x | g)``, ``(x || g)``.

formulae gives one group term per column of a bar's left side, which loses
which columns share a covariance matrix; so the bars are found in the text
(by matching parentheses, nothing is evaluated) and each side is parsed by
formulae alone. As in lme4, ``(x | g)`` holds an intercept unless ``0 +`` or
``- 1`` removes it, ``(a | g/h)`` is ``(a | g) + (a | g:h)``, and the double
bar ``(1 + x || g)`` is ``(1 | g) + (0 + x | g)``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import BayesreproError


@dataclass(frozen=True)
class RandomTerm:
    """One block of Λ: the effects of ``columns`` (intercept first, then slopes) correlated within each level of
    ``factor``."""

    factor: tuple[str, ...]          # grouping columns; several for an interaction a:b
    intercept: bool
    slopes: tuple[str, ...]          # formulae term names of the slopes, e.g. "x", "cond", "x:z"
    slope_variables: tuple[str, ...]  # the data columns the slopes read

    @property
    def group(self) -> str:
        return ":".join(self.factor)

    @property
    def intercept_only(self) -> bool:
        return self.intercept and not self.slopes

    @property
    def expression(self) -> str:
        """The left side of the bar, as a fixed-effects formula would write it."""
        return " + ".join(["1" if self.intercept else "0", *self.slopes])

    @property
    def text(self) -> str:
        return "(1|" + self.group + ")" if self.intercept_only else f"({self.expression}|{self.group})"


def bar_terms(formula: str, response: str, parse) -> tuple[RandomTerm, ...]:
    """The random-effect terms of ``formula`` in order, duplicates dropped. ``parse(text, formula)`` returns
    formulae's description of ``text`` (with its calls checked)."""
    terms: list[RandomTerm] = []
    for inside in _parenthesised(formula.split("~", 1)[1]):
        bar = _top_level_bar(inside)
        if bar is None:
            continue
        double = inside[bar:bar + 2] == "||"
        left, right = inside[:bar], inside[bar + (2 if double else 1):]
        if not left.strip() or not right.strip():
            raise BayesreproError(f"random-effect term '({inside})' in formula {formula!r} needs an expression "
                                  "on both sides of '|', e.g. (1 + x | g)")
        factors = _factors(parse(f"{response} ~ (1|{right})", formula), inside)
        intercept, slopes, variables = _effects(parse(f"{response} ~ {left}", formula), inside, formula)
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
    for inside in _parenthesised(formula.split("~", 1)[-1]):
        bar = _top_level_bar(inside)
        if bar is None:
            continue
        sides = inside[:bar], inside[bar:].lstrip("|")
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
    for position, char in enumerate(text):
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
    for position, char in enumerate(text):
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
    return intercept, [t.name for t in slopes], [tuple(sorted(v for v in t.var_names if v)) for t in slopes]
