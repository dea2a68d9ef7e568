"""Frequentist engine: ML/REML fits of random-intercept LMMs, ML fits of binary GLMMs, likelihood-ratio tests."""

from .glmm import GlmmFit, fit_glmm
from .glrt import GlrtResult, glrt
from .lmm import LmmFit, fit_lmm

__all__ = ["GlmmFit", "GlrtResult", "LmmFit", "fit_glmm", "fit_lmm", "glrt"]
