"""The Bayesian engine: Bambi's model of a formula, an exact fast path, reliability posteriors."""

from .fit import BACKENDS, BayesFit, fit_bayes
from .posterior import direction_probability, reliability_summary, rope_probability
from .priors import PriorSpec, default_priors

__all__ = [
    "BACKENDS",
    "BayesFit",
    "PriorSpec",
    "default_priors",
    "direction_probability",
    "fit_bayes",
    "reliability_summary",
    "rope_probability",
]
