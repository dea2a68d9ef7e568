"""φ of a binary model's posterior on the observation scale: ``reliability.phi_observed`` on every draw.

The latent-scale φ (``add_reliability``) is the items' share of the latent variance;
the observation-scale φ is the correlation of two 0/1 scores of the same item that share
no other level, which depends on the fixed part of the linear predictor too. As for the
ML fit (``GlmmFit.phi``), it is taken over the distinct fixed-design rows of the cells,
weighted by their trials, here with every draw's fixed coefficients and variances.
"""

from __future__ import annotations

import numpy as np

from ..design import BinomialCells
from ..reliability import RESIDUAL, phi_observed

NODES = 40             # Gauss–Hermite nodes per dimension, as the ML fit's φ
CHUNK_VALUES = 2**22   # draws are taken in chunks of at most this many integrand values (32 MB)


def add_observed_phi(draws, cells: BinomialCells, link: str, object: str) -> None:
    """Register ``phi_observed`` (chain, draw) with ``draws`` (a ``draws.Draws``), computed from its ``variance`` and
    ``fixed`` draws when first read: seconds of quadrature on every draw that a ranking or a level summary of
    the same posterior does not need."""
    draws.add_deferred("phi_observed", lambda: observed_phi(draws, cells, link, object), attrs={"object": object})


def observed_phi(draws, cells: BinomialCells, link: str, object: str) -> np.ndarray:
    """``phi_observed`` of every draw (chain, draw)."""
    variance = draws["variance"]
    labels = draws.labels("variance")
    shape = variance.shape[:2]
    components = {name: variance[..., k].reshape(-1) for k, name in enumerate(labels) if name != RESIDUAL}
    fixed = draws["fixed"].reshape(-1, cells.n_fixed)
    eta = fixed @ np.asarray(cells.X_fixed, dtype=float).T                       # (draws, fixed-design rows)
    weights = np.bincount(cells.fixed_cell, weights=cells.trials, minlength=len(cells.X_fixed))
    per_draw = eta.shape[1] * NODES * NODES
    size = max(1, CHUNK_VALUES // per_draw)
    values = np.concatenate([
        phi_observed({name: draws_of[start : start + size] for name, draws_of in components.items()}, object, link,
                     eta[start : start + size], weights, NODES)
        for start in range(0, len(eta), size)
    ])
    return values.reshape(shape)
