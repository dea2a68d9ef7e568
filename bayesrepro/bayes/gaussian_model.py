"""The Gaussian random-intercept posterior over the SDs (the effects integrated out): compiled, and as PyMC states it.

``gaussian_density`` packs the marginal statistics and the priors for the compiled density of
``gaussian_density.py``, which nutpie samples by default; ``build_pymc_model`` is PyMC's model of the
same posterior, sampled by PyMC's own NUTS with ``sampler="pymc"``, against whose log density the tests
check the compiled one (priors, transforms and likelihood as PyMC states them).
"""

from __future__ import annotations

import numpy as np

from .compiled_density import CompiledDensity, Variable, pack
from .gaussian_compile import marginal_address
from .gaussian_density import HALF_NORMAL, R2D2, gaussian_expand, gaussian_logp
from .marginal import MarginalStats, marginal_loglik_pt
from .priors import RESIDUAL, PriorSpec


def sd_name(component: str) -> str:
    """Posterior variable of a component's SD, named as in Bambi's model."""
    return "sigma" if component == RESIDUAL else f"1|{component}_sigma"


def gaussian_density(stats: MarginalStats, priors: PriorSpec) -> CompiledDensity:
    """The compiled posterior over the unconstrained SDs; every draw records each σ (and for "r2d2" τ and ω)."""
    components = [*stats.group_names, RESIDUAL]
    # the likelihood's slots: residual, dominant factor, then the other factors in the order of the small block
    slots = [len(components) - 1, components.index(stats.dominant)] + [components.index(r) for r in stats.rest]
    scales = [priors.group_sigma[name] for name in stats.group_names] + [priors.residual_sigma]
    floats, ints = pack(
        [np.array(scales + [priors.residual_nu, priors.total_nu, priors.total_sigma, priors.concentration]),
         np.asarray(priors.fixed_sigma, dtype=float) ** 2, stats.count_values, stats.count_multiplicity, stats.h,
         stats.wbr, stats.g, stats.wbwb, stats.G, np.array([stats.n_obs, stats.rr])],
        [np.array([HALF_NORMAL if priors.half_normal_sds else R2D2]), np.array(slots), np.asarray(stats.rest_sizes),
         np.array([marginal_address()])],
    )
    variables = [Variable(sd_name(name)) for name in components]
    if not priors.half_normal_sds:
        variables += [Variable("total_sigma"), Variable("shares", ("component",))]
    # nutpie's diagonal mass matrix: a handful of SDs, whose correlations the low-rank correction does not repay
    return CompiledDensity(gaussian_logp, gaussian_expand, floats, ints, len(components), tuple(variables),
                           {"component": components}, _initial_point(stats, priors), low_rank_mass_matrix=False)


def _initial_point(stats: MarginalStats, priors: PriorSpec) -> np.ndarray:
    """Where chains start, before the sampler's jitter: every SD at its prior scale, the shares equal."""
    if priors.half_normal_sds:
        softplus_of_one = np.log(np.e - 1.0)
        return np.array([softplus_of_one] * len(stats.group_names) + [np.log(priors.residual_sigma)])
    centre = np.zeros(len(stats.group_names) + 1)
    centre[0] = np.log(priors.total_sigma)
    return centre


def build_pymc_model(stats: MarginalStats, priors: PriorSpec):
    """A ``pymc.Model`` whose posterior over the SDs equals that of the full random-intercept model."""
    import pymc as pm
    import pytensor.tensor as pt

    components = [*stats.group_names, RESIDUAL]
    with pm.Model(coords={"component": components}) as model:
        if priors.half_normal_sds:
            sd = {RESIDUAL: pm.HalfStudentT(sd_name(RESIDUAL), nu=priors.residual_nu, sigma=priors.residual_sigma)}
            for name in stats.group_names:
                sd[name] = pm.HalfNormal(sd_name(name), sigma=priors.group_sigma[name])
        else:
            total = pm.HalfStudentT("total_sigma", nu=priors.total_nu, sigma=priors.total_sigma)
            shares = pm.Dirichlet(
                "shares", a=np.full(len(components), priors.concentration), dims="component"
            )
            sd = {
                name: pm.Deterministic(sd_name(name), total * pt.sqrt(shares[k]))
                for k, name in enumerate(components)
            }
        loglik = marginal_loglik_pt(
            stats,
            priors.fixed_sigma**2,
            sd[RESIDUAL],
            sd[stats.dominant],
            [sd[name] for name in stats.rest],
        )
        pm.Potential("marginal_loglik", loglik)
    return model
