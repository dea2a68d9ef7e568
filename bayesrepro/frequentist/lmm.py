"""Fit LMMs by ML or REML: parse → cross-products → optimise θ → result.

Random-intercept models with one dominant factor are fitted from grouped
cross-products (``deviance.py``); random slopes and designs with two large
crossed factors by the sparse core (``general_lmm.py``).
"""

from __future__ import annotations

from ..errors import BayesreproError
from ..runtime import numerical_work
from ..design import ModelFrame, model_frame, parse_formula
from ..design.memory_estimate import require_within
from .deviance import ProfiledDeviance
from .lmm_fit import LmmFit, fit_of
from .optimise import optimise

METHODS = ("reml", "ml")


def fit_lmm(formula, data=None, method: str = "reml", where: str | None = None, drop_missing: bool = False,
            max_memory=None) -> LmmFit:
    """Fit ``formula`` to ``data`` by REML (default) or ML.

    ``formula`` is a formula string (then ``data`` is a DataFrame, a path or a
    bundled dataset name) or an already built ModelFrame. ``max_memory`` (bytes or a size such as ``'4G'``;
    default half the machine's memory) bounds the dense blocks of the fit: past it the fit is refused.
    """
    method = _check_method(method)
    if isinstance(formula, str):
        formula = parse_formula(formula, slopes=True)
    frame = formula if isinstance(formula, ModelFrame) else model_frame(formula, data, where, drop_missing)
    return fit_model_frame(frame.with_memory_limit(max_memory), method)


def require_memory(*frames: ModelFrame) -> None:
    """Refuse, before any fit, a frame whose fit would pass its memory limit: for random intercepts the dense
    path's block (which bounds the sparse core's factor of the same levels), for slopes the sparse core's arrays
    estimated from the random-effects design (``core_memory``)."""
    for frame in frames:
        if not frame.spec.has_slopes:
            require_within(frame.dense_estimate("gaussian"), frame.max_memory)
        elif frame.has_rows:
            from ..design.random_design import random_design
            from .core_memory import require_core_memory

            require_core_memory(random_design(frame.spec, frame.data), frame.max_memory)


def fit_model_frame(frame: ModelFrame, method: str) -> LmmFit:
    """The fit of ``frame`` by ``method``, computed once per frame (``ModelFrame.fitted``)."""
    return frame.fitted(method, lambda: fit_frame_once(frame, method))


def fit_frame_once(frame: ModelFrame, method: str) -> LmmFit:
    if frame.n_obs <= frame.n_fixed:
        raise BayesreproError(
            f"{frame.n_obs} observations cannot estimate {frame.n_fixed} fixed effects of {frame.formula!r}"
        )
    from .general_lmm import fit_general_frame, needs_general_core

    require_memory(frame)
    if needs_general_core(frame):
        return fit_general_frame(frame, method)
    objective = ProfiledDeviance(frame.stats(), reml=(method == "reml"))
    with numerical_work():
        theta, converged, message = optimise(objective)
        solution = objective.solve(theta)
    sigma2 = objective.sigma2(solution)
    variances = {g.name: float(sigma2 * t * t) for g, t in zip(frame.groups, theta)}
    return fit_of(frame, method, objective, solution, (converged, message), variances)


def _check_method(method: str) -> str:
    if str(method).lower() not in METHODS:
        raise BayesreproError(f"method '{method}' is not known; use one of: {', '.join(METHODS)}")
    return str(method).lower()
