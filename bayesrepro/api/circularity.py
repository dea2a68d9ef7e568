"""``br.circularity``: does a GAM on a few features explain a model's predictions? As ``bayesrepro circularity``
reports it."""

from __future__ import annotations

from .display import Result, public
from .shared_docs import shared_parameters


class Circularity(Result):
    """Feature subsets ranked by the deviance of the predictions their GAM explains, and the verdict.

    Returned by ``circularity``.

    Parameters
    ----------
    test : CircularityResult
        The ranking and the verdict.

    Attributes
    ----------
    ranking : pandas.DataFrame
        One row per feature subset, best first: ``subset``, ``size`` and ``d2`` (deviance explained).
    candidate : tuple of str
        The smallest subset whose D² ties with the best.
    candidate_d2, full_d2 : float
        D² of the candidate and of the GAM on all features.
    nullified : bool
        Whether the other features add nothing beyond the candidate.
    circular : bool or None
        The verdict; None when no defining features were named.
    defining_d2 : float or None
        D² of the GAM on the defining features alone.
    """

    def __init__(self, test):
        self.test = test
        self.ranking, self.candidate, self.candidate_d2 = test.ranking, test.candidate, test.candidate_d2
        self.full_d2, self.nullified, self.circular = test.full_d2, test.nullified, test.circular
        self.defining, self.defining_d2 = test.defining, test.defining_d2

    def _problems(self) -> list[str]:
        return []

    def _payload(self) -> dict:
        return self.test.to_dict()

    def _text(self) -> str:
        added = self.full_d2 - self.candidate_d2
        lines = [f"candidate: {', '.join(self.candidate)} (D² = {self.candidate_d2:.4f}; "
                 f"all features D² = {self.full_d2:.4f})",
                 f"  nullification: other features add {added:.4f} D² "
                 f"({'nullified' if self.nullified else 'not nullified'})"]
        if self.circular is None:
            lines.append("  verdict: name the defining features (--defining) to test for circularity")
        else:
            lines += [f"  D² of the defining features alone: {self.defining_d2:.4f}",
                      f"  verdict: {'circular' if self.circular else 'not circular'}"]
        lines.append(self.ranking.head(10).to_string(index=False))
        return "\n".join(lines)


@public
@shared_parameters
def circularity(data, prediction: str, features, defining=None, max_size: int | None = None, df: int = 10,
                tie_tolerance: float = 0.01, d2_threshold: float = 0.9, where: str | None = None, categorical=None,
                drop_missing: bool = False) -> Circularity:
    """The circularity test: rank feature subsets by the deviance of a model's predictions their GAM explains.

    A model is circular when a GAM on the features its target is defined from explains its predictions (D² at
    least ``d2_threshold``) and the other features add nothing.

    Parameters
    ----------
    data : pandas.DataFrame or str
        The features and predictions: a DataFrame, a file or a bundled dataset name, as ``read`` takes them.
    prediction : str
        Column of the model's predictions.
    features : list of str
        Candidate feature columns.
    defining : list of str, optional
        Features the target is defined from (needed for a verdict).
    max_size : int, optional
        Largest subset size to fit (default all features).
    df : int, default 10
        B-spline basis size per smooth.
    tie_tolerance : float, default 0.01
        D² differences up to this count as ties.
    d2_threshold : float, default 0.9
        D² a circular candidate must reach.
    <rows>

    Returns
    -------
    Circularity
        ``to_dict()`` equals ``bayesrepro circularity --json``.
    """
    from ..data import check_score
    from ..errors import BayesreproError
    from ..instruments.circularity import circularity_test
    from .reading import column_list, read_columns

    features = column_list(features)
    if max_size is not None and max_size > len(features):
        raise BayesreproError(f"--max-size {max_size} is more than the {len(features)} --features given")
    if prediction in features:
        raise BayesreproError(f"--features names the prediction column '{prediction}'; the features must "
                              "explain the predictions, not contain them")
    frame = read_columns(data, features + [prediction], where, categorical, drop_missing)
    return Circularity(circularity_test(frame[features], check_score(frame, prediction),
                                        defining=column_list(defining), max_size=max_size, df=df,
                                        tie_tolerance=tie_tolerance, d2_threshold=d2_threshold))
