"""The field's other instruments, to set beside the model-based analysis.

Resampling significance tests, expected best score under a budget,
chance-corrected agreement coefficients, the GAM circularity test, and the
usual error bars of 0/1 scores (Wilson, clustered SE, paired, McNemar).
"""

from .agreement import AgreementResult, agreement, cohen_kappa, krippendorff_alpha, scott_pi
from .binary_baselines import (BinaryBaselines, binary_baselines, clustered_standard_error, mcnemar_test,
                               paired_difference, wilson_interval)
from .budget import (ExpectedMaxResult, configuration_scores, expected_max, expected_max_closed_form,
                     plot_expected_max)
from .circularity import CircularityResult, circularity_test
from .resampling import ResamplingResult, multi_bootstrap_test, paired_bootstrap_test, permutation_test
from .systems import SystemScores, system_scores

__all__ = [
    "AgreementResult", "agreement", "cohen_kappa", "krippendorff_alpha", "scott_pi",
    "BinaryBaselines", "binary_baselines", "clustered_standard_error", "mcnemar_test", "paired_difference",
    "wilson_interval",
    "ExpectedMaxResult", "configuration_scores", "expected_max", "expected_max_closed_form",
    "plot_expected_max", "CircularityResult", "circularity_test", "ResamplingResult",
    "multi_bootstrap_test", "paired_bootstrap_test", "permutation_test", "SystemScores", "system_scores",
]
