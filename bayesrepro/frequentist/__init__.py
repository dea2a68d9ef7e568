"""Frequentist engine: ML/REML fits of random-intercept LMMs, ML fits of binary GLMMs, likelihood-ratio tests.

Import what you use from its module (``from bayesrepro.frequentist.lmm import
fit_lmm``, ``.glmm`` for ``fit_glmm``, ``.glrt`` for ``glrt``): the package
itself imports nothing, so that a Gaussian fit does not load the binary
models' modules (SciPy's linear algebra and special functions among them).
"""
