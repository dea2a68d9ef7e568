"""The options users choose among, with their defaults and limits.

The command line reads them while it builds its parser, before it knows which
command runs: this module imports nothing, so that registering every command
costs nothing and `bayesrepro vca --help` answers at once. The modules that
use a setting import it from here.
"""

# Bayesian fits
BACKENDS = ("auto", "fast", "bambi")
PRIOR_FAMILIES = ("scaled", "bambi", "r2d2")
DEFAULT_PRIOR = "scaled"
# "auto": nutpie's NUTS on the compiled density of the fast path, PyMC's NUTS on Bambi's model
SAMPLERS = ("auto", "pymc", "nutpie")
# R-hat compares chains and ESS estimates need draws enough to see autocorrelation:
# below these the convergence diagnostics that every result carries are meaningless.
MIN_CHAINS = 2
MIN_DRAWS = 100

# parametric bootstrap of the side-by-side analyses (compare, report)
DEFAULT_BOOTSTRAP = 300
# The ends of a 95 % percentile interval are the 2.5 % and 97.5 % quantiles of the
# replicates: with fewer than 100 they rest on one or two replicates each.
MIN_BOOTSTRAP = 100
