"""Checks of a fitted model against data simulated from it: quantile residuals and the tests read from them.

Every function here works on arrays (the observed scores, a matrix of scores
simulated from the fitted model, the rows' fixed design and level codes), so
one implementation serves the frequentist fit and the posterior predictive.
"""
