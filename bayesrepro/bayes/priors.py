"""Priors of the Bayesian random-intercept model, readable and overridable.

Three families are offered; all keep Bambi's normal priors on the fixed
effects and its HalfStudentT(ν = 4, s_y) on the residual SD, with s_y the SD
of the response and the non-intercept fixed columns centred:

* slope of column j:          Normal(0, 2.5 s_y / sd(x_j))
* intercept (centred design): Normal(mean(y), sqrt((2.5 s_y)^2 + Σ_j σ_j^2 mean(x_j)^2))

``"scaled"`` (the default) — the SD of every (1|g) term has a
HalfNormal(s_y / 1.96) prior: each component is, with 95 % prior
probability, less variable than the scores are altogether. A facet with 2–4
levels (seeds, dropout values) cannot pin its superpopulation SD down, so its
posterior follows this prior; this scale keeps such facets from being
credited with more variance than the whole data show, which would drag φ down.

``"bambi"`` — Bambi's automatic rule: the SD of every (1|g) term has a
HalfNormal prior with the intercept's prior SD as scale (at least 2.5 s_y).
It is the reference the fast path is checked against; on grids with
few-level facets it puts prior-sized variances on them.

``"r2d2"`` — a prior on the decomposition itself (after the R2D2M2 prior,
Aguilar & Bürkner 2023): the total SD τ of the random parts has a
HalfStudentT(ν = 4, s_y) prior and the shares of the variance components
(σ_k^2 = τ^2 ω_k, residual included) are Dirichlet(α, …, α). The share of
the object of measurement — φ itself — then has the readable prior
Beta(α, (K − 1) α).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Mapping

import numpy as np
import pandas as pd

from ..choices import DEFAULT_PRIOR, PRIOR_FAMILIES
from ..errors import BayesreproError
from ..design import ModelFrame

RESIDUAL = "Residual"
BAMBI_SD_MULTIPLIER = 2.5  # Bambi's auto-scale multiplier of the response SD
SCALED_SD_DIVISOR = 1.959964  # the 97.5 % normal quantile: P(HalfNormal(s_y / 1.96) < s_y) = 0.95
STUDENT_NU = 4.0
SCALE_NAMES = (RESIDUAL, "total", "concentration")  # overridable scales besides the grouping factors
# An overridden SD scale lies within this factor of the SD of the scores, and a Dirichlet concentration
# within CONCENTRATION_RANGE: beyond them the prior pins a component at zero or leaves it unbounded, and
# the sampler cannot move (R-hat is then not even defined).
SCALE_RANGE = 1e6
CONCENTRATION_RANGE = (0.01, 100.0)


@dataclass(frozen=True)
class PriorSpec:
    """All prior parameters of one model; ``table()`` shows them."""

    family: str
    fixed_names: tuple[str, ...]
    intercept_index: int | None     # column of X holding the intercept, if any
    fixed_mu: np.ndarray            # prior means of the coefficients of the *centred* design
    fixed_sigma: np.ndarray         # prior SDs, same order
    x_means: np.ndarray             # column means used for centring (0 for the intercept)
    group_sigma: dict[str, float] = field(default_factory=dict)  # HalfNormal scales ("scaled", "bambi")
    residual_nu: float = STUDENT_NU
    residual_sigma: float = 1.0
    total_nu: float = STUDENT_NU    # "r2d2": HalfStudentT of the total SD τ
    total_sigma: float = 1.0
    concentration: float = 1.0      # "r2d2": Dirichlet α of every share

    @property
    def group_names(self) -> list[str]:
        return list(self.group_sigma)

    @property
    def half_normal_sds(self) -> bool:
        """One HalfNormal prior per SD (Bambi's structure), rather than total × shares."""
        return self.family != "r2d2"

    def table(self) -> pd.DataFrame:
        """One row per parameter: the prior as text."""
        rows = []
        for j, name in enumerate(self.fixed_names):
            label = "Intercept (centred design)" if j == self.intercept_index else name
            rows.append((label, f"Normal(mu={self.fixed_mu[j]:.4g}, sigma={self.fixed_sigma[j]:.4g})"))
        if self.half_normal_sds:
            for name, scale in self.group_sigma.items():
                rows.append((f"sd[{name}]", f"HalfNormal(sigma={scale:.4g})"))
            rows.append((f"sd[{RESIDUAL}]", f"HalfStudentT(nu={self.residual_nu:g}, sigma={self.residual_sigma:.4g})"))
        else:
            k = len(self.group_sigma) + 1
            rows.append(("total sd τ", f"HalfStudentT(nu={self.total_nu:g}, sigma={self.total_sigma:.4g})"))
            rows.append(
                (f"shares of {', '.join([*self.group_sigma, RESIDUAL])}", f"Dirichlet(alpha={self.concentration:g} × {k})")
            )
            rows.append(("share of one component", f"Beta({self.concentration:g}, {(k - 1) * self.concentration:g})"))
        return pd.DataFrame(rows, columns=["parameter", "prior"])

    def __str__(self) -> str:
        return self.table().to_string(index=False)

    def scaled(self, factor: float) -> "PriorSpec":
        """The same priors with every SD scale multiplied by ``factor`` (sensitivity checks)."""
        if not factor > 0:
            raise BayesreproError(f"prior scale factor must be positive, got {factor}")
        return replace(
            self,
            group_sigma={k: v * factor for k, v in self.group_sigma.items()},
            residual_sigma=self.residual_sigma * factor,
            total_sigma=self.total_sigma * factor,
        )

    def with_overrides(self, overrides: Mapping[str, float] | None) -> "PriorSpec":
        """Override prior scales by name: a grouping factor, "Residual", "total" or "concentration"."""
        if not overrides:
            return self
        groups = dict(self.group_sigma)
        spec = self
        for name, value in overrides.items():
            value = prior_scale(name, value, groups)
            if name == "concentration":
                low, high = CONCENTRATION_RANGE
                if not low <= value <= high:
                    raise BayesreproError(f"--prior-scale concentration={value:g} must lie from {low:g} to {high:g}")
            else:
                low, high = self.residual_sigma / SCALE_RANGE, self.residual_sigma * SCALE_RANGE
                if not low <= value <= high:
                    raise BayesreproError(
                        f"--prior-scale {name}={value:g} must lie from {low:.3g} to {high:.3g}: within a factor of "
                        f"{SCALE_RANGE:g} of the SD of the scores ({self.residual_sigma:.3g})"
                    )
            if name in groups:
                groups[name] = value
            elif name == RESIDUAL:
                spec = replace(spec, residual_sigma=value)
            elif name == "total":
                spec = replace(spec, total_sigma=value)
            else:
                spec = replace(spec, concentration=value)
        return replace(spec, group_sigma=groups)


def prior_scale(name: str, value, group_names) -> float:
    """One prior override (the command line's ``--prior-scale NAME=VALUE``): a known name and a positive number."""
    known = [*group_names, *SCALE_NAMES]
    if name not in known:
        raise BayesreproError(f"--prior-scale names unknown parameter '{name}'; use one of: {', '.join(known)}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise BayesreproError(f"--prior-scale {name}={value} needs a number, e.g. {name}=0.05") from None
    if not 0 < number < np.inf:
        raise BayesreproError(f"--prior-scale {name}={value} must be a positive finite number")
    return number


def default_priors(frame: ModelFrame, family: str = DEFAULT_PRIOR, concentration: float = 1.0) -> PriorSpec:
    """Data-scaled default priors for a Gaussian random-intercept model (see module text)."""
    if family not in PRIOR_FAMILIES:
        raise BayesreproError(f"prior family '{family}' is unknown; choose one of: {', '.join(PRIOR_FAMILIES)}")
    moments = response_moments(frame)
    y_sd = moments.y_sd
    if not y_sd > 0:
        raise BayesreproError(f"response '{frame.response}' is constant; there is no variance to decompose")
    intercept = _intercept_index(frame.X_cells)
    p = frame.n_fixed
    x_means = moments.x_means.copy()
    fixed_mu = np.zeros(p)
    fixed_sigma = np.zeros(p)
    slopes = [j for j in range(p) if j != intercept]
    for j in slopes:
        fixed_sigma[j] = BAMBI_SD_MULTIPLIER * y_sd / moments.x_sds[j]
    base = BAMBI_SD_MULTIPLIER * y_sd
    intercept_sigma = float(np.sqrt(base**2 + np.sum(fixed_sigma[slopes] ** 2 * x_means[slopes] ** 2)))
    if intercept is not None:
        x_means[intercept] = 0.0
        fixed_mu[intercept] = moments.y_mean
        fixed_sigma[intercept] = intercept_sigma
    else:
        x_means[:] = 0.0  # Bambi centres only when the model has an intercept
    return PriorSpec(
        family=family,
        fixed_names=tuple(frame.fixed_names),
        intercept_index=intercept,
        fixed_mu=fixed_mu,
        fixed_sigma=fixed_sigma,
        x_means=x_means,
        group_sigma={g.name: intercept_sigma if family == "bambi" else y_sd / SCALED_SD_DIVISOR for g in frame.groups},
        residual_nu=STUDENT_NU,
        residual_sigma=y_sd,
        total_nu=STUDENT_NU,
        total_sigma=y_sd,
        concentration=concentration,
    )


@dataclass(frozen=True)
class ResponseMoments:
    """Means and SDs (population, as NumPy's default) of the response and of each fixed-design column."""

    y_mean: float
    y_sd: float
    x_means: np.ndarray
    x_sds: np.ndarray


def response_moments(frame: ModelFrame) -> ResponseMoments:
    """The moments the data-scaled priors need, from the cross-products of the response and the fixed design."""
    stats = frame.fixed_products()
    n = frame.n_obs
    x_means = stats.x_sum / n
    shifted_mean = stats.y_sum / n
    return ResponseMoments(
        y_mean=stats.y_shift + shifted_mean,
        y_sd=float(np.sqrt(max(stats.yty / n - shifted_mean**2, 0.0))),
        x_means=x_means,
        x_sds=np.sqrt(np.maximum(np.diag(stats.xtx) / n - x_means**2, 0.0)),
    )


def priors_from_bambi(model, frame: ModelFrame) -> PriorSpec:
    """Read the priors of a built-or-parsed ``bambi.Model`` of the same formula."""
    component = model.components[model.family.likelihood.parent]
    spec = default_priors(frame, "bambi")
    fixed_mu = spec.fixed_mu.copy()
    fixed_sigma = spec.fixed_sigma.copy()
    for term_name, term in component.common_terms.items():
        columns = frame.fixed_term_columns.get(term_name)
        if columns is None or term.prior.name != "Normal":
            raise BayesreproError(f"fixed term '{term_name}' needs a Normal prior for the fast path")
        fixed_mu[columns] = np.atleast_1d(term.prior.args["mu"])
        fixed_sigma[columns] = np.atleast_1d(term.prior.args["sigma"])
    if component.intercept_term is not None:
        prior = component.intercept_term.prior
        fixed_mu[spec.intercept_index] = float(prior.args["mu"])
        fixed_sigma[spec.intercept_index] = float(prior.args["sigma"])
    groups = {}
    for term_name, term in component.group_specific_terms.items():
        hyper = term.prior.args["sigma"]
        if getattr(hyper, "name", None) != "HalfNormal":
            raise BayesreproError(f"term '{term_name}' needs a HalfNormal prior on its SD for the fast path")
        groups[term_name.split("|", 1)[1]] = float(np.squeeze(hyper.args["sigma"]))
    residual = model.components["sigma"].prior
    if residual.name != "HalfStudentT":
        raise BayesreproError("the residual SD needs a HalfStudentT prior for the fast path")
    return replace(
        spec,
        fixed_mu=fixed_mu,
        fixed_sigma=fixed_sigma,
        group_sigma={g.name: groups[g.name] for g in frame.groups},
        residual_nu=float(residual.args["nu"]),
        residual_sigma=float(residual.args["sigma"]),
    )


def bambi_priors(spec: PriorSpec) -> dict:
    """The variance-component priors of ``spec`` as a ``priors=`` argument of ``bambi.Model``."""
    import bambi as bmb

    if not spec.half_normal_sds:
        raise BayesreproError(f"Bambi's own model takes half-normal SD priors ('scaled' or 'bambi'), not '{spec.family}'")
    priors = {
        f"1|{name}": bmb.Prior("Normal", mu=0, sigma=bmb.Prior("HalfNormal", sigma=scale))
        for name, scale in spec.group_sigma.items()
    }
    priors["sigma"] = bmb.Prior("HalfStudentT", nu=spec.residual_nu, sigma=spec.residual_sigma)
    return priors


def _intercept_index(X: np.ndarray) -> int | None:
    for j in range(X.shape[1]):
        if np.all(X[:, j] == 1.0):
            return j
    return None
