"""Random-effect terms whose (co)variances the data cannot identify, refused before any fit.

A term ``(1 + x|g)`` on the model frame's rows is refused when

* a slope column holds an infinite value, or a categorical one a single level;
* a numeric slope column is on a scale where θ (the slope's SD relative to
  the residual SD, per unit of the column) lies orders of magnitude from the
  optimiser's start at 1: on sleepstudy, ``Days`` multiplied by 1e-4 to 1e5
  gives the same fit, by 1e-5 or 1e6 a wrong optimum (lme4 ends wrong or
  stops there too);
* a slope column does not vary within any level of its grouping factor while
  that factor has a random intercept (a between-level covariate: Barr et al.
  2013, J. Mem. Lang. 68:255, random slopes only for within-unit effects);
* it has at least as many random effects (levels × columns) as there are
  observations (lme4's ``check.nobs.vs.nRE``);
* its columns and those of another term on the same grouping factor are
  linearly dependent (``(1|g) + (x|g)``, ``(cond||g)`` with a categorical
  ``cond``): only the sum of the overlapping variances is identified, so each
  share would be arbitrary.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import BayesreproError

SLOPE_SCALE = (1e-3, 1e4)   # root mean square of a numeric slope column, with a decade's margin to the failures
CONSTANT = 1e-12            # relative spread within a level below which a column is constant there


@dataclass(frozen=True)
class BuiltTerm:
    """A term's model matrix on the rows and the level of each row."""

    text: str
    factor: tuple[str, ...]
    matrix: np.ndarray
    columns: tuple[str, ...]
    codes: np.ndarray
    n_levels: int


def require_slope_values(data: pd.DataFrame, variables: tuple[str, ...], text: str) -> None:
    """Refuse a numeric slope column with an infinite value, and a categorical one with a single level in the
    rows (its contrasts would vanish and leave the term an intercept without a word)."""
    for variable in variables:
        values = data[variable]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            infinite = int(np.isinf(values.to_numpy(dtype=float)).sum())
            if infinite:
                raise BayesreproError(f"slope column '{variable}' of random-effect term '{text}' has {infinite} "
                                      "infinite value(s); remove those rows (e.g. with --where) or fix the column")
        elif len(values) and values.nunique() < 2:
            raise BayesreproError(f"categorical slope column '{variable}' of random-effect term '{text}' has the "
                                  f"single level '{values.iloc[0]}' in the rows analysed; a slope needs two: widen "
                                  f"--where or remove '{variable}' from the term")


def require_identifiable(terms: list[BuiltTerm], n_obs: int) -> None:
    """Refuse terms whose variances the rows cannot identify (see the module's list)."""
    for term in terms:
        _require_slope_scale(term)
        if term.n_levels * len(term.columns) >= n_obs:
            shown = ", ".join(term.columns[:4]) + (", ..." if len(term.columns) > 4 else "")
            raise BayesreproError(
                f"random-effect term '{term.text}' has {term.n_levels} levels × {len(term.columns)} columns ({shown}) "
                f"= {term.n_levels * len(term.columns)} random effects for {n_obs} observations; its (co)variances "
                "cannot be told apart from the residual: drop slopes from the term (a text column gives a column per "
                "level) or add data")
    for factor in dict.fromkeys(term.factor for term in terms):
        sharing = [term for term in terms if term.factor == factor]
        if any("Intercept" in term.columns for term in sharing):
            for term in sharing:
                _require_within_variation(term)
        if len(sharing) > 1:
            _require_independent(sharing)


def _require_slope_scale(term: BuiltTerm) -> None:
    low, high = SLOPE_SCALE
    for name, column in zip(term.columns, term.matrix.T):
        if name == "Intercept" or np.isin(column, (0.0, 1.0)).all():  # intercepts and indicators are on scale
            continue
        scale = float(np.sqrt(np.mean(column * column)))
        if scale > 0 and not low <= scale <= high:
            raise BayesreproError(
                f"slope '{name}' of random-effect term '{term.text}' has a root mean square of {scale:.3g}, outside "
                f"{low:g} to {high:g}, where its variance cannot be estimated reliably; rescale it in the data "
                f"(e.g. multiply it by {10.0 ** -round(np.log10(scale)):g}) and refit")


def _require_within_variation(term: BuiltTerm) -> None:
    slopes = [j for j, name in enumerate(term.columns) if name != "Intercept"]
    if not slopes:
        return
    grouped = pd.DataFrame(term.matrix[:, slopes]).groupby(term.codes)
    spread = (grouped.max() - grouped.min()).to_numpy()
    size = np.abs(term.matrix[:, slopes]).max(axis=0)
    for j, column_spread, column_size in zip(slopes, spread.T, size):
        if np.all(column_spread <= CONSTANT * column_size):
            group = ":".join(term.factor)
            raise BayesreproError(
                f"slope '{term.columns[j]}' of random-effect term '{term.text}' does not vary within any level of "
                f"'{group}', so its effect per level cannot be told from the level's intercept; keep it in the "
                f"fixed part and remove it from the term")


def _require_independent(sharing: list[BuiltTerm]) -> None:
    joined = np.hstack([term.matrix for term in sharing])
    if np.linalg.matrix_rank(joined) < joined.shape[1]:
        texts = " and ".join(f"'{term.text}'" for term in sharing)
        raise BayesreproError(
            f"random-effect terms {texts} on '{':'.join(sharing[0].factor)}' repeat an effect (their columns are "
            "linearly dependent), so only the sum of the overlapping variances is identified; merge them into one "
            "term, e.g. (1 + x|g), or write (x || g) for independent effects of a numeric x")
