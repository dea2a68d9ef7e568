"""The results of ``Model.glrt`` and ``Model.compare``."""

from __future__ import annotations

from .display import Result


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
        self.estimates, self.contrasts, self.means, self.flags = side.estimates, side.contrasts, side.means, side.flags

    def _problems(self) -> list[str]:
        return self.side.not_converged()

    def _payload(self) -> dict:
        return {**self.side.to_dict(), **({"planning": self.planning.to_dict()} if self.planning else {})}

    def _text(self) -> str:
        return str(self.side) if self.planning is None else f"{self.side}\n\n{self.planning}"

    def plot(self, kind: str = "components", title: str | None = None):
        """A figure of the comparison.

        Parameters
        ----------
        kind : {"components", "contrasts", "phi"}, default "components"
            "components": percent of the total variance per component, both engines with their intervals;
            "contrasts": every contrast, Wald (or t) interval next to the posterior interval; "phi": the
            posterior density of φ over the Koo & Li bands, with the frequentist estimate.
        title : str, optional
            The figure's title.

        Returns
        -------
        matplotlib.figure.Figure
            The figure, to display or to save.
        """
        from .. import plots
        from ..errors import BayesreproError

        if kind == "components":
            return plots.vca_bars(self.side, title)
        if kind == "phi":
            return plots.phi_figure(self.side, title)
        if kind == "contrasts" and self.contrasts is not None:
            return plots.forest_plot(self.contrasts, title, self.side.prob)
        if kind == "contrasts":
            raise BayesreproError("this comparison has no contrasts: compare a model with a categorical fixed factor")
        raise BayesreproError(f"kind '{kind}' is unknown; choose one of: components, contrasts, phi")
