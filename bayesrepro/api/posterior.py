"""``br.Posterior``: the posterior of a model's variance components and φ, as ``phi`` reports it."""

from __future__ import annotations

import numpy as np
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

    def level_effects(self, group: str | None = None, prob: float | None = None) -> pd.DataFrame:
        """Posterior summaries of every level's random effect, term by term.

        Parameters
        ----------
        group : str, optional
            A grouping factor of the formula, e.g. ``"system"``; default every factor.
        prob : float, optional
            Probability of the central intervals; default the Posterior's ``prob``.

        Returns
        -------
        pandas.DataFrame
            One row per level and random-effect term: ``group``, ``term`` (named as lme4 names it:
            ``"(Intercept)"``, or the slope's column, e.g. ``"x"``), ``level``, posterior median ``estimate``,
            posterior ``sd``, central interval ``low`` and ``high``, ``r_hat`` and ``ess_bulk``. Binary models'
            effects are on the latent (link) scale. Computed a block of levels at a time, so a factor of 10^5
            levels never holds draws × levels.

        Raises
        ------
        BayesreproError
            If ``group`` is not a grouping factor of the formula, or the posterior holds no level effects.
        """
        from ..errors import BayesreproError

        try:
            return self.bayes.level_effects(group, self.prob if prob is None else prob)
        except BayesreproError as error:
            raise error.for_python() from None

    def level_effect_draws(self, group: str, term: str = "(Intercept)") -> tuple[np.ndarray, list[str]]:
        """Joint posterior draws of one term's level effects of a grouping factor, as one array.

        Meant for factors of moderate size (the array holds chains × draws × levels values), e.g. the posterior
        distribution of a leaderboard's ranks: ``numpy.argsort`` of each row.

        Parameters
        ----------
        group : str
            A grouping factor of the formula, e.g. ``"system"``.
        term : str, optional
            The term's column as ``level_effects`` names it: ``"(Intercept)"`` (default) or a slope's name.

        Returns
        -------
        tuple of (numpy.ndarray, list of str)
            The draws, shape (chains × draws, levels), chain after chain; and the level labels in column order.
            Each row is one joint draw of every level's effect (latent scale for binary models).

        Raises
        ------
        BayesreproError
            If ``group`` or ``term`` is not in the formula.
        """
        from ..errors import BayesreproError

        try:
            return self.bayes.level_effect_draws(group, term)
        except BayesreproError as error:
            raise error.for_python() from None

    def predict(self, data: pd.DataFrame | None = None, kind: str = "mean", prob: float | None = None) -> pd.DataFrame:
        """Posterior summaries of every row's expected score, or of a new score.

        Parameters
        ----------
        data : pandas.DataFrame, optional
            Rows to predict, with the formula's fixed-effect and grouping columns; default the fitted rows. A level
            of a grouping factor unseen in the fit gets effects drawn from the population (the posterior SDs and
            correlations, one draw per new level and posterior draw), as Bambi's ``sample_new_groups`` and brms's
            ``allow_new_levels`` do.
        kind : {"mean", "response"}, optional
            ``"mean"`` (default): the expected score, a probability for binary models; ``"response"``: a new score
            (Gaussian noise with the posterior σ, or a 0/1 outcome / binomial successes).
        prob : float, optional
            Probability of the central intervals; default the Posterior's ``prob``.

        Returns
        -------
        pandas.DataFrame
            One row per row of ``data`` (same order): posterior ``median``, ``sd``, ``low`` and ``high``.

        Raises
        ------
        BayesreproError
            If a column of the formula is missing, a fixed factor has a level unseen in the fit, or ``kind`` is
            unknown.
        """
        from ..bayes.prediction import prediction_table
        from ..errors import BayesreproError

        try:
            table = prediction_table(self.bayes, data, kind, self.prob if prob is None else prob)
        except BayesreproError as error:
            raise error.for_python() from None
        if data is not None:
            table.index = data.index
        return table

    def predictive_draws(self, data: pd.DataFrame | None = None, kind: str = "response",
                         max_draws: int | None = None) -> np.ndarray:
        """Posterior predictive draws, for model checks.

        Parameters
        ----------
        data : pandas.DataFrame, optional
            Rows to predict (default the fitted rows); new levels as in ``predict``.
        kind : {"response", "mean"}, optional
            ``"response"`` (default): new scores; ``"mean"``: expected scores (probabilities for binary models).
        max_draws : int, optional
            At most this many posterior draws, spread evenly over the chains (default all).

        Returns
        -------
        numpy.ndarray
            Shape (draws, rows): one row of predictions per posterior draw.

        Raises
        ------
        BayesreproError
            As ``predict``, or if ``max_draws`` is not a positive whole number.
        """
        from ..bayes.prediction import predictive_draws
        from ..errors import BayesreproError

        try:
            return predictive_draws(self.bayes, data, kind, max_draws)
        except BayesreproError as error:
            raise error.for_python() from None

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
            The tests of ``Fit.check`` read against the predictive data sets and the uniformity of the LOO-PIT
            values (PSIS-LOO probability integral transforms of the scores; randomized for 0/1 scores), the Q–Q
            plot of the quantile residuals, ArviZ's posterior predictive checks of the scores and of the mean per
            level, and the LOO-PIT's ECDF; ``to_dict()`` equals ``bayesrepro check --bayes --json``. Models with
            random intercepts.
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

    def _html_tables(self) -> list:
        import numpy as np

        from ..bayes.convergence import ess_bulk, ess_tail, r_hat
        from ..bayes.posterior import variance_draws
        from ..reliability import koo_li_label

        def diagnosed(row: dict, draws) -> dict:
            return {**row, "r_hat": r_hat(draws), "ess_bulk": ess_bulk(draws), "ess_tail": ess_tail(draws)}

        draws = variance_draws(self.bayes.draws)
        components = pd.DataFrame([
            diagnosed({"component": name, "variance": row.variance, "low": row.low, "high": row.high,
                       "sd": float(np.sqrt(row.variance)), "share": row.share}, draws[name])
            for name, row in self.components.iterrows()]).set_index("component")
        phi = self.phi
        phi_row = diagnosed({"object": self.object, "median": phi["median"], "low": phi["low"], "high": phi["high"],
                             "Koo & Li (median)": koo_li_label(phi["median"]), "scale": phi["scale"]},
                            self.bayes.draws["phi"])
        interval = f"{100 * self.prob:g}%"
        tables = [(f"variance components: posterior medians, central {interval} intervals, R-hat and ESS", components),
                  (f"reliability phi of {self.object}: posterior median and central {interval} interval",
                   pd.DataFrame([phi_row]))]
        if self.bayes.terms:
            tables.append(("random effects (SDs and correlations)", self.random_effects))
        tables.append(("sampler diagnostics", pd.DataFrame([self.bayes.diagnostics.as_dict()])))
        return tables

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
