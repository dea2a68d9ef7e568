"""Which path fits a Gaussian model frame: exact REML/ML (dense or sparse), REML/ML with Monte Carlo traces
(``monte_carlo_reml``) or the method of moments (``moments``).

The exact path when its factor fits the memory limit and is quick, the Monte
Carlo path where it is not, the moments only where the Monte Carlo path would
pass the limit too.
"""

from __future__ import annotations

from ..design import ModelFrame
from ..design.memory_estimate import DENSE_SECONDS_LIMIT, beyond_dense_path, format_bytes, resolve_limit
from ..progress import announce_path
from .lmm_fit import LmmFit
from .moments import METHOD, fit_moments, moment_model


def choose_fit(frame: ModelFrame, method: str, progress: bool | None = False) -> LmmFit:
    """The exact REML/ML fit where its factor is small and quick enough; else, for random intercepts with the rows
    in memory, REML/ML with Monte Carlo traces (``monte_carlo_reml``); the moment estimates of an intercept-only
    model only where that path would pass the memory limit too; else the exact path's refusal.

    Random slopes go to the sparse core. Two large crossed factors with the rows in memory go there too, whose factor
    is bounded by a dense factor of the levels left after the largest factor is eliminated: the sparse path is taken
    while that bound fits a quarter of the limit and its factorisation would take seconds
    (``monte_carlo_reml.exact_factor_quick``). Otherwise the dense path's block decides (its memory and estimated time).
    """
    from .general_lmm import dense_schur_levels, needs_general_core
    from .lmm import fit_model_frame
    from .monte_carlo_reml import exact_factor_quick, fit_monte_carlo, monte_carlo_bytes, monte_carlo_model

    limit = resolve_limit(frame.max_memory)
    if frame.spec.has_slopes:   # no moments for slopes; the exact fit refuses past the limit (core_memory)
        announce_path(f"exact {method.upper()} on the sparse core (random slopes)", progress)
        return fit_model_frame(frame, method)
    iterative = monte_carlo_model(frame)
    if needs_general_core(frame):
        levels = dense_schur_levels(frame)
        quick, bound, seconds = exact_factor_quick(levels, limit)
        if quick or not (iterative or moment_model(frame)):
            announce_path(f"exact {method.upper()} on the sparse core ({levels:,} levels after eliminating the "
                          f"largest factor; at most {format_bytes(bound)} of factor)", progress)
            return fit_model_frame(frame, method)
        reason = (f"a sparse factor of {levels:,} levels could need up to {format_bytes(bound)} and ~{seconds:.0f} s "
                  f"a factorisation (memory limit {format_bytes(limit)}, --max-memory)")
    else:
        estimate = frame.dense_estimate("gaussian")
        if not beyond_dense_path(estimate, frame.max_memory) or not (iterative or moment_model(frame)):
            announce_path(f"exact {method.upper()} with {estimate.describe()}{_rows_remedy(frame, estimate)}",
                          progress)
            return fit_model_frame(frame, method)
        reason = (f"the exact path would need {estimate.describe()} (memory limit {format_bytes(limit)}, "
                  f"--max-memory)")
    needed = monte_carlo_bytes(frame) if iterative else 0
    if iterative and needed <= limit:
        announce_path(f"{method.upper()} with Monte Carlo traces (about {format_bytes(needed)}): {reason}", progress)
        return fit_monte_carlo(frame, method, reason=reason)
    if not moment_model(frame):
        return fit_model_frame(frame, method)    # exact however long, refused in one line past the limit
    if iterative:
        reason += f"; the Monte Carlo {method.upper()} path would need about {format_bytes(needed)}"
    announce_path(f"{METHOD}: {reason}", progress)
    return fit_moments(frame, reason=reason)


def _rows_remedy(frame: ModelFrame, estimate) -> str:
    """Where a slow exact fit is taken only because the rows are not in memory (grouped sums from DuckDB or Spark),
    the path that the rows would allow."""
    if frame.has_rows or frame.spec.has_slopes or len(frame.groups) < 2 or estimate.seconds <= DENSE_SECONDS_LIMIT:
        return ""
    return ("; with the rows in memory (--engine memory) REML with Monte Carlo traces needs memory and time linear "
            "in the rows")
