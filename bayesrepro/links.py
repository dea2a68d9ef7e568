"""Link functions of binomial models: the probability of success as a function of the linear predictor η.

Everything a binomial GLMM needs of its link, in numerically stable forms for
any η: the probability μ(η) and its logarithms, the log-likelihood of
``successes`` out of ``trials``, its derivative in η (the score), the expected
information per trial (the IRLS weight), its derivative in η, and the
observed information (the negative second derivative). For the canonical
logit link the expected and observed information coincide.

The binomial coefficient is left to the caller: it belongs to the rows as
observed, not to the cells they are collapsed into.

The latent-scale residual variance is that of the latent variable whose
threshold gives a success: the standard logistic (π²/3) for logit, the
standard normal (1) for probit.

scipy.special is imported where a link is first evaluated, not with this
module: in this SciPy it loads SciPy's array-API layer, which imports
numpy.f2py and numpy.testing, 0.1-0.2 s that a Gaussian fit (which imports
this module through the design and reliability modules) never uses.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import BayesreproError

LOG_SQRT_2PI = 0.5 * np.log(2.0 * np.pi)


@dataclass(frozen=True)
class CellTerms:
    """What penalized IRLS and the Laplace criterion need of every cell at one η."""

    kernel: np.ndarray           # y·log μ + (n − y)·log(1 − μ)
    score: np.ndarray            # ∂ℓ/∂η
    weight: np.ndarray           # expected information
    observed_weight: np.ndarray  # observed information
    weight_slope: np.ndarray     # d(weight)/dη


class Link:
    name: str
    latent_residual: float

    def terms(self, successes, trials, eta) -> CellTerms:
        """Every per-cell quantity at once (links override this to share their transcendental functions)."""
        return CellTerms(self.loglik_kernel(successes, trials, eta), self.score(successes, trials, eta),
                         self.weight(trials, eta), self.observed_weight(successes, trials, eta),
                         self.weight_derivative(trials, eta))

    def mode_terms(self, successes, trials, eta) -> tuple[np.ndarray, np.ndarray]:
        """The score and the observed information of every cell: what a Newton step for the random effects' mode
        needs (links override this to share their transcendental functions)."""
        return self.score(successes, trials, eta), self.observed_weight(successes, trials, eta)

    def inverse(self, eta):
        """μ(η), the probability of success."""
        raise NotImplementedError

    def log_probabilities(self, eta):
        """log μ(η) and log(1 − μ(η))."""
        raise NotImplementedError

    def derivative(self, eta):
        """dμ/dη."""
        raise NotImplementedError

    def score(self, successes, trials, eta):
        """∂ℓ/∂η of the binomial log-likelihood."""
        raise NotImplementedError

    def weight(self, trials, eta):
        """Expected information −E ∂²ℓ/∂η² (the IRLS weight)."""
        raise NotImplementedError

    def weight_derivative(self, trials, eta):
        """d(weight)/dη."""
        raise NotImplementedError

    def observed_weight(self, successes, trials, eta):
        """Observed information −∂²ℓ/∂η²."""
        raise NotImplementedError

    def loglik_kernel(self, successes, trials, eta):
        """y·log μ + (n − y)·log(1 − μ) of each cell: the binomial log-likelihood without its coefficient."""
        log_mu, log_not_mu = self.log_probabilities(eta)
        return _xlogy_terms(successes, log_mu) + _xlogy_terms(trials - successes, log_not_mu)


class Logit(Link):
    name = "logit"
    latent_residual = float(np.pi**2 / 3.0)

    def loglik_kernel(self, successes, trials, eta):
        # log μ = η − log(1 + e^η), log(1 − μ) = −log(1 + e^η)
        return successes * eta - trials * _softplus(eta)

    def terms(self, successes, trials, eta) -> CellTerms:
        small = np.exp(-np.abs(eta))                  # e^(−|η|) ≤ 1: μ and log(1 + e^η) from one exponential
        mu = np.where(eta >= 0, 1.0, small) / (1.0 + small)
        weight = trials * mu * (1.0 - mu)
        kernel = successes * eta - trials * (np.maximum(eta, 0.0) + np.log1p(small))
        return CellTerms(kernel, successes - trials * mu, weight, weight, weight * (1.0 - 2.0 * mu))

    def mode_terms(self, successes, trials, eta) -> tuple[np.ndarray, np.ndarray]:
        small = np.exp(-np.abs(eta))
        mu = np.where(eta >= 0, 1.0, small) / (1.0 + small)
        return successes - trials * mu, trials * mu * (1.0 - mu)

    def inverse(self, eta):
        from scipy.special import expit

        return expit(eta)

    def log_probabilities(self, eta):
        return -np.logaddexp(0.0, -eta), -np.logaddexp(0.0, eta)

    def derivative(self, eta):
        from scipy.special import expit

        mu = expit(eta)
        return mu * (1.0 - mu)

    def score(self, successes, trials, eta):
        from scipy.special import expit

        return successes - trials * expit(eta)

    def weight(self, trials, eta):
        return trials * self.derivative(eta)

    def weight_derivative(self, trials, eta):
        from scipy.special import expit

        mu = expit(eta)
        return trials * mu * (1.0 - mu) * (1.0 - 2.0 * mu)

    def observed_weight(self, successes, trials, eta):
        return self.weight(trials, eta)


class Probit(Link):
    """μ = Φ(η); with the inverse Mills ratio r(x) = φ(x)/Φ(x), r(−η) = φ(η)/(1 − Φ(η)):
    score y·r(η) − (n − y)·r(−η), expected information n·r(η)·r(−η)."""

    name = "probit"
    latent_residual = 1.0

    def inverse(self, eta):
        from scipy.special import ndtr

        return ndtr(eta)

    def log_probabilities(self, eta):
        from scipy.special import log_ndtr

        return log_ndtr(eta), log_ndtr(-eta)

    def derivative(self, eta):
        return np.exp(-0.5 * eta * eta - LOG_SQRT_2PI)

    def score(self, successes, trials, eta):
        return successes * _mills(eta) - (trials - successes) * _mills(-eta)

    def weight(self, trials, eta):
        return trials * _mills(eta) * _mills(-eta)

    def weight_derivative(self, trials, eta):
        r, s = _mills(eta), _mills(-eta)
        return trials * r * s * (s - r - 2.0 * eta)

    def observed_weight(self, successes, trials, eta):
        r, s = _mills(eta), _mills(-eta)
        return successes * r * (eta + r) + (trials - successes) * s * (s - eta)


LINKS = {"logit": Logit(), "probit": Probit()}


def get_link(name: str) -> Link:
    if name not in LINKS:
        raise BayesreproError(f"link '{name}' is not known; choose one of: {', '.join(LINKS)}")
    return LINKS[name]


def log_binomial_coefficient(successes, trials):
    from scipy.special import gammaln

    return gammaln(trials + 1.0) - gammaln(successes + 1.0) - gammaln(trials - successes + 1.0)


def _softplus(x):
    """log(1 + e^x), stable for any x."""
    return np.maximum(x, 0.0) + np.log1p(np.exp(-np.abs(x)))


def _mills(x):
    """φ(x)/Φ(x), stable in both tails."""
    from scipy.special import log_ndtr

    return np.exp(-0.5 * x * x - LOG_SQRT_2PI - log_ndtr(x))


def _xlogy_terms(count, log_probability):
    """count · log p, with 0 · log 0 = 0."""
    return np.where(count > 0, count * log_probability, 0.0)
