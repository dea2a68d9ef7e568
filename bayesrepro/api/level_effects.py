"""``br.LevelEffects``: each level's random effects, frequentist (conditional modes) or Bayesian (posterior)."""

from __future__ import annotations

import pandas as pd

from .display import Result, public

# Levels of one grouping factor and term shown in the text and HTML tables: the lowest and highest estimates.
SHOWN_LEVELS = 20


class LevelEffects(Result):
    """Each level's random effects with an interval: the table of ``Model.effects`` and ``bayesrepro effects``.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per level and term: ``group``, ``term``, ``level``, ``estimate``, ``sd``, ``low``, ``high`` (and,
        from a posterior, ``r_hat`` and ``ess_bulk``).
    engine : {"frequentist", "bayes"}
        What estimated them: conditional modes of the ML/REML fit, or the posterior.
    prob : float
        Probability of the intervals.
    notes : list of str, optional
        What qualifies the estimates (a conditional SD not computed, say).
    problems : list of str, optional
        What did not converge in the fit or sampler behind them.

    Attributes
    ----------
    table : pandas.DataFrame
        The table given.
    """

    def __init__(self, table: pd.DataFrame, engine: str, prob: float, notes=(), problems=()):
        self.table = table
        self.engine = engine
        self.prob = float(prob)
        self._notes = list(notes)
        self._not_converged = list(problems)

    def _payload(self) -> dict:
        return {"engine": self.engine, "prob": self.prob, "effects": self.table.to_dict(orient="records"),
                "notes": self.notes}

    def _problems(self) -> list[str]:
        return self._not_converged

    def _shown(self) -> list[tuple[tuple[str, str], pd.DataFrame, int]]:
        """Per grouping factor and term: the rows shown (sorted by estimate) and how many rows it has."""
        shown = []
        for key, rows in self.table.groupby(["group", "term"], sort=False):
            rows = rows.sort_values("estimate")
            if len(rows) > 2 * SHOWN_LEVELS:
                rows = pd.concat([rows.head(SHOWN_LEVELS), rows.tail(SHOWN_LEVELS)])
            shown.append((key, rows, int(((self.table.group == key[0]) & (self.table.term == key[1])).sum())))
        return shown

    def _text(self) -> str:
        what = "conditional modes and SDs" if self.engine == "frequentist" else "posterior estimates and SDs"
        lines = [f"Level effects ({what}, {100 * self.prob:g} % intervals)"]
        for (group, term), rows, total in self._shown():
            cut = "" if len(rows) == total else f"; the {SHOWN_LEVELS} lowest and highest of {total:,}"
            lines.append(f"{group}: {term} ({total:,} levels{cut})")
            body = rows.drop(columns=["group", "term"]).set_index("level")
            lines += ["  " + line for line in body.to_string(float_format=lambda v: f"{v:.6g}").splitlines()]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)

    def _html_tables(self) -> list:
        tables = []
        for (group, term), rows, total in self._shown():
            cut = "" if len(rows) == total else f"; the {SHOWN_LEVELS} lowest and highest of {total:,}"
            tables.append((f"{group}: {term} ({total:,} levels{cut})",
                           rows.drop(columns=["group", "term"]).reset_index(drop=True)))
        return tables

    @public
    def plot(self, group: str | None = None, title: str | None = None):
        """Draw a caterpillar plot: each level's estimate and interval, levels sorted by estimate.

        Parameters
        ----------
        group : str, optional
            One grouping factor to draw (default: every one in the table, a panel per factor and term).
        title : str, optional
            The figure's title.

        Returns
        -------
        matplotlib.figure.Figure
            The figure, to display or to save.
        """
        from ..errors import BayesreproError
        from ..plots import caterpillar

        table = self.table
        if group is not None:
            if group not in set(table.group):
                raise BayesreproError(f"--group '{group}' has no level effects in this table; choose one of: "
                                      f"{', '.join(dict.fromkeys(table.group))}")
            table = table[table.group == group]
        return caterpillar(table, title, self.prob)
