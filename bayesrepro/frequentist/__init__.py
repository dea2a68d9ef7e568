"""Frequentist engine: ML/REML fits of random-intercept LMMs and likelihood-ratio tests."""

from .glrt import GlrtResult, glrt
from .lmm import LmmFit, fit_lmm

__all__ = ["GlrtResult", "LmmFit", "fit_lmm", "glrt"]
