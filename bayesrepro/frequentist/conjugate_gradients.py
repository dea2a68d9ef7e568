"""Preconditioned conjugate gradients for many right-hand sides at once.

Each column of the right-hand side is its own CG run (its own step lengths),
but the products with the matrix are taken for all the columns still running
in one sparse-times-dense product, which costs little more than a single one
per column. A column stops when its residual falls below ``rtol`` times its
right-hand side's norm; it leaves the block then, so the later products are
narrower.
"""

from __future__ import annotations

from typing import Callable

import numpy as np


class NotConverged(ArithmeticError):
    """Conjugate gradients did not reach the tolerance within the iterations allowed."""


def solve_many(apply: Callable[[np.ndarray], np.ndarray], rhs: np.ndarray,
               preconditioner: np.ndarray | Callable[[np.ndarray], np.ndarray], start: np.ndarray | None = None,
               rtol: float = 1e-8, max_iterations: int = 1000) -> tuple[np.ndarray, int]:
    """Solve ``A X = rhs`` for a symmetric positive definite A given by its product.

    Parameters
    ----------
    apply : callable
        ``apply(V)`` returns ``A @ V`` for a block ``V`` of columns.
    rhs : numpy.ndarray
        The right-hand sides, one per column (n × m).
    preconditioner : numpy.ndarray or callable
        1 / diag(A), of length n (Jacobi's), or a function returning M⁻¹ R for a block R of columns, M an
        approximation of A (the factor of A at a nearby point).
    start : numpy.ndarray, optional
        A first guess of the solutions (a previous solve of a nearby system); zeros by default.
    rtol : float, default 1e-8
        The relative residual ‖b − Ax‖ / ‖b‖ at which a column stops.
    max_iterations : int, default 1000
        Iterations after which the solve is given up (``NotConverged``).

    Returns
    -------
    solutions : numpy.ndarray
        X, of the shape of ``rhs``.
    iterations : int
        The iterations of the slowest column.
    """
    rhs = np.asarray(rhs, dtype=float)
    solutions = np.zeros_like(rhs) if start is None else np.array(start, dtype=float)
    targets = rtol * np.linalg.norm(rhs, axis=0)
    residual = rhs - apply(solutions) if start is not None else rhs.copy()
    active = np.flatnonzero(np.linalg.norm(residual, axis=0) > targets)
    if not len(active):
        return solutions, 0
    precondition = preconditioner if callable(preconditioner) else lambda block: block * preconditioner[:, None]
    x, r = solutions[:, active], residual[:, active]
    z = precondition(r)
    p = z.copy()
    rz = np.einsum("ij,ij->j", r, z)
    for iteration in range(1, max_iterations + 1):
        q = apply(p)
        alpha = rz / np.einsum("ij,ij->j", p, q)
        x += alpha * p
        r -= alpha * q
        running = np.linalg.norm(r, axis=0) > targets[active]
        if not running.all():
            solutions[:, active[~running]] = x[:, ~running]
            if not running.any():
                return solutions, iteration
            active, x, r, p, rz = active[running], x[:, running], r[:, running], p[:, running], rz[running]
        z = precondition(r)
        rz_next = np.einsum("ij,ij->j", r, z)
        p = z + (rz_next / rz) * p
        rz = rz_next
    raise NotConverged(f"conjugate gradients did not reach a relative residual of {rtol:g} in {max_iterations} "
                       f"iterations ({len(active)} of {rhs.shape[1]} right-hand sides left)")
