"""``br.agreement``: chance-corrected agreement of raters, as ``bayesrepro agreement`` reports it."""

from __future__ import annotations

from .display import Result, public
from .shared_docs import shared_parameters


class Agreement(Result):
    """Krippendorff's alpha of long ratings, with Cohen's kappa and Scott's pi for two raters.

    Returned by ``agreement``.

    Parameters
    ----------
    coefficients : AgreementResult
        The coefficients and counts.

    Attributes
    ----------
    krippendorff_alpha : float
        Krippendorff's alpha at the chosen level of measurement.
    cohen_kappa, scott_pi : float or None
        Defined for exactly two raters at the nominal and interval levels; None otherwise (``note`` says why).
    n_items, n_raters, n_ratings : int
        Rated units, raters and ratings given.
    level : str
        The level of measurement.
    note : str
        Ratings treated as not given, and why kappa and pi are absent ('' when nothing is to be said).
    """

    def __init__(self, coefficients):
        self.coefficients = coefficients
        for name, value in coefficients.to_dict().items():
            setattr(self, name, value)

    def _problems(self) -> list[str]:
        return []

    def _payload(self) -> dict:
        return self.coefficients.to_dict()

    def _text(self) -> str:
        def show(value):
            return "not defined" if value is None else f"{value:.4f}"

        lines = [f"{self.n_ratings} ratings of {self.n_items} units by {self.n_raters} raters ({self.level})",
                 f"  Krippendorff's alpha: {self.krippendorff_alpha:.4f}",
                 f"  Cohen's kappa:        {show(self.cohen_kappa)}",
                 f"  Scott's pi:           {show(self.scott_pi)}"]
        if self.note:
            lines.append(f"  note: {self.note}")
        return "\n".join(lines)


@public
@shared_parameters
def agreement(data, item, rater: str, score: str, level: str = "nominal", where: str | None = None,
              categorical=None, drop_missing: bool = False) -> Agreement:
    """Chance-corrected agreement of raters: Krippendorff's alpha, and Cohen's kappa and Scott's pi for two raters.

    Parameters
    ----------
    data : pandas.DataFrame or str
        One row per rating: a DataFrame, a file, harness logs or a bundled dataset name, as ``read`` takes them.
    item : str or list of str
        Column(s) whose combination is the rated unit.
    rater : str
        Column of the raters.
    score : str
        Column of the ratings (numbers; text is allowed at the nominal level); a missing rating is one not given.
    level : {"nominal", "ordinal", "interval", "ratio"}, default "nominal"
        Level of measurement, which sets the distance between two ratings in alpha.
    <where>
    drop_missing : bool, default False
        Drop rows with a missing unit or rater instead of refusing them.

    Returns
    -------
    Agreement
        ``to_dict()`` equals ``bayesrepro agreement --json``.
    """
    from ..errors import BayesreproError
    from ..instruments.agreement import LEVELS, agreement as coefficients
    from .reading import column_list, read_columns

    if level not in LEVELS:
        raise BayesreproError(f"--level must be one of {', '.join(LEVELS)}, not {level!r}")
    items = column_list(item)
    frame = read_columns(data, items + [rater], where, categorical, drop_missing)
    return Agreement(coefficients(frame, items, rater, score, level=level))
