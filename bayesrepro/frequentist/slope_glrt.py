"""References of likelihood-ratio tests between covariance structures of random-slope models.

``(1|g)`` against ``(1 + x|g)``, ``(x||g)`` against ``(x|g)``: H0 and H1 differ
in their random-effect terms. The asymptotic reference (``glrt.compare_fits``)
is exact in the limit for one added variance with its covariances (the 50:50
mixture of Self & Liang 1987 and Stram & Lee 1994) and for covariances alone
(χ²); with several added variances χ² is conservative. The parametric
bootstrap on the rows (``slope_bootstrap``) is the calibrated reference; it
refits both models per replicate on the sparse core, so it is asked for, not
chosen by ``auto``.
"""

from __future__ import annotations

import dataclasses

from ..design import ModelFrame
from ..errors import BayesreproError
from . import reference as ref
from .bootstrap_test import bootstrap_workers, read_against
from .fit_result import sd_count

MIXTURE_REASON = ("H1 adds one variance (with the covariances of its effect, if any): its null value is on the "
                  "boundary, where the likelihood ratio follows the 50:50 chi2 mixture (Self & Liang 1987; "
                  "Stram & Lee 1994)")
INTERIOR_REASON = ("H1 adds covariances only: their null values are inside the parameter space, where the "
                   "likelihood ratio follows chi2 with their number as df")
CONSERVATIVE_REASON = ("H1 adds several variances: chi2 with the added parameters as df is conservative there "
                       "(Stram & Lee 1994)")
FIXED_TOO_REASON = ("H1 adds fixed effects and covariance parameters: chi2 with the added parameters as df, "
                    "conservative where a variance is added (Stram & Lee 1994)")
CALIBRATE_HINT = "; with few levels, --reference bootstrap calibrates it"
EXACT_RLRT_REFUSAL = ("--reference exact-rlrt is not available for models with random slopes: its exact null "
                      "distribution holds for one variance component without covariances (Crainiceanu & Ruppert "
                      "2004); use --reference bootstrap")


def asymptotic_reason(test, fixed_equal: bool) -> str:
    """Why ``test``'s asymptotic reference (``glrt.compare_fits``) is the one it is."""
    if not fixed_equal:
        return FIXED_TOO_REASON
    if test.reference.startswith("0.5*"):
        return MIXTURE_REASON
    return INTERIOR_REASON if sd_count(test.h1) == sd_count(test.h0) else CONSERVATIVE_REASON


def calibrate_structure(test, fixed_equal: bool, frame0: ModelFrame, frame1: ModelFrame, reference: str, samples: int,
                        seed, workers: int | None):
    """The asymptotic ``test`` of two covariance structures read against ``reference``; ``fixed_equal``: H0 and H1
    have the same fixed part (``glrt.fixed_parts_equal``)."""
    if reference == ref.EXACT_RLRT:
        raise BayesreproError(EXACT_RLRT_REFUSAL)
    if reference in (ref.KENWARD_ROGER, ref.SATTERTHWAITE):
        raise BayesreproError(f"--reference {reference} tests fixed effects of models with the same random-effect "
                              "terms, but H0 and H1 differ in theirs; use --reference bootstrap or chi2")
    reason = asymptotic_reason(test, fixed_equal)
    if reference != ref.BOOTSTRAP:
        return dataclasses.replace(test, reason=reason + (CALIBRATE_HINT if reference == ref.AUTO else ""))
    from .slope_bootstrap import row_bootstrap_lrt

    simulated = row_bootstrap_lrt(frame0, frame1, test.h0, test.h1, samples, seed, bootstrap_workers(workers, samples))
    return read_against(test, simulated, f"parametric bootstrap, {samples} refits under H0",
                         ref.Choice(ref.BOOTSTRAP, "requested"))
