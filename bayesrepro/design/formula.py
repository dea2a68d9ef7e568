"""What a formula says, before any data is seen.

A Bambi/formulae formula such as ``ter ~ system + (1|sentence_id) + (1|a/b)``
is parsed by formulae, the parser Bambi itself uses, into its response, its
fixed terms (with the data columns each reads) and its random-effect terms.
Bambi's binomial response ``p(successes, trials)`` names a column of
successes and a column (or a constant number) of trials.

A random-effect term ``(1 + x | g)`` is one block of correlated effects per
level of ``g``, as in lme4; formulae splits it into one group term per
column, so the bars are read from the text (``random_terms.py``) and only
their two sides are handed to formulae. ``(x || g)`` is lme4's shorthand for
independent terms, ``(1 | g) + (0 + x | g)``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np

from ..errors import BayesreproError, first_line
from .formulae_loader import load_formulae
from .random_terms import (RandomTerm, bar_terms, masked, quote_name, require_flat_bars, right_of_tilde,
                           term_source)

formulae = load_formulae()

# The functions a formula may call. formulae evaluates calls by looking their
# names up in an environment, so any reachable function (numpy's file
# writers, the package's own readers) could run from --formula; a formula is
# checked against this list when parsed, and evaluated in an environment
# that holds nothing else.
TRANSFORMS = ("C", "I", "S", "T", "center", "scale", "standardize", "poly", "bs")
MATH = {name: getattr(np, name) for name in ("log", "log2", "log10", "log1p", "exp", "sqrt", "abs")}
ALLOWED_CALLS = frozenset(TRANSFORMS) | set(MATH) | {f"np.{name}" for name in MATH}
FORMULA_NAMESPACE = {**MATH, "np": SimpleNamespace(**MATH)}


@dataclass(frozen=True)
class FormulaSpec:
    """What a formula says, before any data is seen."""

    formula: str
    response: str
    intercept: bool
    fixed_terms: tuple[str, ...]
    fixed_variables: tuple[str, ...]
    term_variables: tuple[frozenset[str], ...]   # the data columns each fixed term reads
    group_factors: tuple[tuple[str, ...], ...]
    trials: str | int | None = None      # p(successes, trials): a column name or a constant
    random_terms: tuple[RandomTerm, ...] = ()   # formula order; empty only for formulas without bars

    @property
    def has_slopes(self) -> bool:
        """Does a random-effect term hold more than an intercept (random slopes, or a factor in two terms)?"""
        return any(not term.intercept_only for term in self.random_terms)

    @property
    def response_term(self) -> str:
        """The left-hand side as written in a formula: the score column, or p(successes, trials)."""
        if self.trials is None:
            return quote_name(self.response)
        trials = quote_name(self.trials) if isinstance(self.trials, str) else self.trials
        return f"p({quote_name(self.response)}, {trials})"

    @property
    def fixed_formula(self) -> str:
        terms = ["1" if self.intercept else "0", *self.fixed_terms]
        return f"{quote_name(self.response)} ~ {' + '.join(terms)}"

    def rewritten(self, drop_fixed=lambda variables: False, drop_group=lambda columns: False) -> str:
        """This formula as text without the fixed terms (selected by the columns they read) / groupings."""
        terms = ["1" if self.intercept else "0"]
        terms += [term for term, used in zip(self.fixed_terms, self.term_variables) if not drop_fixed(used)]
        if self.has_slopes:
            terms += [term.text for term in self.random_terms if not drop_group(term.factor)]
        else:
            terms += [f"(1|{':'.join(map(quote_name, columns))})" for columns in self.group_factors
                      if not drop_group(columns)]
        return f"{self.response_term} ~ {' + '.join(terms)}"

    @property
    def group_names(self) -> tuple[str, ...]:
        return tuple(":".join(columns) for columns in self.group_factors)

    @property
    def variables(self) -> tuple[str, ...]:
        """Every data column the formula reads, response first."""
        seen = [self.response] + ([self.trials] if isinstance(self.trials, str) else [])
        seen += [v for v in self.fixed_variables if v not in seen]
        for term in self.random_terms:
            seen += [v for v in term.slope_variables if v not in seen]
        for columns in self.group_factors:
            seen += [c for c in columns if c not in seen]
        return tuple(seen)



def parse_formula(formula: str, slopes: bool = False) -> FormulaSpec:
    """Parse a formula. Random slopes are accepted only with ``slopes`` (the engines that fit them ask for them);
    elsewhere they are refused in one line."""
    if not isinstance(formula, str) or "~" not in formula:
        raise BayesreproError(f"formula {formula!r} needs the form 'score ~ terms', e.g. 'ter ~ system + (1|sentence_id)'")
    require_quotable_names(formula)
    require_flat_bars(formula)
    if len(_top_level_terms(right_of_tilde(formula))) > MAX_TERMS:
        raise _too_long(formula)
    try:
        model = formulae.model_description(_single_bars(formula))
    except RecursionError:   # formulae's parser recurses once per term
        raise _too_long(formula) from None
    except Exception as exc:  # formulae raises its own ParseError/ScanError types
        raise BayesreproError(f"could not parse formula {formula!r}: {first_line(exc)}") from None
    if model.response is None:
        raise BayesreproError(f"formula {formula!r} has no response on the left of '~'")
    for term in [model.response.term, *model.common_terms]:
        for component in getattr(term, "components", ()):
            call = getattr(component, "call", None)
            if term is not model.response.term or getattr(call, "callee", None) != "p":  # p(successes, trials)
                _check_calls(call, formula)
    response, trials = _response(model.response.term, formula)
    intercept = any(term.kind == "intercept" or type(term).__name__ == "Intercept" for term in model.common_terms)
    fixed_terms = tuple(term_source(term) for term in model.common_terms if type(term).__name__ != "Intercept")
    term_variables = tuple(
        frozenset(v for v in term.var_names if v) for term in model.common_terms if type(term).__name__ != "Intercept"
    )
    fixed_variables = []
    for term in model.common_terms:
        fixed_variables += sorted(v for v in term.var_names if v and v not in fixed_variables)
    random_terms = bar_terms(formula, response, _parse_side)
    for term in random_terms:
        if not term.intercept_only and not slopes:
            raise BayesreproError(
                f"random slope '{term.text}' in formula {formula!r} is not supported here; random slopes are fitted "
                "by the frequentist Gaussian engine (vca, glrt); use random intercepts (1|g), (1|a:b) or (1|a/b)"
            )
    groups = list(dict.fromkeys(term.factor for term in random_terms))
    return FormulaSpec(formula, response, intercept, fixed_terms, tuple(fixed_variables), term_variables, tuple(groups),
                       trials, random_terms)


def require_quotable_names(formula: str) -> None:
    """Every backtick closes a name, and no name holds one: formulae cannot read a backtick inside a name."""
    if "`" not in formula:
        return
    quoted = masked(formula)
    delimiters = [k for k, char in enumerate(formula) if char == "`" and quoted[k] == "`"]
    doubled = formula.find("``")
    if len(delimiters) % 2 == 0 and doubled < 0:
        return
    start = doubled if doubled >= 0 else delimiters[-1]
    raise BayesreproError(
        f"formula {formula!r} has a backtick inside a backticked name (near {formula[max(0, start - 12):start + 12]!r}); "
        "a name in backticks cannot itself hold a backtick: rename that column in the data (e.g. '`' to '_')"
    )


# formulae's parser recurses once per term: past this many terms it would run out of recursion at Python's default
# limit, and whether it does depends on the limit the process runs with (PyTensor raises it), so they are refused
# whatever the limit
MAX_TERMS = 1000


def _too_long(formula: str) -> BayesreproError:
    """Why formulae's parser ran out of recursion: the term repeated most, or the number of terms or of nested
    parentheses."""
    terms = _top_level_terms(right_of_tilde(formula))
    counts = Counter(" ".join(term.split()) for term in terms)
    term, times = counts.most_common(1)[0] if counts else ("", 0)
    short = formula if len(formula) <= 80 else formula[:60] + " ... " + formula[-15:]
    if times > 1:
        return BayesreproError(f"formula {short!r} repeats the term '{term[:60]}' {times} times, too often to parse; "
                               "a term counts once: write each term once")
    return BayesreproError(f"formula {short!r} has {len(terms)} terms or parentheses nested too deeply to parse; "
                           "write fewer terms (a factor's levels are one term, e.g. 'system', not one per level)")


def _top_level_terms(text: str) -> list[str]:
    """The terms of ``text`` joined by '+' outside parentheses, braces, backticks and quotes."""
    quoted, terms, depth, start = masked(text), [], 0, 0
    for k, char in enumerate(quoted + "+"):
        depth += {"(": 1, ")": -1, "{": 1, "}": -1, "[": 1, "]": -1}.get(char, 0)
        if char == "+" and depth == 0:
            terms.append(text[start:k].strip())
            start = k + 1
    return [term for term in terms if term]


def _single_bars(formula: str) -> str:
    """The formula with lme4's double bars as single ones (formulae reads one), names left as written."""
    quoted = masked(formula)
    return "".join("" if quoted[k:k + 2] == "||" else char for k, char in enumerate(formula))


def _parse_side(text: str, formula: str):
    """formulae's description of one side of a bar, ``response ~ text``; its calls are checked."""
    try:
        model = formulae.model_description(text)
    except RecursionError:
        raise _too_long(formula) from None
    except Exception as exc:  # formulae raises its own ParseError/ScanError types
        raise BayesreproError(f"could not parse formula {formula!r}: {first_line(exc)}") from None
    for term in [*model.common_terms, *model.group_terms]:
        for component in getattr(term, "components", ()):
            _check_calls(getattr(component, "call", None), formula)
    return model


def _response(term, formula: str) -> tuple[str, str | int | None]:
    """The response column, and the trials of Bambi's ``p(successes, trials)``."""
    call = getattr(term.components[0], "call", None) if len(term.components) == 1 else None
    if call is None or getattr(call, "callee", None) != "p":
        return term.name, None
    arguments = list(call.args)
    if len(arguments) != 2 or call.kwargs or not hasattr(arguments[0], "name"):
        raise BayesreproError(
            f"the response of {formula!r} must be p(successes, trials) with a column of successes and a column "
            "(or a whole number) of trials, e.g. p(correct, attempts)"
        )
    successes, trials = arguments
    if hasattr(trials, "name"):
        return successes.name, trials.name
    value = getattr(trials, "value", None)
    if isinstance(value, (int, float)) and value >= 1 and float(value).is_integer():
        return successes.name, int(value)
    raise BayesreproError(f"the trials of {term.name!r} in {formula!r} must be a column or a whole number of at least 1")


def _check_calls(lazy, formula: str) -> None:
    """Refuse any call in a term whose function is not in ALLOWED_CALLS, however deeply nested."""
    if lazy is None:
        return
    callee = getattr(lazy, "callee", None)
    if callee is not None and callee not in ALLOWED_CALLS:
        raise BayesreproError(
            f"formula {formula!r} calls '{callee}', which is not allowed; a formula may call "
            f"{', '.join(sorted(ALLOWED_CALLS))}"
        )
    for argument in [*getattr(lazy, "args", ()), *getattr(lazy, "kwargs", {}).values()]:
        _check_calls(argument, formula)
