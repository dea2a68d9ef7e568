"""The Bayesian engine: Bambi's model of a formula, an exact fast path, reliability posteriors.

The names below are loaded from their modules when first read, so that importing one module of the engine (a
second process that compiles ``gaussian_density``'s kernels, ``gaussian_compile``) imports no other.
"""

from ..lazy_names import lazy_names as _lazy_names

_EXPORTS = {
    "BACKENDS": ".fit",
    "BayesFit": ".fit",
    "fit_bayes": ".fit",
    "direction_probability": ".posterior",
    "reliability_summary": ".posterior",
    "rope_probability": ".posterior",
    "PriorSpec": ".priors",
    "default_priors": ".priors",
}
__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = _lazy_names(__name__, _EXPORTS, globals())
