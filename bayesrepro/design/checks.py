"""Models that cannot be estimated, refused before any fit; confounded factors, noted.

Every check works on the grouped sums and the fixed design of each cell, so
it applies alike to rows in memory and to frames a producer built without
rows. A model is refused when

* a grouping factor has one level, or a level for every row (its variance
  cannot be told apart from the residual);
* there are not more rows than fixed effects and variance components;
* a grouping factor's level indicators lie in the span of the fixed design
  (``score ~ item + (1|item)``): the fixed effects already fix every level,
  and the variance has nothing left to explain;
* the fixed effects, alone or with one grouping factor, reproduce the scores
  exactly (``score`` constant within every item): the residual variance is
  zero and the likelihood has no maximum.

Two grouping factors that split the rows identically are noted: only the sum
of their variances is identified.
"""

from __future__ import annotations

import numpy as np

from ..errors import BayesreproError
from .gaussian import _level_sums
from .sums import GroupedSums

# Relative size below which a sum of squares or a residual count is zero up to
# rounding: the Schur complements below lose about 1e-13 relative accuracy on
# the papers' data; a genuine residual variance below 1e-10 of the total is not
# something a variance-component analysis can estimate either.
EXACT_FIT = 1e-10
IN_SPAN = 1e-8
JOINT_LIMIT = 500  # fixed effects + levels of the non-dominant factors up to which the joint fit is checked


def require_levels(frame) -> None:
    """Refuse a grouping factor with a single level."""
    for group in frame.groups:
        if group.n_levels < 2:
            raise BayesreproError(
                f"grouping factor '{group.name}' has a single level in the data; a variance component needs "
                f"at least 2 levels: remove {_terms_of(frame, group.name)} or widen --where"
            )


def require_estimable(frame) -> None:
    """Refuse a model frame whose variance components or residual cannot be estimated."""
    sums: GroupedSums = frame.sums
    require_levels(frame)
    for group, size in zip(frame.groups, sums.sizes):
        if size >= sums.n_obs:
            raise BayesreproError(
                f"grouping factor '{group.name}' has {size} levels for {sums.n_obs} observations; its variance "
                f"cannot be told apart from the residual: remove {_terms_of(frame, group.name)} or add replications"
            )
    X = frame.X_cells
    n_parameters = X.shape[1] + len(frame.groups) + 1
    if sums.n_obs < n_parameters:
        raise BayesreproError(
            f"{frame.formula!r} has {X.shape[1]} fixed effect(s) and {len(frame.groups) + 1} variance component(s) "
            f"but only {sums.n_obs} observations; it needs at least {n_parameters}: simplify the formula or add data"
        )
    stats = frame.fixed_products()
    xtx, xty, yty = stats.xtx, stats.xty, stats.yty
    total = _total_squares(sums)
    if _residual(yty, xty, xtx) <= EXACT_FIT * total:
        raise BayesreproError(
            f"the fixed effects of {frame.formula!r} reproduce '{frame.response}' exactly: nothing is left for the "
            "variance components or the residual; remove fixed terms that determine the score"
        )
    for group, part, size in zip(frame.groups, sums.factors, sums.sizes):
        counts, zy, zx = _level_sums(part, size, X, stats.y_shift)
        left_over = counts - np.einsum("lp,lp->l", zx, _solve(xtx, zx.T).T)
        if np.all(left_over <= IN_SPAN * counts):
            term = _term_fixing(frame, zx, counts)
            raise BayesreproError(
                f"grouping factor '{group.name}' cannot be estimated: the fixed-effect term '{term}' already fixes "
                f"every one of its levels (its level indicators lie in the span of the fixed design), so its variance "
                f"is not identified; remove (1|{group.name}) or the term '{term}'"
            )
        schur = xtx - zx.T @ (zx / counts[:, None])
        reduced = xty - zx.T @ (zy / counts)
        if _residual(yty - zy @ (zy / counts), reduced, schur) <= EXACT_FIT * total:
            raise BayesreproError(
                f"'{frame.response}' does not vary within the levels of '{group.name}' beyond the fixed effects: the "
                "residual variance is zero and the model cannot be estimated; check the score column, or analyse "
                f"one score per level of '{group.name}'"
            )
    if _joint_residual(frame) <= EXACT_FIT * total:
        raise BayesreproError(
            f"the fixed effects and grouping factors of {frame.formula!r} reproduce '{frame.response}' exactly (the "
            "scores are a sum of level effects without noise): the residual variance is zero and the model cannot "
            "be estimated; check the score column"
        )


def _terms_of(frame, group: str) -> str:
    """The formula's random-effect terms on ``group``, as written in messages."""
    terms = [term.text for term in frame.spec.random_terms if term.group == group]
    return " + ".join(terms) if terms else f"(1|{group})"


def confounded_pairs(groups, sums: GroupedSums) -> list[str]:
    """Pairs of grouping factors that split the rows identically: only their summed variance is identified."""
    notes = []
    for (i, j), pair in sums.pairs.items():
        if sums.sizes[i] == sums.sizes[j] == len(pair.n):
            notes.append(
                f"grouping factors '{groups[i].name}' and '{groups[j].name}' are confounded (every level of one goes "
                "with exactly one level of the other): only the sum of their variances is identified, the split "
                "between them is arbitrary"
            )
    return notes


def _total_squares(sums: GroupedSums) -> float:
    mean = sums.cell_total.sum() / sums.n_obs
    cell_mean = sums.cell_total / np.maximum(sums.cell_n, 1.0)
    return float(sums.cell_m2.sum() + sums.cell_n @ (cell_mean - mean) ** 2)


def _solve(matrix: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    return np.linalg.lstsq(matrix, rhs, rcond=None)[0]


def _residual(yty: float, xty: np.ndarray, xtx: np.ndarray) -> float:
    """y'y − y'X (X'X)⁺ X'y: the residual sum of squares of a least-squares fit, from cross-products."""
    return float(yty - xty @ _solve(xtx, xty)) if xty.size else float(yty)


def _joint_residual(frame) -> float:
    """The residual sum of squares of y on X and every factor's indicators, the dominant factor eliminated.

    Skipped (infinite) when the remaining dense system would be too large to solve quickly.
    """
    if frame.dense_estimate().dense_size > JOINT_LIMIT or len(frame.groups) < 2:
        return np.inf
    stats = frame.intercept_stats()
    inverse = 1.0 / stats.dominant_counts
    cross = stats.cross.toarray() if hasattr(stats.cross, "toarray") else np.asarray(stats.cross)
    left = np.hstack([stats.dominant_zx, cross])                      # Z1'[X Zr]
    gram = np.block([[stats.xtx, stats.rest_zx.T], [stats.rest_zx, stats.rest_gram]]) - left.T @ (left * inverse[:, None])
    rhs = np.concatenate([stats.xty, stats.rest_zy]) - left.T @ (stats.dominant_zy * inverse)
    return _residual(stats.yty - stats.dominant_zy @ (stats.dominant_zy * inverse), rhs, gram)


def _term_fixing(frame, zx: np.ndarray, counts: np.ndarray) -> str:
    """The first fixed term that alone (with the intercept) fixes every level; else all of them."""
    always = [j for term, columns in frame.fixed_term_columns.items() if term == "Intercept"
              for j in range(columns.start, columns.stop)]
    weights = frame.fixed_products().xtx
    for term, columns in frame.fixed_term_columns.items():
        if term == "Intercept":
            continue
        used = always + list(range(columns.start, columns.stop))
        sub = zx[:, used]
        left_over = counts - np.einsum("lp,lp->l", sub, _solve(weights[np.ix_(used, used)], sub.T).T)
        if np.all(left_over <= IN_SPAN * counts):
            return term
    return " + ".join(term for term in frame.fixed_term_columns if term != "Intercept") or "Intercept"
