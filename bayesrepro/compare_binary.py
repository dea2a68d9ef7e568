"""The side-by-side comparison for 0/1 scores: the binary GLMM by ML next to the posterior of the same model.

Everything ``compare`` shows for Gaussian scores, on the latent scale of the
link (residual π²/3 for logit, 1 for probit): every variance component, its
percent of the total and φ, the ML (Laplace) estimate with a
parametric-bootstrap interval (0/1 scores simulated from the fit and refitted)
next to the posterior median and interval; φ on the observation scale too (the
correlation of two 0/1 scores of one item), both engines alike; the GLRT of the compared factor;
its pairwise contrasts on the link scale (Wald z, Holm within each family)
next to the posterior of the same linear combinations. Leave-one-item-out LOO
is not computed for binary models.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd

from .design import BinomialCells, Family, ModelFrame
from .errors import BayesreproError
from .frequentist.analyses import Comparison, compare_binary_levels
from .frequentist.contrasts import Z_95
from .frequentist.glmm import fit_binomial_cells
from .frequentist.glmm_fit import GlmmFit
from .links import get_link


def glmm_bootstrap(fit: GlmmFit, cells: BinomialCells, n_boot: int, rng: np.random.Generator,
                   object: str | None = None,
                   progress=None) -> tuple[pd.DataFrame, int, np.ndarray | None]:
    """Latent variance components of ``n_boot`` data sets simulated from ``fit``, how many refits did not
    converge, and (given the ``object`` of measurement) each refit's observation-scale φ.

    Each replicate draws new level effects of every grouping factor from the
    fitted variances, keeps Xβ̂, draws the successes of every cell (rows that
    share a cell share their linear predictor, so their sum is binomial) and
    refits by ML. ``progress(fraction)`` is told how far it got.
    """
    link = get_link(fit.link)
    mean = cells.X @ fit.beta
    rows, observed, unconverged = [], [], 0
    for done in range(n_boot):
        eta = mean.copy()
        for name, codes, levels in zip(cells.group_names, cells.codes, cells.levels):
            eta += rng.normal(0.0, math.sqrt(fit.variances[name]), len(levels))[codes]
        successes = rng.binomial(cells.trials.astype(np.int64), link.inverse(eta)).astype(float)
        refit = fit_binomial_cells(dataclasses.replace(cells, successes=successes), fit.link, 1, fit.family)
        unconverged += not refit.converged
        rows.append(refit.components)
        if object is not None:
            observed.append(refit.phi_observed(object))
        if progress is not None:
            progress((done + 1) / n_boot)
    return (pd.DataFrame(rows, columns=list(fit.components)), unconverged,
            np.array(observed) if object is not None else None)


def binary_comparison(frame: ModelFrame, family: Family, factor: str, by: str | None, h0: str | None) -> Comparison:
    """GLRT of ``factor`` (or of its interaction with ``by``), means and contrasts, shaped as ``compare`` reads them."""
    from .frequentist.glrt import BINARY_REFERENCE_REASON, BINARY_SLOPES_REASON

    reason = BINARY_SLOPES_REASON if frame.spec.has_slopes else BINARY_REFERENCE_REASON
    comparison = compare_binary_levels(frame, family, factor, by, h0)
    contrasts, link = comparison.contrasts, comparison.fit.link
    if contrasts.empty:
        raise BayesreproError(f"factor '{factor}' has a single level in the data; there is nothing to compare")
    contrasts["low"] = contrasts["estimate"] - Z_95 * contrasts["std_error"]
    contrasts["high"] = contrasts["estimate"] + Z_95 * contrasts["std_error"]
    contrasts["reference"] = "Wald z"
    return dataclasses.replace(comparison, test=dataclasses.replace(comparison.test, reason=reason),
                               means=comparison.means.rename(columns={link: "estimate", f"{link}_se": "std_error"}))
