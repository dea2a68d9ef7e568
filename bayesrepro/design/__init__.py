"""The design layer both engines sit on: formula → model frame → sufficient statistics."""

from .formula import FormulaSpec, parse_formula
from .frame import GroupingFactor, ModelFrame, build_model_frame, model_frame
from .gaussian import GaussianStats, gaussian_stats

__all__ = [
    "FormulaSpec",
    "GaussianStats",
    "GroupingFactor",
    "ModelFrame",
    "build_model_frame",
    "gaussian_stats",
    "model_frame",
    "parse_formula",
]
