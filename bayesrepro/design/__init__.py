"""The design layer both engines sit on: formula → model frame → sufficient statistics.

The names below are loaded from their modules when first used, so that a
command imports only the modules it needs (a Gaussian fit needs neither the
binomial cells nor the producers of grouped sums).
"""

from ..lazy_names import lazy_names as _lazy_names

# name -> module of this package that defines it (relative)
_EXPORTS = {
    "BinomialCells": ".binomial",
    "binomial_cells": ".binomial",
    "Family": ".family",
    "resolve_family": ".family",
    "FormulaSpec": ".formula",
    "parse_formula": ".formula",
    "GroupingFactor": ".fixed_and_groups",
    "ModelFrame": ".frame",
    "build_model_frame": ".frame",
    "GaussianStats": ".gaussian",
    "gaussian_stats": ".gaussian",
    "model_frame": ".producers",
}
__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = _lazy_names(__name__, _EXPORTS, globals())
