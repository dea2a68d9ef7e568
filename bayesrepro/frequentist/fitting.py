"""The frequentist entry point: a model frame fitted by the engine its family needs."""

from __future__ import annotations


def fit_frame(frame, family, method: str = "reml", nagq: int = 1):
    """``frame`` fitted as ``family`` (``design.Family``) says: a binary GLMM by ML (``GlmmFit``, ``nagq``
    quadrature nodes), Gaussian scores by ``method`` ("reml" or "ml", ``LmmFit``)."""
    if family.binary:
        from .glmm import fit_glmm_frame

        return fit_glmm_frame(frame, family, nagq)
    from .lmm import fit_model_frame

    return fit_model_frame(frame, method)


def component_variances(fit) -> dict[str, float]:
    """Every variance component with the residual (``MixedFit.components``)."""
    return fit.components
