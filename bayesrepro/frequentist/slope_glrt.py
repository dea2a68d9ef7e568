"""References of likelihood-ratio tests between covariance structures of random-slope models.

``(1|g)`` against ``(1 + x|g)``, ``(x||g)`` against ``(x|g)``: H0 and H1 share
their fixed effects and differ in the random-effect terms.
"""

from __future__ import annotations

import dataclasses

from ..design import ModelFrame
from ..errors import BayesreproError
from . import reference as ref

STRUCTURE_REASON = ("models with random slopes are read against chi2 with the added covariance parameters as df "
                    "(conservative where a variance is added, Stram & Lee 1994)")


def calibrate_structure(test, frame0: ModelFrame, frame1: ModelFrame, reference: str, samples: int, seed,
                        workers: int | None):
    """The asymptotic ``test`` of two covariance structures read against ``reference``."""
    if reference not in (ref.AUTO, ref.CHI2):
        raise BayesreproError(f"--reference {reference} is not available for models with random slopes; "
                              "use --reference chi2")
    return dataclasses.replace(test, reason=STRUCTURE_REASON)
