"""The options users choose among, and their defaults (their ranges: ``limits``).

The command line reads them while it builds its parser, before it knows which
command runs: this module imports nothing, so that registering every command
costs nothing and `bayesrepro vca --help` answers at once. The modules that
use a setting import it from here.
"""

# Bayesian fits
BACKENDS = ("auto", "fast", "bambi")
PRIOR_FAMILIES = ("scaled", "bambi", "r2d2")
DEFAULT_PRIOR = "scaled"
# brms's default priors: fitted on the compiled model with correlated random effects (random slopes)
BRMS_PRIOR = "brms"
TERM_PRIOR_FAMILIES = ("scaled", BRMS_PRIOR)   # the priors of models with random slopes
PRIOR_CHOICES = (*PRIOR_FAMILIES, BRMS_PRIOR)
# "auto": nutpie's NUTS on the compiled density of the fast path, PyMC's NUTS on Bambi's model
SAMPLERS = ("auto", "pymc", "nutpie")

# parametric bootstrap of the side-by-side analyses (compare, report)
DEFAULT_BOOTSTRAP = 300
