"""The model checks of a side-by-side comparison (``compare``): its frequentist fit's and its posterior's."""

from __future__ import annotations

from ..errors import BayesreproError


def comparison_checks(frame, result, prob: float, seed: int = 0) -> tuple:
    """Both engines' checks of ``result``, fitted on ``frame``.

    Parameters
    ----------
    frame : ModelFrame
        The model frame both engines fitted (rows in memory).
    result : Comparison
        The comparison (``compare``): its frequentist fit and its posterior.
    prob : float
        Probability of the posterior's intervals.
    seed : int, default 0
        Seed of the simulations.

    Returns
    -------
    tuple
        The frequentist ``ModelCheck``, and the posterior's or the one-line reason it is not checked.
    """
    from ..api.fit import Fit
    from ..api.posterior import Posterior
    from ..design import resolve_family
    from ..reliability import ObjectChoice

    family = resolve_family(frame, result.bayes.family, getattr(result.reml, "link", None))
    choice = ObjectChoice(result.object or frame.groups[0].name)
    fit = Fit(result.reml, family, choice, None, frame.spec.random_terms, frame)
    frequentist = fit.check(seed=seed)
    try:
        posterior = Posterior(result.bayes, prob).check(seed=seed)
    except BayesreproError as error:     # a posterior the check does not take (random slopes): say why
        posterior = str(error)
    return frequentist, posterior
