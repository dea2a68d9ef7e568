"""The field's other instruments, to set beside the model-based analysis.

Resampling significance tests, expected best score under a budget,
chance-corrected agreement coefficients and the GAM circularity test.
"""

from .agreement import AgreementResult, agreement, cohen_kappa, krippendorff_alpha, scott_pi
from .budget import (ExpectedMaxResult, configuration_scores, expected_max, expected_max_closed_form,
                     plot_expected_max)
from .circularity import CircularityResult, circularity_test
from .resampling import ResamplingResult, multi_bootstrap_test, paired_bootstrap_test, permutation_test
from .systems import SystemScores, system_scores

__all__ = [
    "AgreementResult", "agreement", "cohen_kappa", "krippendorff_alpha", "scott_pi",
    "ExpectedMaxResult", "configuration_scores", "expected_max", "expected_max_closed_form",
    "plot_expected_max", "CircularityResult", "circularity_test", "ResamplingResult",
    "multi_bootstrap_test", "paired_bootstrap_test", "permutation_test", "SystemScores", "system_scores",
]
