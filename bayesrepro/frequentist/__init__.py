"""Frequentist engine: ML/REML fits of random-intercept LMMs and likelihood-ratio tests."""

from .lmm import LmmFit, fit_lmm

__all__ = ["LmmFit", "fit_lmm"]
