"""The design layer both engines sit on: formula → model frame → sufficient statistics.

The names below are loaded from their modules when first used, so that a
command imports only the modules it needs (a Gaussian fit needs neither the
binomial cells nor the producers of grouped sums).
"""

import importlib

# name -> module of this package that defines it
_EXPORTS = {
    "BinomialCells": "binomial",
    "binomial_cells": "binomial",
    "Family": "family",
    "resolve_family": "family",
    "FormulaSpec": "formula",
    "parse_formula": "formula",
    "GroupingFactor": "fixed_and_groups",
    "ModelFrame": "frame",
    "build_model_frame": "frame",
    "GaussianStats": "gaussian",
    "gaussian_stats": "gaussian",
    "model_frame": "producers",
}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
