"""``br.budget``: the expected best score among B configurations of a grid, as ``bayesrepro budget`` reports it."""

from __future__ import annotations

from .display import Result, public
from .shared_docs import shared_parameters


class Budget(Result):
    """Expected best score per budget B, closed form (Dodge et al., 2019) and bootstrap. Returned by ``budget``.

    Parameters
    ----------
    expected : ExpectedMaxResult
        The curve.
    config : list of str
        The columns whose combination is one configuration.
    score : str
        The score column.

    Attributes
    ----------
    table : pandas.DataFrame
        One row per budget: the closed-form mean, SD and range of the best of B, the bootstrap mean and interval,
        the chance that the best of B is the sample best and whether the interval's best end sits there.
    n_configurations : int
        Configurations in the grid.
    note : str
        What the intervals describe: draws from this grid, never better than its best configuration.
    """

    def __init__(self, expected, config: list[str], score: str):
        self.expected, self.config, self.score = expected, config, score
        self.table, self.note, self.n_configurations = expected.table, expected.note, expected.n_configurations

    def _problems(self) -> list[str]:
        return []

    def _payload(self) -> dict:
        return self.expected.to_dict()

    def _text(self) -> str:
        best = "highest" if self.expected.higher_is_better else "lowest"
        table = self.table.to_string(index=False, float_format=lambda v: f"{v:.4f}")
        return (f"{self.n_configurations} configurations of {', '.join(self.config)}; best = {best} mean "
                f"{self.score}\n{table}\n{self.note}")

    def plot(self, ax=None, title: str | None = None):
        """The expected best score against the budget, with the closed-form range and the bootstrap mean.

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Axes to draw on (default: a new figure).
        title : str, optional
            Title of the axes.

        Returns
        -------
        matplotlib.figure.Figure
            The figure drawn on.
        """
        from ..instruments.budget import plot_expected_max

        figure = plot_expected_max(self.expected, ax=ax)
        if title is not None:
            (ax or figure.axes[0]).set_title(title)
        return figure


@public
@shared_parameters
def budget(data, score: str, config, lower_is_better: bool = False, budgets=None, level: float = 0.95,
           resamples: int = 2000, seed: int | None = None, where: str | None = None, categorical=None,
           drop_missing: bool = False, progress: bool | None = None) -> Budget:
    """Expected best score under a budget of B configurations, in closed form and by the bootstrap.

    Parameters
    ----------
    <data>
    score : str
        Column of the scores; the rows of a configuration are averaged into one score.
    config : str or list of str
        Column(s) whose combination identifies a configuration.
    lower_is_better : bool, default False
        Lower scores are better (e.g. TER).
    budgets : list of int, optional
        Budgets to report (default about 25 from 1 to the number of configurations).
    level : float, default 0.95
        Interval level, between 0 and 1.
    resamples : int, default 2000
        Bootstrap resamples per budget.
    seed : int, optional
        Seed of the bootstrap.
    <rows_progress>

    Returns
    -------
    Budget
        ``to_dict()`` equals ``bayesrepro budget --json``.
    """
    from ..instruments.budget import configuration_scores, expected_max
    from ..progress import Progress
    from .reading import column_list, read_columns

    config = column_list(config)
    frame = read_columns(data, config + [score], where, categorical, drop_missing)
    scores = configuration_scores(frame, config, score)
    with Progress("budget", enabled=progress) as bar:
        expected = expected_max(scores.to_numpy(), budgets, higher_is_better=not lower_is_better, level=level,
                                n_resamples=resamples, seed=seed, progress=bar.update)
    return Budget(expected, config, score)
