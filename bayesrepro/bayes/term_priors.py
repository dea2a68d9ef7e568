"""Priors of the Gaussian model with correlated random effects (random slopes), readable as a table.

``"scaled"`` (the default) carries the random-intercept set over: Bambi's Normal priors on the coefficients of
the centred design, HalfStudentT(ν = 4, s_y) on the residual SD, and a HalfNormal on every random-effect SD
with 95 % of its mass below s_y on the scale of one observation: s_y / 1.96 for an intercept column,
s_y / (1.96 sd(z)) for a slope column z. An LKJ(1) prior (uniform over correlation matrices) on every term's
correlations.

``"brms"`` — brms's defaults (``get_prior``): flat on the coefficients but the intercept, Student-t(3, m, s) on
the intercept of the centred design, half Student-t(3, 0, s) on every SD and on σ, LKJ(1), where
m = round(median(y), 1) and s = max(2.5, round(mad(y), 1)), mad the median absolute deviation times 1.4826.

Binomial (Bernoulli) models on the latent scale of their link, without a residual SD: ``"scaled"`` takes the
fixed priors of the random-intercept model (Bambi's, ``binary_priors``) and a HalfNormal on every SD with its
scale s_g (``binary_priors``' SD scale, √(2.5² + ...)) for an intercept column and s_g / sd(z) for a slope
column z; ``"brms"`` brms's defaults for the bernoulli and binomial families: flat on the coefficients but the
intercept, Student-t(3, 0, 2.5) on the intercept of the centred design and half Student-t(3, 0, 2.5) on every SD,
LKJ(1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..choices import TERM_PRIOR_FAMILIES
from ..errors import BayesreproError
from .priors import RESIDUAL, SCALED_SD_DIVISOR, STUDENT_NU, default_priors

LKJ_ETA = 1.0
BRMS_NU = 3.0
BRMS_MIN_SCALE = 2.5
BRMS_BINARY_SCALE = 2.5  # brms's location 0 and scale 2.5 of the intercept and the SDs for bernoulli and binomial
MAD_CONSTANT = 1.4826   # R's mad(): the median absolute deviation scaled to the normal SD


@dataclass(frozen=True)
class TermPriors:
    """Every prior of the model; ``inf`` as a scale means flat, ``inf`` as ν a normal (half-normal) prior."""

    family: str
    fixed_names: tuple[str, ...]
    intercept_index: int | None
    x_means: np.ndarray          # column means subtracted from the fixed design (0 for the intercept)
    fixed_mu: np.ndarray
    fixed_sigma: np.ndarray
    fixed_nu: np.ndarray
    sd_labels: tuple[tuple[str, str], ...]   # (term, column) of every random-effect SD, formula order
    sd_nu: np.ndarray
    sd_scale: np.ndarray
    residual_nu: float           # nan for a binomial model, which has no residual SD
    residual_sigma: float
    eta: np.ndarray              # LKJ η of every term

    def table(self) -> pd.DataFrame:
        rows = []
        for j, name in enumerate(self.fixed_names):
            label = "Intercept (centred design)" if j == self.intercept_index else name
            rows.append((label, _location_prior(self.fixed_mu[j], self.fixed_sigma[j], self.fixed_nu[j])))
        for (term, column), nu, scale in zip(self.sd_labels, self.sd_nu, self.sd_scale):
            rows.append((f"sd[{term}: {column}]", _half_prior(nu, scale)))
        terms = list(dict.fromkeys(term for term, _ in self.sd_labels))
        rows += [(f"correlations[{term}]", f"LKJ(eta={eta:g})") for term, eta in zip(terms, self.eta)]
        if not np.isnan(self.residual_sigma):
            rows.append((f"sd[{RESIDUAL}]", _half_prior(self.residual_nu, self.residual_sigma)))
        return pd.DataFrame(rows, columns=["parameter", "prior"])


def term_priors(frame, terms, family: str, binary: bool = False) -> TermPriors:
    """The priors of ``family`` for ``frame`` and its random-effect terms (``slope_model.TermLayout``), of the
    binomial model with ``binary``."""
    if family not in TERM_PRIOR_FAMILIES:
        raise BayesreproError(f"--prior '{family}' is not offered for random slopes; choose one of: "
                              f"{', '.join(TERM_PRIOR_FAMILIES)}")
    if binary:
        return _binary_term_priors(frame, terms, family)
    base = default_priors(frame, "scaled")
    labels = tuple((term.group, column) for term in terms for column in term.columns)
    eta = np.full(len(terms), LKJ_ETA)
    p = len(base.fixed_names)
    if family == "scaled":
        column_sd = np.concatenate([column_sds(term.matrix) for term in terms])
        return TermPriors(family, base.fixed_names, base.intercept_index, base.x_means, base.fixed_mu,
                          base.fixed_sigma, np.full(p, np.inf), labels, np.full(len(labels), np.inf),
                          base.residual_sigma / SCALED_SD_DIVISOR / column_sd, STUDENT_NU, base.residual_sigma, eta)
    location, scale = brms_location_scale(frame.y)
    fixed_mu, fixed_sigma, fixed_nu = np.zeros(p), np.full(p, np.inf), np.full(p, BRMS_NU)
    if base.intercept_index is not None:
        fixed_mu[base.intercept_index], fixed_sigma[base.intercept_index] = location, scale
    return TermPriors(family, base.fixed_names, base.intercept_index, base.x_means, fixed_mu, fixed_sigma, fixed_nu,
                      labels, np.full(len(labels), BRMS_NU), np.full(len(labels), scale), BRMS_NU, scale, eta)


def _binary_term_priors(frame, terms, family: str) -> TermPriors:
    from .binary_priors import binary_priors

    base = binary_priors(frame)
    labels = tuple((term.group, column) for term in terms for column in term.columns)
    eta = np.full(len(terms), LKJ_ETA)
    p = len(base.fixed_names)
    if family == "scaled":
        scale = next(iter(base.group_sigma.values()))   # one scale for every factor
        column_sd = np.concatenate([column_sds(term.matrix) for term in terms])
        return TermPriors(family, base.fixed_names, base.intercept_index, base.x_means, base.fixed_mu,
                          base.fixed_sigma, np.full(p, np.inf), labels, np.full(len(labels), np.inf),
                          scale / column_sd, np.nan, np.nan, eta)
    fixed_sigma = np.full(p, np.inf)
    if base.intercept_index is not None:
        fixed_sigma[base.intercept_index] = BRMS_BINARY_SCALE
    return TermPriors(family, base.fixed_names, base.intercept_index, base.x_means, np.zeros(p), fixed_sigma,
                      np.full(p, BRMS_NU), labels, np.full(len(labels), BRMS_NU),
                      np.full(len(labels), BRMS_BINARY_SCALE), np.nan, np.nan, eta)


def brms_location_scale(y: np.ndarray) -> tuple[float, float]:
    """brms's default location and scale: round(median(y), 1) and max(2.5, round(mad(y), 1))."""
    median = float(np.median(y))
    mad = MAD_CONSTANT * float(np.median(np.abs(y - median)))
    return float(np.round(median, 1)), max(BRMS_MIN_SCALE, float(np.round(mad, 1)))


def column_sds(matrix: np.ndarray) -> np.ndarray:
    """SD over the rows of every model-matrix column of a term; 1 for the intercept's constant column."""
    sds = matrix.std(axis=0)
    constant = np.all(matrix == 1.0, axis=0)
    if not np.all(sds[~constant] > 0):
        raise BayesreproError("a slope column of a random-effect term is constant in the data; drop it from the term")
    return np.where(constant, 1.0, sds)


def _location_prior(mu: float, sigma: float, nu: float) -> str:
    if np.isinf(sigma):
        return "flat"
    if np.isinf(nu):
        return f"Normal(mu={mu:.4g}, sigma={sigma:.4g})"
    return f"StudentT(nu={nu:g}, mu={mu:.4g}, sigma={sigma:.4g})"


def _half_prior(nu: float, scale: float) -> str:
    return f"HalfNormal(sigma={scale:.4g})" if np.isinf(nu) else f"HalfStudentT(nu={nu:g}, sigma={scale:.4g})"
