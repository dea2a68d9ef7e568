"""The PyMC model of the fast path: only the SDs are sampled, the effects are integrated out.

``sampler="pymc"`` samples it with PyMC's own NUTS; by default the same posterior is
sampled through the compiled density of ``density.py``, whose tests check it against
this model's log density (priors, transforms and likelihood as PyMC states them).
"""

from __future__ import annotations

import numpy as np

from .marginal import MarginalStats, marginal_loglik_pt
from .priors import RESIDUAL, PriorSpec


def sd_name(component: str) -> str:
    """Posterior variable of a component's SD, named as in Bambi's model."""
    return "sigma" if component == RESIDUAL else f"1|{component}_sigma"


def build_fast_model(stats: MarginalStats, priors: PriorSpec):
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
