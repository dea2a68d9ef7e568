"""Frequentist engine: ML/REML fits of random-intercept LMMs, ML fits of binary GLMMs, likelihood-ratio tests."""

from .glmm import fit_glmm
from .glmm_fit import GlmmFit
from .glrt import GlrtResult, glrt
from .lmm import fit_lmm
from .lmm_fit import LmmFit

__all__ = ["GlmmFit", "GlrtResult", "LmmFit", "fit_glmm", "fit_lmm", "glrt"]
