"""``br.Ranking``: a leaderboard with the uncertainty of every rank, from both engines."""

from __future__ import annotations

from .display import Result

ESTIMATE_FORMAT = "{:.4g}"
# what the estimates are, by the ranking's scale
SCALES = {"probability": "probability of a correct score", "score": "mean score",
          "effect": "random intercept", "latent effect": "random intercept on the latent scale"}


class Ranking(Result):
    """The levels of one factor ranked by the frequentist and the Bayesian engine, rank 1 the best.

    Returned by ``Model.rank``.

    Parameters
    ----------
    ranking : LevelRanking
        The engines' ranks (``bayesrepro.rankings``).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per level, best estimate first: ``level``, ``rank`` (of the point estimate), ``estimate`` (the
        frequentist estimate of its mean score, a probability for 0/1 scores) with its bootstrap interval
        (``boot_low``, ``boot_high``); the bootstrap's ``boot_p_best``, ``boot_p_top``, ``boot_expected_rank``,
        ``boot_rank_low`` and ``boot_rank_high``; the posterior median of the mean with its interval
        (``post_median``, ``post_low``, ``post_high``) and the posterior ``p_best``, ``p_top`` (rank at most
        ``top``), ``expected_rank``, ``rank_low`` and ``rank_high``. For a grouping factor the estimate is the
        level's random intercept (its conditional mode) and the ``boot_`` columns summarise draws from each level's
        conditional distribution at the fit instead of bootstrap refits.
    factor : str
        The ranked factor.
    top : int
        The k of ``p_top``.
    prob : float
        Probability of every interval.
    notes : list of str
        What the reader should know, among them one sentence where the engines disagree about the leader.
    """

    def __init__(self, ranking):
        self.ranking = ranking
        self.table, self.factor, self.top, self.prob = ranking.table, ranking.factor, ranking.top, ranking.prob
        self._notes = list(ranking.notes)

    @property
    def posterior(self):
        """The posterior behind the Bayesian columns, as ``Model.sample`` returns it (``Posterior``)."""
        from .posterior import Posterior

        return Posterior(self.ranking.bayes, self.prob)

    def plot(self, title: str | None = None):
        """The levels in the order of their expected rank, with both engines' rank intervals.

        Parameters
        ----------
        title : str, optional
            The figure's title (default: names the factor and the formula).

        Returns
        -------
        matplotlib.figure.Figure
            One line per level, best first: the posterior's expected rank and rank interval next to the
            bootstrap's.
        """
        from ..plots import rank_intervals

        frequentist = "bootstrap" if self.ranking.kind == "fixed" else "conditional draws"
        return rank_intervals(self.table, self.factor, self.prob,
                              title or f"Ranks of {self.factor}: {self.ranking.formula}", frequentist)

    def _problems(self) -> list[str]:
        r = self.ranking
        problems = [] if r.converged else [f"the {r.method} fit did not converge"]
        if not r.bayes.diagnostics.converged:
            problems.append(f"the sampler did not converge ({r.bayes.diagnostics.line()})")
        return problems

    def _payload(self) -> dict:
        r = self.ranking
        diagnostics = r.bayes.diagnostics
        return {
            "formula": r.formula, "factor": r.factor, "kind": r.kind, "scale": r.scale, "top": r.top,
            "lower_is_better": r.lower_is_better, "prob": r.prob,
            "ranks": r.table.to_dict(orient="records"),
            "leader": r.leaders(),
            "frequentist": {"method": r.method, "converged": r.converged, "bootstrap_replicates": r.n_boot,
                            "bootstrap_unconverged": r.bootstrap_unconverged},
            "bayesian": {"backend": r.bayes.backend, "family": r.bayes.family, "chains": diagnostics.chains,
                         "draws": diagnostics.draws, "diagnostics": diagnostics.as_dict(),
                         "priors": r.bayes.prior_table.to_dict(orient="records")},
            "seed": r.seed, "notes": self.notes,
        }

    def _rows(self) -> tuple[list[str], list[list[str]]]:
        """The headings and cells of the printed table."""
        level, top = f"{100 * self.prob:g}%", self.top
        side = "boot" if self.ranking.kind == "fixed" else "cond"   # bootstrap, or conditional draws
        headings = ["rank", self.factor, "estimate", f"{side} {level}", f"{side} P(best)",
                    f"{side} rank {level}", "posterior", "P(best)", f"P(top {top})", "E[rank]", f"rank {level}"]
        number = ESTIMATE_FORMAT.format
        cells = [[str(row.rank), row.level, number(row.estimate), f"[{number(row.boot_low)}, {number(row.boot_high)}]",
                  f"{row.boot_p_best:.3f}", f"[{row.boot_rank_low}, {row.boot_rank_high}]", number(row.post_median),
                  f"{row.p_best:.3f}", f"{row.p_top:.3f}", f"{row.expected_rank:.2f}",
                  f"[{row.rank_low}, {row.rank_high}]"] for row in self.table.itertuples()]
        return headings, cells

    def _heading(self) -> list[str]:
        r = self.ranking
        d = r.bayes.diagnostics
        better = "lower" if r.lower_is_better else "higher"
        what = SCALES.get(r.scale, r.scale)
        replicates = (f"{r.n_boot} parametric-bootstrap replicates" if r.kind == "fixed"
                      else f"{r.n_boot} draws of each level from its conditional distribution")
        return [f"Ranks of {r.factor} in {r.formula} ({what}; {better} is better; rank 1 is the best)",
                f"  frequentist: {r.method}, {replicates}",
                f"  Bayesian: {d.chains} chains x {d.draws} draws ({r.bayes.backend} backend; "
                f"{'converged' if d.converged else 'NOT converged'})"]

    def _text(self) -> str:
        headings, cells = self._rows()
        widths = [max(len(text) for text in column) for column in zip(headings, *cells)]
        line = lambda texts: "  ".join(t.rjust(w) if k != 1 else t.ljust(w)  # noqa: E731
                                       for k, (t, w) in enumerate(zip(texts, widths)))
        lines = self._heading() + ["", line(headings)] + [line(row) for row in cells]
        return "\n".join(lines + [""] + [f"note: {note}" for note in self.notes]).rstrip()

    def _html_header(self) -> str:
        return self._heading()[0]

    def _html_tables(self) -> list:
        import pandas as pd

        headings, cells = self._rows()
        frequentist, bayesian = (text.strip() for text in self._heading()[1:])
        return [(f"{frequentist}; {bayesian}", pd.DataFrame(cells, columns=headings))]

