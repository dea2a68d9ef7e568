"""The Bayesian Gaussian and binomial models with correlated random effects: layout, compiled density, draws,
reliability.

Every random-effect term ``(1 + x | g)`` has its own SDs and correlation matrix (``slope_density`` states the
posterior; ``collapsed_slope_model`` samples a Gaussian one with the effects integrated out where that is faster,
``binary_slope_model`` a binomial one in coordinates partially centred at the posterior mode).
A term's variance component is, per draw, the variance its effects add to one observation averaged over the
observed rows (Johnson 2014), the definition the REML and Laplace engines report (``covariance_structure``); a
binomial model's are on the latent scale of its link, whose residual is fixed (π²/3 for logit, 1 for probit).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..design.random_design import random_design, term_rows
from ..frequentist.covariance_structure import rows_variance
from ..links import get_link
from ..reliability import RESIDUAL
from .collapsed_slope_model import faster_density
from .compiled_density import CompiledDensity, Variable, pack
from .compiled_sampler import sample_compiled
from .convergence import ess_bulk, ess_tail, r_hat
from .posterior import add_reliability, interval
from .sampling import check_posterior_size
from .binary_density import LINK_CODES
from .slope_density import (binary_centred_expand, binary_centred_logp, binary_slope_expand, binary_slope_logp,
                            effect_variable, slope_expand, slope_logp)
from .term_layout import TermLayout, corr_variable, sd_variable, term_covariances
from .term_priors import TermPriors, column_sds, term_priors


def term_layouts(frame) -> list[TermLayout]:
    frame = frame.require_rows("a Bayesian model with random slopes or brms's priors")
    design = random_design(frame.spec, frame.data)
    return [TermLayout(block.group, columns, codes, levels, matrix, block.mean_outer)
            for block, (codes, levels, matrix, columns) in zip(design.blocks, term_rows(frame.spec, frame.data))]


def term_density(frame, terms: list[TermLayout], priors: TermPriors, link: str | None = None,
                 centring: tuple[list[np.ndarray], np.ndarray] | None = None) -> CompiledDensity:
    """The compiled posterior of ``frame`` with ``terms`` under ``priors``: Gaussian, or binomial with ``link``,
    non-centred, or with ``centring`` (``binary_slope_model.centring``: the levels' information and the start) in
    partially centred coordinates."""
    y, X = np.asarray(frame.y, dtype=float), np.asarray(frame.X, dtype=float) - priors.x_means
    p = X.shape[1]
    Z = np.hstack([term.matrix for term in terms])
    binary = link is not None
    floats = [y, X, priors.fixed_mu, priors.fixed_sigma, priors.fixed_nu, Z, priors.sd_nu, priors.sd_scale,
              np.array([priors.residual_nu, priors.residual_sigma]), priors.eta, priors.x_means]
    sizes = [len(y), p, len(terms), Z.shape[1], -1 if priors.intercept_index is None else priors.intercept_index]
    if binary:
        floats.append(np.ones(len(y)) if frame.trials is None else np.asarray(frame.trials, dtype=float))
        sizes.append(LINK_CODES[link])
        floats += centring[0] if centring is not None else []
    floats, ints = pack(floats, [np.array(sizes), np.array([term.nc for term in terms]),
                                 np.array([len(term.levels) for term in terms]),
                                 np.column_stack([term.codes for term in terms])])
    variables = [Variable("fixed", ("fixed_effect",))] + ([] if binary else [Variable("sigma")])
    coords = {"fixed_effect": list(priors.fixed_names)}
    for term in terms:
        variables.append(Variable(sd_variable(term.group), (f"{term.group}__column",)))
        coords[f"{term.group}__column"] = list(term.columns)
        if term.nc > 1:
            variables.append(Variable(corr_variable(term.group), (f"{term.group}__pair",)))
            coords[f"{term.group}__pair"] = [f"{term.columns[j]}:{term.columns[i]}" for j, i in term.pairs]
    for term in terms:
        variables.append(Variable(effect_variable(term.group), (f"{term.group}__level", f"{term.group}__column")))
        coords[f"{term.group}__level"] = [str(level) for level in term.levels]
    first = p + (0 if binary else 1)
    n_dim = first + sum(term.nc * (term.nc + 1) // 2 + len(term.levels) * term.nc for term in terms)
    # nutpie's diagonal mass matrix: on sleepstudy and simulated designs of 60 subjects its bulk ESS of the
    # correlation per draw was 1.5-3.5 times that of the low-rank correction, at fewer seconds per gradient
    logp, expand = (binary_slope_logp, binary_slope_expand) if binary else (slope_logp, slope_expand)
    if centring is not None:
        logp, expand = binary_centred_logp, binary_centred_expand
    start = _initial_point(X, y, terms, n_dim, binary) if centring is None else centring[1]
    return CompiledDensity(logp, expand, floats, ints, n_dim, tuple(variables), coords, start,
                           low_rank_mass_matrix=False)


def fit_terms(frame, prior: str, object: str, settings, link: str | None = None):
    """Posterior draws of the Gaussian model (binomial with ``link``) with the frame's random-effect terms; returns
    (``draws.Draws``, prior table, term layouts). Records every SD, correlation, σ (Gaussian), the fixed
    coefficients, the components and φ."""
    terms = term_layouts(frame)
    priors = term_priors(frame, terms, prior, binary=link is not None)
    density = term_density(frame, terms, priors, link)
    if link is None:  # a binomial likelihood has no closed-form integral over the effects
        density = faster_density(density, frame, terms, priors)
    else:
        from .binary_slope_model import centring

        density = term_density(frame, terms, priors, link, centring(density, frame, terms, priors, link))
    recorded = any(v.name == effect_variable(terms[0].group) for v in density.variables)
    # per draw: coefficients, σ, every SD and correlation, the effects the density records, a variance and a share
    # per component, φ
    check_posterior_size(settings, len(priors.fixed_names) + 1 + sum(t.nc * (t.nc + 1) // 2 for t in terms)
                         + (sum(t.nc * len(t.levels) for t in terms) if recorded else 0) + 2 * (len(terms) + 1) + 1)
    draws = sample_compiled(density, settings)
    if not recorded:
        from .collapsed_effects import add_conditional_effects

        add_conditional_effects(draws, frame, terms, settings.seed)
    variances = {term.group: rows_variance(term_covariances(draws, term), term.mean_outer) for term in terms}
    variances[RESIDUAL] = draws["sigma"] ** 2 if link is None else np.full(draws.shape, get_link(link).latent_residual)
    add_reliability(draws, variances, object, terms=frame.spec.random_terms)
    return draws, priors.table(), terms


def diagnosed_variables(terms: list[TermLayout], binary: bool = False) -> list[str]:
    names = ([] if binary else ["sigma"]) + [sd_variable(term.group) for term in terms]
    return names + [corr_variable(term.group) for term in terms if term.nc > 1]


def random_effect_rows(draws, terms: list[TermLayout], prob: float) -> list[dict]:
    """lme4's VarCorr rows (group, var1, var2) with posterior median and central ``prob`` interval of each SD
    and correlation, and their R-hat and bulk and tail ESS; a last Residual row for σ (Gaussian models)."""
    rows = []
    for term in terms:
        sd = draws[sd_variable(term.group)]
        rows += [_row(term.group, column, None, sd[..., c], prob) for c, column in enumerate(term.columns)]
        if term.nc > 1:
            corr = draws[corr_variable(term.group)]
            rows += [_row(term.group, term.columns[j], term.columns[i], corr[..., k], prob)
                     for k, (j, i) in enumerate(term.pairs)]
    if "sigma" in draws:
        rows.append(_row(RESIDUAL, None, None, draws["sigma"], prob))
    return rows


def _row(group, var1, var2, values: np.ndarray, prob: float) -> dict:
    median, low, high = interval(values, prob)
    with np.errstate(invalid="ignore", divide="ignore"):
        figures = {"r_hat": r_hat(values), "ess_bulk": ess_bulk(values), "ess_tail": ess_tail(values)}
    return {"group": group, "var1": var1, "var2": var2, "median": median, "low": low, "high": high,
            **{k: float(v) for k, v in figures.items()}}


def _initial_point(X: np.ndarray, y: np.ndarray, terms: list[TermLayout], n_dim: int, binary: bool) -> np.ndarray:
    """Chains start from least squares for the coefficients and σ, every random-effect SD at half of σ on an
    observation's scale, the correlations and effects at zero; a binomial model's coefficients at 0 and its SDs at 1
    on the latent scale of one observation."""
    start = np.zeros(n_dim)
    offset, log_sd = X.shape[1], 0.0
    if not binary:
        beta, *_ = np.linalg.lstsq(X, y, rcond=None)
        log_sigma = np.log(max(float(np.std(y - X @ beta)), 1e-12 * max(float(np.std(y)), 1.0)))
        start[:offset], start[offset] = beta, log_sigma
        offset, log_sd = offset + 1, log_sigma - np.log(2.0)
    for term in terms:
        start[offset:offset + term.nc] = log_sd - np.log(column_sds(term.matrix))
        offset += term.nc * (term.nc + 1) // 2 + len(term.levels) * term.nc
    return start
