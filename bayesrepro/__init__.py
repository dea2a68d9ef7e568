"""Inferential reproducibility for ML evaluations: mixed models, GLRTs, variance components and reliability.

>>> import bayesrepro as br
>>> m = br.Model("ter ~ system + (1|sentence_id)", "kreutzer_ter")
>>> fit = m.fit()                     # doctest: +SKIP

The names below are the public API; every other module is internal. They are
loaded when first used, so that ``import bayesrepro`` stays fast and loads
no numerical library.
"""

from .lazy_names import lazy_names as _lazy_names

# public name -> module that defines it
_EXPORTS = {
    "read": "bayesrepro.api.reading",
    "load_dataset": "bayesrepro.api.reading",
    "load_spec": "bayesrepro.api.spec",
    "Model": "bayesrepro.api.model",
    "Fit": "bayesrepro.api.fit",
    "Posterior": "bayesrepro.api.posterior",
    "ModelCheck": "bayesrepro.api.model_check",
    "LevelEffects": "bayesrepro.api.level_effects",
    "GlrtTest": "bayesrepro.api.results",
    "Comparison": "bayesrepro.api.results",
    "PowerPlan": "bayesrepro.api.planning",
    "Ranking": "bayesrepro.api.ranking",
    "krippendorff_alpha": "bayesrepro.instruments.agreement",
    "baselines": "bayesrepro.api.baselines",
    "Baselines": "bayesrepro.api.baselines",
    "bootstrap": "bayesrepro.api.resampling",
    "permutation": "bayesrepro.api.resampling",
    "ResamplingTest": "bayesrepro.api.resampling",
    "budget": "bayesrepro.api.budget",
    "Budget": "bayesrepro.api.budget",
    "agreement": "bayesrepro.api.agreement",
    "Agreement": "bayesrepro.api.agreement",
    "circularity": "bayesrepro.api.circularity",
    "Circularity": "bayesrepro.api.circularity",
    "simulate_binary_grid": "bayesrepro.api.simulation",
    "simulate_liver_sofa": "bayesrepro.api.simulation",
    "simulate_harness_logs": "bayesrepro.api.harness_simulation",
    "BayesreproError": "bayesrepro.errors",
    "NotConvergedError": "bayesrepro.errors",
    "ConvergenceWarning": "bayesrepro.errors",
    "BayesreproWarning": "bayesrepro.errors",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = _lazy_names(__name__, _EXPORTS, globals())
