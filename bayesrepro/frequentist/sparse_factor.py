"""Factorising the symmetric positive definite penalized matrix A = Λ'Z'ZΛ + I, once per θ.

Small or nearly dense systems are factorised densely by LAPACK. Larger ones by SuperLU
(scipy: nothing beyond a pip install of scipy) with diagonal pivots only:
for a symmetric positive definite A that is the LDL' factorisation, so log|A|
is the sum of log U_ii and the fill is that of a sparse Cholesky factor. The
fill-reducing ordering (minimum degree on A + A') is computed once, at the
first θ, and A is permuted by it at every later θ: A's pattern does not
depend on θ, and the ordering took more time than the factorisation.

Where A's leading columns form a diagonal block D (the levels of a
random-intercept factor: the items of a crowd design), they are eliminated
exactly first and only the Schur complement S = C − B'D⁻¹B of the other
levels is factorised: log|A| = Σ log D + log|S|.

Where that order ends in a nearly full block of a thousand columns or more
(a crowd design with uniform rater activity: the raters' graph is random),
``split_factor.py`` factorises the block densely instead of SuperLU.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.linalg
import scipy.sparse as sp
import scipy.sparse.linalg

from .index_ranges import expand_ranges
from .schur_plan import SchurPlan
from .selected_inverse import KEPT_PATTERNS, SelectedInverse
from .split_factor import SplitPlan

# Up to this order a dense Cholesky factor is cheaper than SuperLU's symbolic analysis.
DENSE_ORDER = 800
# A matrix this dense (a fully crossed design's coupling) is factorised densely up to DENSE_MAX_ORDER rows
# (288 MB): its sparse factor would be nearly full, and LAPACK's blocked Cholesky is many times faster there.
DENSE_FRACTION = 0.05
DENSE_MAX_ORDER = 6000
# A factor with at most this many entries a column on average is factorised by SuperLU one column at a time
# (panel size 1): its panels' dense work arrays cost more than they save there (a skewed crowd design's 5,489
# raters, 10 a column: 4.3 ms against 5.6 ms with the default panels of 8; a nearly full tail of 2,800 entries a
# column is 3 times slower so).
THIN_FACTOR = 16


@dataclass(frozen=True)
class Factor:
    logdet: float                                  # log|A|
    solve: Callable[[np.ndarray], np.ndarray]      # A⁻¹ R for a (q, k) array R
    # (A⁻¹)_ij at pairs (rows, cols) of A's pattern; None where the factorisation does not give it (a dense tail)
    inverse_at: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None


class Factoriser:
    """Factorises A at every θ; ``diagonal_lead`` leading columns of A form a diagonal block; ``dense_tail`` False
    keeps a nearly full tail on SuperLU, whose factor gives entries of A⁻¹ (``inverse_at``), where the dense split
    would not."""

    def __init__(self, diagonal_lead: int = 0, dense_tail: bool = True):
        self.lead = diagonal_lead
        self.dense_tail = dense_tail
        self._order: np.ndarray | None = None    # fill-reducing permutation of the (remaining) block
        self._panel: int | None = None           # SuperLU's panel size in that order (None: its default)
        self._inverse: np.ndarray | None = None  # and its inverse
        self._split: SplitPlan | None = None     # where that order ends in a dense block
        self._positions: dict = {}               # where asked entries of A⁻¹ lie in the factor's pattern
        self._pairs: dict = {}                   # and, with a diagonal lead, which entries of S⁻¹ make them
        self._schur: SchurPlan | None = None     # with a diagonal lead factorised by SuperLU: S built by a map

    def __call__(self, a: sp.csc_matrix) -> Factor:
        """log|A| and solves with A; np.linalg.LinAlgError where A is not positive definite."""
        if not self.lead:
            return self._factorise(a)
        n1 = self.lead
        b = a[:n1, n1:]
        rest = None
        if self._schur is not None and self._schur.fits(a, self._order):
            d, schur = self._schur.schur(a)
            rest = self._ordered(schur)
        if rest is None:
            d = a.diagonal()[:n1]
            schur = (a[n1:, n1:] - b.T @ (sp.diags(1.0 / d) @ b)).tocsc()
            rest = self._factorise(schur)
            self._schur = None if self._order is None or _dense(schur) else SchurPlan.of(a, n1, self._order)

        def solve(rhs: np.ndarray) -> np.ndarray:
            first, second = rhs[:n1], rhs[n1:]
            pivots = d[:, None] if rhs.ndim == 2 else d
            x2 = rest.solve(second - b.T @ (first / pivots))
            return np.concatenate([(first - b @ x2) / pivots, x2])

        def inverse_at(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
            return _eliminated_inverse_at(self._eliminated_pairs(b, rows, cols), d, b.tocsr(), rest.inverse_at, rows,
                                          cols)

        return Factor(float(np.log(d).sum()) + rest.logdet, solve, None if rest.inverse_at is None else inverse_at)

    def _eliminated_pairs(self, b: sp.csc_matrix, rows: np.ndarray, cols: np.ndarray) -> _EliminatedPairs:
        # B's pattern is part of the key: entries that are exactly zero at a point (a variance at zero) leave it
        key = (b.indptr.tobytes(), b.indices.tobytes(), rows.tobytes(), cols.tobytes())
        if key not in self._pairs:
            if len(self._pairs) >= KEPT_PATTERNS:
                self._pairs.clear()
            self._pairs[key] = _EliminatedPairs.of(self.lead, b.tocsr(), rows, cols)
        return self._pairs[key]

    def _factorise(self, a: sp.csc_matrix) -> Factor:
        q = a.shape[0]
        if q == 0:
            return Factor(0.0, lambda rhs: np.zeros_like(rhs), lambda rows, cols: np.zeros(len(rows)))
        if _dense(a):
            try:
                lower = scipy.linalg.cholesky(a.toarray(), lower=True, check_finite=False)
            except scipy.linalg.LinAlgError as exc:
                raise np.linalg.LinAlgError(str(exc)) from None
            dense_inverse = functools.cache(
                lambda: scipy.linalg.cho_solve((lower, True), np.eye(q), check_finite=False))
            return Factor(float(2.0 * np.log(np.diag(lower)).sum()),
                          lambda rhs: scipy.linalg.cho_solve((lower, True), rhs, check_finite=False),
                          lambda rows, cols: dense_inverse()[rows, cols])
        if self._order is None:
            self._positions = {}
            first = _superlu(a, "MMD_AT_PLUS_A")
            self._order, self._inverse = np.argsort(first.perm_c), first.perm_c
            self._panel = 1 if first.L.nnz <= THIN_FACTOR * q else None
            self._split = SplitPlan.of(a[self._order][:, self._order].tocsc(), np.diff(first.L.indptr),
                                       DENSE_MAX_ORDER) if self.dense_tail else None
        factor = self._ordered(a[self._order][:, self._order].tocsc())
        if factor is None:   # A's pattern grew past the split plan's (the first θ had a zero): plan again
            self._order = self._split = None
            return self._factorise(a)
        return factor

    def _ordered(self, permuted: sp.csc_matrix) -> Factor | None:
        """The factor of A from A[order][:, order] (SuperLU's route), None where the split plan no longer holds."""
        order, inverse = self._order, self._inverse
        split = self._split.factorise(permuted) if self._split is not None else None
        if split is not None:
            logdet, ordered_solve = split
            return Factor(logdet, lambda rhs: ordered_solve(rhs[order])[inverse])
        if self._split is not None:
            return None
        q = permuted.shape[0]
        lu = _superlu(permuted, "NATURAL", self._panel)
        pivots = lu.U.diagonal()
        if not np.all(pivots > 0):
            raise np.linalg.LinAlgError("the penalized system is not positive definite")

        def solve(rhs: np.ndarray) -> np.ndarray:
            return lu.solve(rhs[order])[inverse]

        def inverse_at(rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
            # with no pivoting (SymmetricMode, diagonal pivots of a positive definite A) U = DL'
            return selected().at(inverse[rows], inverse[cols], positions)

        @functools.cache
        def selected() -> SelectedInverse:
            return SelectedInverse(sp.tril(lu.L, k=-1), pivots)

        positions = self._positions
        natural = np.array_equal(lu.perm_r, np.arange(q)) and np.array_equal(lu.perm_c, np.arange(q))
        return Factor(float(np.log(pivots).sum()), solve, inverse_at if natural else None)


@dataclass(frozen=True)
class _EliminatedPairs:
    """Which entries of S⁻¹ and B make asked entries of A⁻¹ (see ``_eliminated_inverse_at``), for one pattern."""
    rest: np.ndarray                     # asked entries in S's block and where they are in S
    rest_at: tuple[np.ndarray, np.ndarray]
    mixed: np.ndarray                    # asked entries (i, r) with i a lead level: B's row i against S⁻¹'s column r
    mixed_owner: np.ndarray
    mixed_b: np.ndarray
    mixed_at: tuple[np.ndarray, np.ndarray]
    lead: np.ndarray                     # asked entries (i, i): pairs of B's row i
    lead_owner: np.ndarray
    lead_b: tuple[np.ndarray, np.ndarray]
    lead_at: tuple[np.ndarray, np.ndarray]

    @classmethod
    def of(cls, n1: int, b: sp.csr_matrix, rows: np.ndarray, cols: np.ndarray) -> "_EliminatedPairs":
        low, high = np.minimum(rows, cols), np.maximum(rows, cols)
        rest = np.flatnonzero(low >= n1)
        mixed = np.flatnonzero((low < n1) & (high >= n1))
        owner, position = _row_entries(b.indptr, low[mixed])
        lead = np.flatnonzero(high < n1)
        lead_owner, first = _row_entries(b.indptr, low[lead])
        pair_owner, second = _row_entries(b.indptr, low[lead][lead_owner])
        first = first[pair_owner]
        return cls(rest, (low[rest] - n1, high[rest] - n1),
                   mixed, owner, position, (b.indices[position], high[mixed][owner] - n1),
                   lead, lead_owner[pair_owner], (first, second), (b.indices[first], b.indices[second]))


def _eliminated_inverse_at(pairs: _EliminatedPairs, d: np.ndarray, b: sp.csr_matrix, rest_inverse_at,
                           rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
    """(A⁻¹)_ij on A's pattern from the Schur complement's S⁻¹ on its own, A = [D B; B' C] with D diagonal:

        A⁻¹ = [D⁻¹ + D⁻¹B S⁻¹B'D⁻¹   −D⁻¹B S⁻¹]
              [−S⁻¹B'D⁻¹             S⁻¹      ]

    so a lead entry (i, i) or (i, r) needs S⁻¹ only at pairs of B's row i (in S's pattern), as ``pairs`` says."""
    out = np.empty(len(rows))
    out[pairs.rest] = rest_inverse_at(*pairs.rest_at)
    products = b.data[pairs.mixed_b] * rest_inverse_at(*pairs.mixed_at)
    d_mixed = d[np.minimum(rows, cols)[pairs.mixed]]
    out[pairs.mixed] = -np.bincount(pairs.mixed_owner, weights=products, minlength=len(pairs.mixed)) / d_mixed
    first, second = pairs.lead_b
    products = b.data[first] * b.data[second] * rest_inverse_at(*pairs.lead_at)
    d_lead = d[rows[pairs.lead]]
    out[pairs.lead] = 1.0 / d_lead + np.bincount(pairs.lead_owner, weights=products,
                                                 minlength=len(pairs.lead)) / d_lead ** 2
    return out


def _row_entries(indptr: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each entry of the CSR rows ``rows`` (repeats allowed): which of ``rows`` it belongs to, and its position."""
    return expand_ranges(indptr[rows], indptr[rows + 1] - indptr[rows])


def _dense(a: sp.csc_matrix) -> bool:
    q = a.shape[0]
    return q <= DENSE_ORDER or (q <= DENSE_MAX_ORDER and a.nnz > DENSE_FRACTION * q * q)


def _superlu(a: sp.csc_matrix, ordering: str, panel_size: int | None = None):
    try:
        return scipy.sparse.linalg.splu(a, permc_spec=ordering, diag_pivot_thresh=0.0,
                                        options={"SymmetricMode": True},
                                        **({"panel_size": panel_size} if panel_size else {}))
    except RuntimeError as exc:  # SuperLU reports an exactly singular matrix this way
        raise np.linalg.LinAlgError(str(exc)) from None
