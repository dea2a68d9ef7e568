"""``br.ModelCheck``: a fitted model checked against data simulated from it, as ``bayesrepro check`` reports it."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .display import Result, public


class ModelCheck(Result):
    """Tests and figures of a model's fit to its data: quantile residuals, dispersion, slopes, outlying levels.

    Returned by ``Fit.check`` and ``Posterior.check``. Every test reads a statistic of the observed scores against
    the same statistic of the simulated data sets (the frequentist fit's simulations, or the posterior
    predictive draws), and says in one sentence what it found.

    Parameters
    ----------
    engine : {"frequentist", "posterior"}
        What simulated the data sets.
    formula : str
        The model's formula.
    family : str
        The family of the scores.
    simulations : int
        The simulated data sets (posterior predictive draws) the tests read against.
    seed : int or None
        Seed of the simulations and of the randomized residuals.
    checked : CheckedResiduals
        The quantile residuals and the tests (``model_checks.run.residual_checks``).
    panels : list of tuple
        The figures: name, finding (one sentence) and a function drawing the figure.
    residuals : pandas.DataFrame
        One row per observation: ``fitted``, ``residual`` (Pearson for frequentist fits, observed minus the
        predictive mean for the posterior) and ``quantile``; for the posterior also ``loo_pit`` (the score's
        LOO-PIT value), where it was computed.
    notes : list of str, optional
        What qualifies the check.

    Attributes
    ----------
    tests : pandas.DataFrame
        One row per test: ``test``, ``group`` (the grouping factor, for per-factor tests), ``statistic``, ``p``
        (Monte-Carlo), ``p_adjusted`` (Holm over the check's tests), ``flagged`` and ``finding``.
    flagged : bool
        Whether any test rejects the model at 5 % after Holm's adjustment.
    """

    def __init__(self, engine: str, formula: str, family: str, simulations: int, seed, checked, panels,
                 residuals: pd.DataFrame, notes=()):
        self.engine, self.formula, self.family = engine, formula, family
        self.simulations, self.seed = simulations, seed
        self._tests = list(checked.tests)
        self._panels = list(panels)
        self.residuals = residuals
        self._notes = list(notes)

    @property
    def tests(self) -> pd.DataFrame:
        """Every test with its p-values, verdict and finding (see the class)."""
        columns = ["test", "group", "statistic", "p", "p_adjusted", "flagged", "finding"]
        return pd.DataFrame([{k: t.to_dict()[k] for k in columns} for t in self._tests], columns=columns)

    @property
    def flagged(self) -> bool:
        """Whether any test rejects the model (5 %, Holm-adjusted)."""
        return any(t.flagged for t in self._tests)

    def figures(self) -> dict:
        """Every figure of the check, by name.

        Returns
        -------
        dict of str to matplotlib.figure.Figure
            Residuals against fitted values, the Q–Q plot of the quantile residuals and one Q–Q plot of level
            effects per grouping factor (frequentist), or the Q–Q plot, the posterior predictive checks and
            the LOO-PIT's ECDF (posterior).
        """
        return {name: draw() for name, _, draw in self._panels}

    @public
    def plot(self, figure: str | None = None):
        """The check's figures as panels of one, or one of them.

        Parameters
        ----------
        figure : str, optional
            One figure's name, a key of ``figures()`` (default: every figure, two per row).

        Returns
        -------
        matplotlib.figure.Figure
            The figure.
        """
        from ..errors import BayesreproError
        from ..model_checks.figures import panels

        if figure is None:
            return panels([draw for _, _, draw in self._panels], f"Model check: {self.formula}")
        for name, _, draw in self._panels:
            if name == figure:
                return draw()
        names = ", ".join(n for n, _, _ in self._panels)
        raise BayesreproError(f"--figure '{figure}' is not a figure of this check; choose one of: {names}")

    def _problems(self) -> list[str]:
        return []

    def _payload(self) -> dict:
        return {"engine": self.engine, "formula": self.formula, "family": self.family,
                "n_obs": int(len(self.residuals)), "simulations": self.simulations, "seed": self.seed,
                "flagged": self.flagged, "tests": [t.to_dict() for t in self._tests],
                "figures": [{"figure": name, "finding": finding} for name, finding, _ in self._panels],
                "notes": self.notes}

    def _text(self) -> str:
        what = "simulated data sets" if self.engine == "frequentist" else "posterior predictive draws"
        verdict = "FLAGGED: some checks reject the model" if self.flagged else "no check rejects the model"
        lines = [f"Model check ({self.engine}) of {self.formula} ({self.family}): {len(self.residuals)} observations "
                 f"against {self.simulations} {what}; {verdict} (5 %, Holm-adjusted)."]
        table = self.tests.drop(columns="finding").fillna({"group": ""})
        lines.append(table.to_string(index=False, float_format=lambda v: f"{v:.4g}"))
        lines.append("Findings:")
        lines += [f"  - {t.sentence}" for t in self._tests]
        lines += [f"  - {name}: {finding}" for name, finding, _ in self._panels]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _html_tables(self) -> list:
        figures = pd.DataFrame([{"figure": name, "finding": finding} for name, finding, _ in self._panels])
        return [("tests (Monte-Carlo p-values; flagged: Holm-adjusted p below 5 %)", self.tests), ("figures", figures)]


def residual_frame(fitted: np.ndarray, residual: np.ndarray, quantile: np.ndarray) -> pd.DataFrame:
    """The per-observation table of a check."""
    return pd.DataFrame({"fitted": fitted, "residual": residual, "quantile": quantile})
