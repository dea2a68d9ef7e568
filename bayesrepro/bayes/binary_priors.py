"""Bambi's default priors of a Bernoulli or binomial random-intercept model, from the model frame.

The rules of Bambi 0.17 (``bambi.priors.scaler.PriorScaler``) for a logit or
probit link, which the binary fast path reproduces so that both sample the
same posterior:

* intercept of the centred design (every other column centred at its mean): Normal(0, 1.5);
* a categorical term, or an interaction of categorical terms: Normal(0, 1) for each column;
* a numeric term: Normal(0, 1 / sd(x)); an interaction involving a numeric
  variable: Normal(0, 1 / sd(x)) for one column, and 1 / sd of the row sum of its
  columns for every column of a term with several;
* the SD of every (1|g) term: HalfNormal(sqrt(2.5² + Σ_j σ_j² mean(x_j)²)), the
  sum over the non-intercept columns with their prior SDs σ_j.

Means and SDs are over the rows (population SD, NumPy's default), taken
from the frame's fixed cells and their row counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..design import ModelFrame
from ..design.cells import COUNT
from ..errors import BayesreproError

INTERCEPT_SIGMA = 1.5   # Bambi's intercept prior SD for logit and probit links
GROUP_SIGMA_BASE = 2.5  # Bambi's SD multiplier; the response SD is taken as 1 for these families


@dataclass(frozen=True)
class BinaryPriors:
    """Normal priors of the fixed coefficients (centred design) and HalfNormal scales of the group SDs."""

    fixed_names: tuple[str, ...]
    intercept_index: int | None
    fixed_mu: np.ndarray
    fixed_sigma: np.ndarray
    x_means: np.ndarray     # the centring of each column (0 for the intercept, all 0 without an intercept)
    group_sigma: dict[str, float]

    def table(self) -> pd.DataFrame:
        rows = []
        for j, name in enumerate(self.fixed_names):
            label = "Intercept (centred design)" if j == self.intercept_index else name
            rows.append((label, f"Normal(mu={self.fixed_mu[j]:.4g}, sigma={self.fixed_sigma[j]:.4g})"))
        rows += [(f"sd[{name}]", f"HalfNormal(sigma={scale:.4g})") for name, scale in self.group_sigma.items()]
        return pd.DataFrame(rows, columns=["parameter", "prior"])


def binary_priors(frame: ModelFrame) -> BinaryPriors:
    """Bambi's default priors for a Bernoulli or binomial model of ``frame``'s formula."""
    X = np.asarray(frame.X_cells, dtype=float)
    rows = frame.cells[COUNT].to_numpy(float)
    means = rows @ X / rows.sum()
    intercept = next((j for j in range(X.shape[1]) if np.all(X[:, j] == 1.0)), None)
    sigma = np.ones(X.shape[1])
    terms = frame.fixed_design.terms if frame.fixed_design is not None else {}
    for name, columns in frame.fixed_term_columns.items():
        term = terms.get(name)
        if term is None or term.kind == "intercept":
            continue
        kinds = [c.kind for c in getattr(term, "components", [])] or [term.kind]
        if all(kind == "categoric" for kind in kinds):
            continue
        if term.kind not in ("numeric", "interaction") or any(kind not in ("numeric", "categoric") for kind in kinds):
            raise BayesreproError(f"fixed term '{name}' is of a kind the binary fast path has no Bambi prior for; "
                                  "use backend='bambi'")
        block = X[:, columns]
        if block.shape[1] == 1 or term.kind == "numeric":
            sigma[columns] = 1.0 / _weighted_sd(block, rows)
        else:
            sigma[columns] = 1.0 / _weighted_sd(block.sum(axis=1, keepdims=True), rows)
    slopes = [j for j in range(X.shape[1]) if j != intercept]
    group_scale = float(np.sqrt(GROUP_SIGMA_BASE**2 + np.sum(sigma[slopes] ** 2 * means[slopes] ** 2)))
    mu = np.zeros(X.shape[1])
    if intercept is not None:
        sigma[intercept] = INTERCEPT_SIGMA
        means[intercept] = 0.0
    else:
        means[:] = 0.0  # Bambi centres the design only when the model has an intercept
    return BinaryPriors(tuple(frame.fixed_names), intercept, mu, sigma, means,
                        {name: group_scale for name in frame.group_names})


def _weighted_sd(block: np.ndarray, rows: np.ndarray) -> np.ndarray:
    mean = rows @ block / rows.sum()
    sd = np.sqrt(rows @ (block - mean) ** 2 / rows.sum())
    if np.any(sd == 0):
        raise BayesreproError("a numeric fixed column is constant; drop it from the formula")
    return sd
