"""The design layer both engines sit on: formula → model frame → sufficient statistics."""

from .binomial import BinomialCells, binomial_cells
from .family import Family, resolve_family
from .formula import FormulaSpec, parse_formula
from .fixed_and_groups import GroupingFactor
from .frame import ModelFrame, build_model_frame
from .gaussian import GaussianStats, gaussian_stats
from .producers import model_frame

__all__ = [
    "BinomialCells",
    "Family",
    "FormulaSpec",
    "GaussianStats",
    "GroupingFactor",
    "ModelFrame",
    "binomial_cells",
    "build_model_frame",
    "gaussian_stats",
    "model_frame",
    "parse_formula",
    "resolve_family",
]
