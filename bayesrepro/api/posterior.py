"""``br.Posterior``: the posterior of a model's variance components and φ, as ``phi`` reports it."""

from __future__ import annotations

import pandas as pd

from .display import Result, public


class Posterior(Result):
    """Posterior draws of every variance component and of φ, with the sampler's diagnostics.

    Returned by ``Model.sample``.

    Parameters
    ----------
    bayes : BayesFit
        The Bayesian engine's fit.
    prob : float
        Probability of every central interval the summary and ``to_dict`` show.

    Attributes
    ----------
    components : pandas.DataFrame
        One row per component (residual included; latent scale for binary scores): posterior median
        ``variance`` with its interval (``low``, ``high``) and its share of the total (``share``, ``share_low``,
        ``share_high``).
    phi : dict
        φ of the object of measurement: posterior ``median``, interval ``low`` and ``high``, ``prob``, ``scale``
        ("observed", or "latent" for binary scores) and ``bands``, the posterior probability of each Koo & Li band.
    idata : arviz.InferenceData
        Every posterior variable, for ArviZ.
    random_effects : pandas.DataFrame
        Models with random slopes (or ``prior="brms"``): one row per random-effect SD and correlation and a last
        ``Residual`` row for σ of Gaussian models (``group``, ``var1``, ``var2``), with posterior ``median``, interval ``low`` and
        ``high``, ``r_hat``, ``ess_bulk`` and ``ess_tail``.
    """

    def __init__(self, bayes, prob: float = 0.95):
        self.bayes = bayes
        self.prob = prob
        self.object = bayes.object

    @property
    def components(self) -> pd.DataFrame:
        """Posterior median, interval and share of the total of every component."""
        return self.bayes.summary(self.prob)

    @property
    def phi(self) -> dict:
        """Posterior median and interval of φ, and the probability of each Koo & Li band."""
        return self.bayes.phi(self.prob)

    @property
    def random_effects(self) -> pd.DataFrame:
        """Posterior median, interval, R-hat and ESS of every random-effect SD and correlation, and of σ."""
        return pd.DataFrame(self.bayes.random_effects(self.prob))

    @property
    def idata(self):
        """The draws as ArviZ InferenceData."""
        return self.bayes.idata

    @property
    def converged(self) -> bool:
        """Whether R-hat, ESS and divergences say the sampler converged."""
        return self.bayes.diagnostics.converged

    def contrasts(self, term: str) -> pd.DataFrame:
        """Posterior differences of the level means of a categorical fixed term, every pair of levels.

        Parameters
        ----------
        term : str
            A categorical fixed effect of the model, e.g. ``"system"``.

        Returns
        -------
        pandas.DataFrame
            One row per pair: posterior median of the difference, its central interval at ``prob`` and the
            probability of direction (link scale for binary scores).
        """
        return self.bayes.contrasts(term, self.prob)

    # --- model checks: the posterior predictive against the data (model_checks) ---

    @public
    def check(self, seed: int | None = 0, simulations: int = 250):
        """Check the model against data sets drawn from the posterior predictive, level effects drawn afresh.

        Parameters
        ----------
        seed : int or None, default 0
            Seed of the predictive draws and of the randomized residuals (None: a fresh one).
        simulations : int, default 250
            Predictive data sets, one per posterior draw evenly spaced over the chains (19 to 10,000).

        Returns
        -------
        ModelCheck
            The tests of ``Fit.check`` read against the predictive data sets, the Q–Q plot of the quantile
            residuals and ArviZ's posterior predictive checks of the scores and of the mean per level;
            ``to_dict()`` equals ``bayesrepro check --bayes --json``. Models with random intercepts.
        """
        from ..model_checks.posterior import check_posterior

        return check_posterior(self, seed, simulations)

    # --- end of model checks ---

    def _problems(self) -> list[str]:
        return [] if self.converged else [f"the sampler did not converge ({self.bayes.diagnostics.line()})"]

    def _payload(self) -> dict:
        return self.bayes.to_dict(self.prob)

    def _text(self) -> str:
        return self.bayes.describe(self.prob)

    def plot(self, title: str | None = None):
        """The posterior density of φ over the Koo & Li bands.

        Parameters
        ----------
        title : str, optional
            The figure's title (default: "Reliability phi and the Koo & Li bands").

        Returns
        -------
        matplotlib.figure.Figure
            A histogram of the draws of φ with its median and interval, over the shaded bands.
        """
        from ..plots import phi_posterior

        return phi_posterior(self.bayes.draws["phi"], object=self.object, title=title, prob=self.prob)
