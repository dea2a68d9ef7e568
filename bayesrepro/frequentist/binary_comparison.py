"""Do the levels of a factor (the systems) differ in 0/1 scores? The GLMM's answer: GLRT, means, contrasts.

H1 is the user's binary GLMM, H0 the same model without any fixed term
involving the factor; both are fitted by ML (Laplace) on the same rows and
compared by their likelihood ratio. Then every level's probability of
success (emmeans-style marginal mean, back-transformed) and every pairwise
contrast on the link scale, as an odds ratio and as a difference of
probabilities (``binary_contrasts``).
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from ..design import ModelFrame, model_frame, resolve_family
from ..errors import BayesreproError
from .binary_contrasts import binary_contrasts, binary_means
from .glmm import GlmmFit, fit_glmm_frame
from .glrt import GlrtResult, compare_fits, nested_frames


@dataclass
class BinaryComparison:
    test: GlrtResult
    means: pd.DataFrame
    contrasts: pd.DataFrame
    factor: str

    @property
    def fit(self) -> GlmmFit:
        return self.test.h1

    def to_dict(self) -> dict:
        return {"test": self.test.to_dict(), "factor": self.factor, "variances": dict(self.fit.variances),
                "means": self.means.to_dict(orient="records"), "contrasts": self.contrasts.to_dict(orient="records")}

    def __str__(self) -> str:
        link = self.fit.link
        contrasts = ["contrast", "estimate", "std_error", "p_holm"]
        contrasts += ["odds_ratio"] if link == "logit" else []
        contrasts += ["probability_difference", "probability_low", "probability_high", "probability_p_holm"]
        return "\n".join([
            str(self.test),
            f"Estimated probabilities per {self.factor} ({link} means back-transformed, 95 % interval):",
            _indent(self.means[[self.factor, "probability", "low", "high"]]),
            f"Pairwise contrasts ({link} scale with Holm-adjusted p; odds ratio; difference of probabilities):",
            _indent(self.contrasts[contrasts]),
        ])


def compare_binary_levels(h1, data=None, factor: str = "system", where: str | None = None,
                          drop_missing: bool = False, family: str = "auto", link: str | None = None) -> BinaryComparison:
    """GLRT of ``factor`` in the binary GLMM ``h1`` (a formula or a frame), with means and contrasts."""
    frame1 = h1 if isinstance(h1, ModelFrame) else model_frame(h1, data, where, drop_missing)
    if factor not in frame1.spec.fixed_variables:
        raise BayesreproError(f"'{factor}' is not a fixed effect of {frame1.formula!r}; add it to the formula")
    resolved = resolve_family(frame1, family, link)
    if not resolved.binary:
        raise BayesreproError(f"'{frame1.response}' is not binary; compare the levels of a Gaussian model with compare_levels")
    h0 = frame1.spec.rewritten(drop_fixed=lambda used: factor in used)
    frame0, frame1 = nested_frames(h0, frame1)
    fit0, fit1 = fit_glmm_frame(frame0, resolved), fit_glmm_frame(frame1, resolved)
    test = compare_fits(fit0, fit1, variance_component_only=False)
    test.family = resolved.name
    return BinaryComparison(test, binary_means(fit1, frame1, factor), binary_contrasts(fit1, frame1, factor), factor)


def _indent(table: pd.DataFrame) -> str:
    text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}")
    return "\n".join("  " + line for line in text.splitlines())
