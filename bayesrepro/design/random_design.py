"""The random-effects design of lme4's formulation: sparse Z and the pattern of the relative covariance factor Λθ.

Each random-effect term ``(1 + x | g)`` contributes, per level of ``g``, one
block of ``nc`` columns of Z (the term's model matrix, here [1, x], in the
rows of that level) and one lower-triangular ``nc × nc`` block T of Λθ; T's
lower triangle, column by column, is the term's share of θ (Bates et al. 2015,
J. Stat. Softw. 67(1), §2.2). Columns of Z are ordered term by term, level by
level, and within a level by the term's columns, as in lme4.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..errors import BayesreproError, first_line
from .formula import FORMULA_NAMESPACE, FormulaSpec
from .formulae_loader import load_formulae
from .random_terms import quote_name
from .random_checks import BuiltTerm, require_identifiable, require_slope_values

formulae = load_formulae()


@dataclass(frozen=True)
class TermBlock:
    """One random-effect term laid out in Z and θ."""

    group: str                 # lme4's name: the factor, made unique when a factor has several terms ("g.1")
    columns: tuple[str, ...]   # the term's model-matrix columns, e.g. ("Intercept", "Days")
    levels: pd.Index
    offset: int                # first column of Z
    theta_offset: int          # first element of θ
    mean_outer: np.ndarray     # (nc, nc) mean over the rows of z z' for the term's model-matrix row z

    @property
    def nc(self) -> int:
        return len(self.columns)

    @property
    def n_levels(self) -> int:
        return len(self.levels)

    @property
    def n_theta(self) -> int:
        return self.nc * (self.nc + 1) // 2

    @property
    def is_intercept(self) -> bool:
        return self.columns == ("Intercept",)

    def factor_of(self, theta: np.ndarray) -> np.ndarray:
        """T, the term's lower-triangular block of Λθ."""
        rows, cols = lower_triangle(self.nc)
        t = np.zeros((self.nc, self.nc))
        t[rows, cols] = theta[self.theta_offset:self.theta_offset + self.n_theta]
        return t


@dataclass(frozen=True)
class RandomDesign:
    Z: sp.csc_matrix
    blocks: tuple[TermBlock, ...]
    lambda_rows: np.ndarray    # Λθ's non-zeros: row, column and the element of θ each holds
    lambda_cols: np.ndarray
    lambda_index: np.ndarray

    @property
    def q(self) -> int:
        return self.Z.shape[1]

    @property
    def n_theta(self) -> int:
        return sum(block.n_theta for block in self.blocks)

    @property
    def diagonal(self) -> np.ndarray:
        """Which elements of θ are diagonal entries of Λθ (bounded below by 0)."""
        flags = [np.concatenate([[True] + [False] * (block.nc - 1 - j) for j in range(block.nc)])
                 for block in self.blocks]
        return np.concatenate(flags) if flags else np.zeros(0, dtype=bool)

    def start(self) -> np.ndarray:
        """lme4's starting point: identity blocks."""
        return self.diagonal.astype(float)

    def relative_factor(self, theta: np.ndarray) -> sp.csc_matrix:
        """Λθ."""
        return sp.csc_matrix((theta[self.lambda_index], (self.lambda_rows, self.lambda_cols)), shape=(self.q, self.q))

    @property
    def diagonal_factor(self) -> bool:
        """Is Λθ diagonal (every term of one column: random intercepts, or single slopes)?"""
        return all(block.nc == 1 for block in self.blocks)


def random_design(spec: FormulaSpec, data: pd.DataFrame) -> RandomDesign:
    """Z and the Λθ pattern of ``spec``'s random-effect terms on ``data`` (the model frame's rows)."""
    n = len(data)
    blocks, pieces, rows, cols, index, built = [], [], [], [], [], []
    offset = theta_offset = 0
    named: dict[str, int] = {}
    for term, (codes, levels, matrix, columns) in zip(spec.random_terms, term_rows(spec, data)):
        nc = len(columns)
        seen = named.get(term.group, 0)
        named[term.group] = seen + 1
        block = TermBlock(term.group if not seen else f"{term.group}.{seen}", columns, levels, offset,
                          theta_offset, matrix.T @ matrix / max(n, 1))
        blocks.append(block)
        built.append(BuiltTerm(term.text, term.factor, matrix, columns, codes, len(levels)))
        positions = codes[:, None] * nc + np.arange(nc)[None, :]
        pieces.append(sp.csc_matrix((matrix.ravel(), (np.repeat(np.arange(n), nc), positions.ravel())),
                                    shape=(n, len(levels) * nc)))
        lower_rows, lower_cols = lower_triangle(nc)
        starts = offset + np.arange(len(levels))[:, None] * nc
        rows.append((starts + lower_rows[None, :]).ravel())
        cols.append((starts + lower_cols[None, :]).ravel())
        index.append(np.tile(theta_offset + np.arange(len(lower_rows)), len(levels)))
        offset += len(levels) * nc
        theta_offset += block.n_theta
    require_identifiable(built, n)
    Z = sp.hstack(pieces, format="csc") if pieces else sp.csc_matrix((n, 0))
    join = (lambda parts: np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64))
    return RandomDesign(Z, tuple(blocks), join(rows), join(cols), join(index))


def term_rows(spec: FormulaSpec, data: pd.DataFrame) -> list[tuple[np.ndarray, pd.Index, np.ndarray, tuple[str, ...]]]:
    """Per random-effect term: the level code of every row, the levels, the term's model matrix (rows × nc) and
    its column names."""
    return [(*_codes(data, term.factor), *_term_matrix(term, data, spec)) for term in spec.random_terms]


def lower_triangle(nc: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of an nc × nc lower triangle, column by column: the order of θ within a term."""
    rows, cols = np.tril_indices(nc)
    order = np.lexsort((rows, cols))
    return rows[order], cols[order]


def _codes(data: pd.DataFrame, factor: tuple[str, ...]) -> tuple[np.ndarray, pd.Index]:
    if len(factor) == 1:
        codes, levels = pd.factorize(data[factor[0]].astype(str), sort=True)
        return codes.astype(np.int64), pd.Index(levels)
    parts = [data[column].astype(str) for column in factor]
    joined = parts[0].str.cat(parts[1:], sep=":")
    codes, levels = pd.factorize(joined, sort=True)
    return codes.astype(np.int64), pd.Index(levels)


def _term_matrix(term, data: pd.DataFrame, spec: FormulaSpec) -> tuple[np.ndarray, tuple[str, ...]]:
    """The term's model matrix (rows × nc) with lme4's coding: treatment contrasts under an intercept, one
    column per level without."""
    if term.intercept_only:
        return np.ones((len(data), 1)), ("Intercept",)
    require_slope_values(data, term.slope_variables, term.text)
    columns = {v: _as_category(data[v]) for v in term.slope_variables}
    columns[spec.response] = np.zeros(len(data))
    try:
        design = formulae.design_matrices(f"{quote_name(spec.response)} ~ {term.expression}", pd.DataFrame(columns, index=data.index),
                                          na_action="error",
                                          env=formulae.environment.Environment([FORMULA_NAMESPACE])).common
    except Exception as exc:  # formulae surfaces pandas/numpy errors from inside term evaluation
        raise BayesreproError(f"could not build the random-effect term '{term.text}': {first_line(exc)}") from None
    matrix = np.asarray(design.design_matrix, dtype=float)
    names = tuple(design.as_dataframe().columns)
    if np.linalg.matrix_rank(matrix) < matrix.shape[1]:
        raise BayesreproError(f"the columns of random-effect term '{term.text}' ({', '.join(names)}) are linearly "
                              "dependent in the data; drop a slope from the term")
    return matrix, names


def _as_category(values: pd.Series) -> pd.Series:
    if values.dtype == object or pd.api.types.is_string_dtype(values) or pd.api.types.is_bool_dtype(values):
        return values.astype(str).astype("category")
    return values


def factor_variances(variances: dict, terms) -> dict:
    """The variance components with a factor's several terms summed under the factor's name: ``(x || g)``'s
    ``g`` and ``g.1`` (lme4's names, as ``random_design`` gives them) are the one variance that ``(x | g)``
    gives ``g`` with a zero correlation."""
    groups = [term.group for term in terms]
    factor_of = {f"{group}.{later}": group for group in set(groups) for later in range(1, groups.count(group))}
    merged: dict = {}
    for name, value in variances.items():
        key = factor_of.get(name, name)
        merged[key] = merged[key] + value if key in merged else value
    return merged
