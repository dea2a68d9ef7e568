"""The compiled Takahashi recurrences against the same recurrences in Python and against a dense inverse."""

import numpy as np
import pytest
import scipy.sparse as sp
import scipy.sparse.linalg

from bayesrepro.frequentist.takahashi_kernel import takahashi


def python_takahashi(indptr, indices, lower, inverse_pivots, values, diagonal, done) -> bool:
    """The recurrences of ``selected_inverse.py`` written out in Python, operation for operation."""
    n = len(indptr) - 1
    mark = np.full(n, -1, dtype=np.int64)
    for j in range(done - 1, -1, -1):
        start, end = indptr[j], indptr[j + 1]
        for p in range(start, end):
            mark[indices[p]] = p
            values[p] = 0.0
        for p in range(start, end):
            k, l_kj = indices[p], lower[p]
            values[p] -= diagonal[k] * l_kj
            hits = 0
            for q in range(indptr[k], indptr[k + 1]):
                m = mark[indices[q]]
                if m >= 0:
                    hits += 1
                    values[m] -= values[q] * l_kj
                    values[p] -= values[q] * lower[m]
            if hits != end - p - 1:
                return False
        z = inverse_pivots[j]
        for p in range(start, end):
            z -= lower[p] * values[p]
            mark[indices[p]] = -1
        diagonal[j] = z
    return True


def factor_of(n: int, density: float, seed: int):
    """L (strict lower, CSC, sorted) and D of a random sparse positive definite matrix in a fill-reducing order."""
    a = sp.random(n, n, density=density, random_state=seed)
    a = (a + a.T + sp.eye(n) * (2.0 + n * density)).tocsc()
    options = dict(diag_pivot_thresh=0.0, options={"SymmetricMode": True})
    order = np.argsort(scipy.sparse.linalg.splu(a, permc_spec="MMD_AT_PLUS_A", **options).perm_c)
    ordered = a[order][:, order].tocsc()
    lu = scipy.sparse.linalg.splu(ordered, permc_spec="NATURAL", **options)
    lower = sp.tril(lu.L, k=-1).tocsc()
    lower.sort_indices()
    return ordered, lower, lu.U.diagonal()


def run(kernel, lower, pivots, done):
    values, diagonal = np.zeros(lower.nnz), np.zeros(lower.shape[0])
    closed = kernel(lower.indptr.astype(np.int64), lower.indices.astype(np.int64), lower.data.copy(),
                    1.0 / pivots, values, diagonal, done)
    return closed, values, diagonal


@pytest.mark.parametrize("n, density, seed", [(60, 0.05, 1), (200, 0.01, 2), (150, 0.03, 3)])
def test_the_compiled_recurrences_equal_python_and_a_dense_inverse(n, density, seed):
    ordered, lower, pivots = factor_of(n, density, seed)
    closed, values, diagonal = run(takahashi, lower, pivots, n)
    expected_closed, expected_values, expected_diagonal = run(python_takahashi, lower, pivots, n)
    assert closed and expected_closed
    # the same IEEE operations in the same order: equal to the last bit
    np.testing.assert_array_equal(values, expected_values)
    np.testing.assert_array_equal(diagonal, expected_diagonal)
    inverse = np.linalg.inv(ordered.toarray())
    rows = lower.indices
    cols = np.repeat(np.arange(n), np.diff(lower.indptr))
    np.testing.assert_allclose(values, inverse[rows, cols], rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(diagonal, np.diag(inverse), rtol=1e-10)


def test_columns_from_done_on_are_left_to_the_caller():
    _, lower, pivots = factor_of(80, 0.04, 4)
    diagonal = np.full(80, 7.0)
    values = np.zeros(lower.nnz)
    takahashi(lower.indptr.astype(np.int64), lower.indices.astype(np.int64), lower.data.copy(), 1.0 / pivots,
              values, diagonal, 0)
    assert np.all(diagonal == 7.0)


def test_a_pattern_not_closed_under_elimination_is_reported():
    # column 0 holds rows 1 and 2, but column 1 lacks row 2: not the pattern of a filled factor
    lower = sp.csc_matrix((np.array([0.1, 0.2]), np.array([1, 2]), np.array([0, 2, 2, 2])), shape=(3, 3))
    closed, _, _ = run(takahashi, lower, np.ones(3), 3)
    assert not closed
    assert not run(python_takahashi, lower, np.ones(3), 3)[0]


def test_arrays_of_another_type_are_refused_before_any_pointer_is_taken():
    _, lower, pivots = factor_of(30, 0.1, 5)
    with pytest.raises(TypeError, match="int64"):
        takahashi(lower.indptr.astype(np.int32), lower.indices.astype(np.int64), lower.data.copy(), 1.0 / pivots,
                  np.zeros(lower.nnz), np.zeros(30), 30)
