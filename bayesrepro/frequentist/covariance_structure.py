"""What a fitted Λθ says: each term's covariance matrix, lme4's VarCorr rows, singularity and term variances.

A term's covariance matrix is Σ = σ² T T' (T its block of Λθ). Rows follow
lme4's ``as.data.frame(VarCorr(m))``: per term its variances (``var2``
empty; ``sdcor`` the SD), then its covariances in column-major order of the
lower triangle (``sdcor`` the correlation), and a last ``Residual`` row. A fit
is singular, as lme4's ``isSingular`` says, when a diagonal entry of Λθ is
below ``BOUNDARY_THETA``: a zero SD, or a correlation of ±1.
"""

from __future__ import annotations

import numpy as np

from ..design.random_design import RandomDesign, TermBlock
from .optimise import BOUNDARY_THETA

TERM_VARIANCE_NOTE = ("with random slopes, a term's variance is the variance its effects add to one observation, "
                      "averaged over the observed rows: mean of z'Σz over the rows, z the term's model-matrix row "
                      "(Johnson 2014, Methods Ecol. Evol. 5:944); random_effects holds each SD and correlation")


def term_covariance(block: TermBlock, theta: np.ndarray, sigma2: float) -> np.ndarray:
    t = block.factor_of(theta)
    return sigma2 * t @ t.T


def varcorr_rows(design: RandomDesign, theta: np.ndarray, sigma2: float) -> list[dict]:
    """lme4's ``as.data.frame(VarCorr(m))``: group, var1, var2, vcov, sdcor."""
    rows = []
    for block in design.blocks:
        sigma = term_covariance(block, theta, sigma2)
        sd = np.sqrt(np.diag(sigma))
        rows += [{"group": block.group, "var1": name, "var2": None, "vcov": float(sigma[i, i]), "sdcor": float(sd[i])}
                 for i, name in enumerate(block.columns)]
        for j in range(block.nc):
            for i in range(j + 1, block.nc):
                product = sd[i] * sd[j]
                correlation = np.clip(sigma[i, j] / product, -1.0, 1.0) if product > 0 else float("nan")
                rows.append({"group": block.group, "var1": block.columns[j], "var2": block.columns[i],
                             "vcov": float(sigma[i, j]), "sdcor": float(correlation)})
    rows.append({"group": "Residual", "var1": None, "var2": None, "vcov": float(sigma2), "sdcor": float(np.sqrt(sigma2))})
    return rows


def singular_terms(design: RandomDesign, theta: np.ndarray) -> list[str]:
    """Terms whose block of Λθ has a diagonal entry at zero (lme4's isSingular, term by term)."""
    return [block.group for block in design.blocks
            if np.any(np.diag(block.factor_of(theta)) < BOUNDARY_THETA)]


def term_variances(design: RandomDesign, theta: np.ndarray, sigma2: float) -> dict[str, float]:
    """One variance per term: σ²θ² for an intercept, the mean of z'Σz over the rows with slopes."""
    return {block.group: float(rows_variance(term_covariance(block, theta, sigma2), block.mean_outer))
            for block in design.blocks}


def rows_variance(covariance: np.ndarray, mean_outer: np.ndarray) -> np.ndarray:
    """The variance a term's effects add to one observation, averaged over the rows: mean of z'Σz = Σ ∘ mean(zz'),
    for one covariance matrix Σ or a stack of them (the last two axes; posterior draws)."""
    return np.sum(covariance * mean_outer, axis=(-2, -1))
