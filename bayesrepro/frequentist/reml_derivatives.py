"""Φ = Var(β̂) of a REML fit and its derivatives in the variance parameters, as the small-sample tests read them.

Built from the sufficient statistics for random intercepts (``ddf``) or from the rows for random slopes
(``slope_ddf``); ``ddf.SmallSampleInference`` reads either.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# The algebra holds dense matrices of (levels + fixed effects) squared: 6,000
# of them take 290 MB each and a few seconds per product on two cores.
DENSE_LIMIT = 6000


@dataclass(frozen=True)
class VarianceDerivatives:
    """Φ = Var(β̂) of a REML fit and what its dependence on the variance parameters needs."""

    names: list[str]                    # components in formula order, then "Residual"
    variances: np.ndarray               # ψ
    free: np.ndarray                    # components estimated above zero (and the residual)
    covariance: np.ndarray              # Φ
    jacobian: list[np.ndarray]          # ∂Φ/∂ψ_r (slope models: ∂Φ/∂(θ, σ), see ``slope_ddf``)
    p_matrices: list[np.ndarray]        # P_r
    q_matrices: dict | None             # (r, s), r ≤ s → Q_rs; None when built for Satterthwaite alone
    information2: np.ndarray            # tr(PV_rPV_s)
    observed_information: np.ndarray    # −∂²ℓ_R/∂ψ_r∂ψ_s (slope models: in (θ, σ))


def scaled_derivatives(names: list[str], variances: np.ndarray, free: np.ndarray, sigma2: float,
                       phi_scaled: np.ndarray, sandwich: list, q_scaled: dict | None, trace: np.ndarray,
                       quadratic: np.ndarray) -> VarianceDerivatives:
    """``VarianceDerivatives`` from the products computed with W = V/σ²: each V⁻¹ or P brings 1/σ²."""
    information2 = trace / sigma2**2
    return VarianceDerivatives(
        names=names,
        variances=variances,
        free=free,
        covariance=sigma2 * phi_scaled,
        jacobian=[phi_scaled @ s @ phi_scaled for s in sandwich],
        p_matrices=[-s / sigma2**2 for s in sandwich],
        q_matrices=None if q_scaled is None else {key: value / sigma2**3 for key, value in q_scaled.items()},
        information2=information2,
        observed_information=quadratic / sigma2**3 - 0.5 * information2,
    )
