"""The results of ``Model.glrt`` and ``Model.compare``."""

from __future__ import annotations

from .counts import designs, facet_counts
from .display import Result

D_STUDY_COUNTS = (1, 2, 3, 5, 10, 15, 20)


class GlrtTest(Result):
    """A generalized likelihood-ratio test of two nested models fitted by ML.

    Returned by ``Model.glrt``.

    Parameters
    ----------
    result : GlrtResult
        The engine's test.

    Attributes
    ----------
    chi2 : float
        Twice the difference of the maximised log-likelihoods.
    df : int
        Parameters H1 adds to H0.
    p : float
        The p-value read against ``reference``.
    reference : str
        What ``p`` was read against, in words.
    """

    def __init__(self, result):
        self.result = result
        self.chi2, self.df, self.p, self.reference = result.chi2, result.df, result.p, result.reference

    def _problems(self) -> list[str]:
        return [f"the ML fit of {name} did not converge ({fit.message})"
                for name, fit in (("H0", self.result.h0), ("H1", self.result.h1)) if not fit.converged]

    def _payload(self) -> dict:
        return self.result.to_dict()

    def _html_tables(self) -> list:
        import pandas as pd

        test = self.to_dict()
        models = pd.DataFrame({"formula": [test["h0"], test["h1"]],
                               "log-likelihood": [test["loglik_h0"], test["loglik_h1"]]},
                              index=pd.Index(["H0", "H1"], name="model"))
        row = {key: test.get(key) for key in ("chi2", "df", "p", "reference", "p_asymptotic", "asymptotic_reference")}
        return [("models (ML fits)", models), ("likelihood-ratio test", pd.DataFrame([row]))]

    def _html_notes(self) -> list[str]:
        reason = self.to_dict().get("reason")
        return [*super()._html_notes(), *([f"reference chosen because {reason}"] if reason else [])]

    def _text(self) -> str:
        return str(self.result)


class Comparison(Result):
    """The frequentist and the Bayesian answer to one model side by side, and the plan of the next evaluation.

    Returned by ``Model.compare``.

    Parameters
    ----------
    side : SideBySide
        Both engines' estimates, contrasts, tests and the disagreements flagged.
    planning : NextEvaluation or None
        The next evaluation of the closest pair of levels; None without a compared factor or with ``by``.

    Attributes
    ----------
    estimates : pandas.DataFrame
        Every component's variance, percent and φ: the frequentist estimate with its bootstrap interval next to
        the posterior median and interval.
    contrasts : pandas.DataFrame or None
        Pairwise contrasts of the factor's levels: Wald (or t) test next to the posterior.
    means : pandas.DataFrame or None
        Estimated means per level, both engines.
    flags : list of str
        Where the two engines disagree, one sentence each.
    """

    def __init__(self, side, planning=None):
        self.side, self.planning = side, planning
        self.estimates, self.contrasts, self.means = side.estimates, side.contrasts, side.means

    @property
    def flags(self) -> list[str]:
        """Where the two engines disagree, one sentence each."""
        from .display import for_reader

        return [for_reader(flag) for flag in self.side.flags]

    @property
    def posterior(self):
        """The posterior behind the Bayesian columns, as ``Model.sample`` returns it (``Posterior``)."""
        from .posterior import Posterior

        return Posterior(self.side.bayes, self.side.prob)

    def d_study(self, counts: dict):
        """Reliability φ of scores averaged over several levels of other facets (Brennan's D-study), both engines.

        Parameters
        ----------
        counts : dict
            Levels averaged over per facet, as ``Fit.d_study`` takes them, e.g. ``{"rater": [1, 5, 10]}``.

        Returns
        -------
        pandas.DataFrame
            One row per design: its counts, the frequentist φ (``phi``), and the posterior median and central
            interval at the comparison's ``prob`` (``post_median``, ``post_low``, ``post_high``).
        """
        import pandas as pd

        from ..reliability import d_study

        rows = []
        variances = self._factor_variances(self.side.variances)
        for design in designs(facet_counts(counts, "counts")):
            posterior = self.side.bayes.d_study(design, self.side.prob).loc["phi"]
            rows.append({**design, "phi": float(d_study(variances, self._object(), design)["phi"]),
                         "post_median": posterior["median"], "post_low": posterior["low"],
                         "post_high": posterior["high"]})
        return pd.DataFrame(rows)

    def _factor_variances(self, variances: dict) -> dict:
        """``variances`` with a factor's several terms (``(x || g)``'s ``g`` and ``g.1``) summed: the components
        a D-study divides by facet counts."""
        from ..design.random_design import factor_variances

        return factor_variances(variances, self.side.bayes.frame.spec.random_terms)

    def _object(self) -> str:
        from ..errors import BayesreproError

        if self.side.object is None:
            raise BayesreproError("this comparison has no object of measurement; name one with object= in Model")
        return self.side.object

    def _problems(self) -> list[str]:
        return self.side.not_converged()

    def _payload(self) -> dict:
        return {**self.side.to_dict(), **({"planning": self.planning.to_dict()} if self.planning else {})}

    def _text(self) -> str:
        return str(self.side) if self.planning is None else f"{self.side}\n\n{self.planning}"

    def plot(self, kind: str = "components", title: str | None = None, facet: str | None = None,
             counts=D_STUDY_COUNTS, fixed: dict | None = None):
        """A figure of the comparison.

        Parameters
        ----------
        kind : {"components", "contrasts", "means", "phi", "d_study"}, default "components"
            "components": percent of the total variance per component, both engines with their intervals;
            "contrasts": every contrast, Wald (or t) interval next to the posterior interval; "means": the
            estimated means per level of the factor (across the levels of ``by``), both engines; "phi": the
            posterior density of φ over the Koo & Li bands, with the frequentist estimate; "d_study": φ of
            scores averaged over ``counts`` levels of ``facet``, the frequentist curve and the posterior band.
        title : str, optional
            The figure's title.
        facet : str, optional
            For "d_study": the facet whose number of levels runs along the horizontal axis.
        counts : sequence of int, default (1, 2, 3, 5, 10, 15, 20)
            For "d_study": the numbers of levels of ``facet`` drawn.
        fixed : dict, optional
            For "d_study": another facet mapped to its counts, one curve each, e.g. ``{"occasion": [1, 3]}``.

        Returns
        -------
        matplotlib.figure.Figure
            The figure, to display or to save.
        """
        from .. import plots
        from ..bayes.posterior import variance_draws
        from ..errors import BayesreproError

        if kind == "components":
            return plots.vca_bars(self.side, title)
        if kind == "phi":
            return plots.phi_figure(self.side, title)
        if kind in ("contrasts", "means") and getattr(self, kind) is None:
            raise BayesreproError(f"this comparison has no {kind}: compare a model with a categorical fixed factor")
        if kind == "contrasts":
            return plots.forest_plot(self.contrasts, title, self.side.prob)
        if kind == "means":
            response = self.side.formula.split("~")[0].strip()
            return plots.interaction_plot(self.means, self.side.factor, self.side.by, response, title, self.side.prob)
        if kind == "d_study":
            if facet is None:
                raise BayesreproError("kind 'd_study' needs facet=, the facet whose levels are averaged over")
            steps = facet_counts({facet: list(counts)}, "counts")[facet]
            others = facet_counts(fixed or {}, "fixed")
            if len(others) > 1:
                raise BayesreproError("fixed= takes one facet (one curve per count of it)")
            return plots.d_study_curves(self._factor_variances(self.side.variances), self._object(), facet, steps,
                                        others or None, self._factor_variances(variance_draws(self.side.bayes.draws)),
                                        title, self.side.prob,
                                        self.side.method)
        raise BayesreproError(f"kind '{kind}' is unknown; choose one of: components, contrasts, means, phi, d_study")

