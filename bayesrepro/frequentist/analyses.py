"""The papers' analyses built from fits, GLRTs and contrasts.

- system comparison: omnibus GLRT, estimated means, Holm-adjusted pairwise
  contrasts with the papers' effect size (contrast / residual SD of H1);
- comparison conditional on a data property: GLRT of the interaction, then
  contrasts within each level (categorical property) or slopes (numeric);
- the same for a meta-parameter as fixed effect (hyperparameter assessment);
- the averaged-replications analysis that shows the power lost by averaging;
- a likelihood-ratio test of one variance component ("does the seed matter?").

Every test takes ``reference`` (``frequentist.reference``): by default the
χ² where the tested effect is carried by factors with many levels, a
calibrated reference where it is carried by a few (seeds, say). The contrasts
follow the omnibus test: Wald z tests on the ML fit next to a χ² test, t tests
with Kenward–Roger (or, when asked, Satterthwaite) degrees of freedom on the
REML fit next to a calibrated one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.stats

from ..data import read_table, require_columns
from ..errors import BayesreproError
from ..design import Family, FormulaSpec, ModelFrame, build_model_frame, parse_formula
from . import reference as ref
from .binary_contrasts import binary_contrasts, binary_means
from .contrasts import SmallSample, estimated_means, pairwise_contrasts, slopes
from .ddf import KENWARD_ROGER, SATTERTHWAITE, frame_inference
from .fitting import fit_frame
from .glrt import (DEFAULT_SAMPLES, GlrtResult, calibrate, check_samples, compare_fits, fixed_parts_equal, glrt,
                   nested_frames)
from .lmm import fit_model_frame, require_memory


@dataclass
class Comparison:
    """Omnibus test plus the post-hoc tables that explain it.

    For a binary GLMM (``test.family``) the means are per-level probabilities
    (link-scale means back-transformed) and the contrasts are on the link
    scale, as odds ratios (logit) and as differences of probabilities
    (``binary_contrasts``).
    """

    test: GlrtResult
    means: pd.DataFrame | None
    contrasts: pd.DataFrame
    factor: str
    by: str | None = None
    slopes: pd.DataFrame | None = None
    null_frame: ModelFrame | None = None   # H0 of the test, on the same rows

    @property
    def fit(self):
        """The ML fit of H1."""
        return self.test.h1

    @property
    def binary(self) -> bool:
        return self.test.family != "gaussian"

    def to_dict(self) -> dict:
        if self.binary:
            return {"test": self.test.to_dict(), "factor": self.factor, "variances": dict(self.fit.variances),
                    "means": self.means.to_dict(orient="records"), "contrasts": self.contrasts.to_dict(orient="records")}
        payload = {"test": self.test.to_dict(), "factor": self.factor, "by": self.by,
                   "contrasts": self.contrasts.to_dict(orient="records")}
        if self.means is not None:
            payload["means"] = self.means.to_dict(orient="records")
        if self.slopes is not None:
            payload["slopes"] = self.slopes.to_dict(orient="records")
        return payload

    def __str__(self) -> str:
        if self.binary:
            return self._binary_text()
        parts = [str(self.test)]
        if self.means is not None:
            parts += ["Estimated means (95 % interval):", _indent(self.means)]
        if self.slopes is not None:
            parts += [f"Slopes per level of {self.factor}:", _indent(self.slopes)]
        reference = self.contrasts["reference"].iloc[0] if len(self.contrasts) else ref.CHI2
        parts += [f"Pairwise contrasts ({reference}; Holm-adjusted p; effect size = estimate / residual SD of H1):",
                  _indent(self.contrasts.drop(columns="reference"))]
        return "\n".join(parts)

    def _binary_text(self) -> str:
        link = self.fit.link
        contrasts = ["contrast", "estimate", "std_error", "p_holm"] + (["odds_ratio"] if link == "logit" else [])
        contrasts += ["probability_difference", "probability_low", "probability_high", "probability_p_holm"]
        return "\n".join([
            str(self.test),
            f"Estimated probabilities per {self.factor} ({link} means back-transformed, 95 % interval):",
            _indent(self.means[[self.factor, "probability", "low", "high"]]),
            f"Pairwise contrasts ({link} scale with Holm-adjusted p; odds ratio; difference of probabilities):",
            _indent(self.contrasts[contrasts]),
        ])


def compare_levels(h1, data=None, factor: str = "system", where: str | None = None,
                   drop_missing: bool = False, reference: str = ref.AUTO, bootstrap_samples: int = DEFAULT_SAMPLES,
                   seed=None, h0=None) -> Comparison:
    """Do the levels of ``factor`` differ? H0 drops every fixed term involving it (or is ``h0``, when given).

    ``h1`` is a formula (then ``data`` is read and filtered by ``where``) or a model frame already built.
    """
    spec = _spec(h1)
    require_fixed(spec, factor)
    h0 = h0 or spec.rewritten(drop_fixed=lambda used: factor in used)
    test, frame0, frame1, small = _tested(h0, h1, data, where, drop_missing, reference, bootstrap_samples, seed)
    fit = small.fit if small else test.h1
    means = estimated_means(fit, frame1, factor, small_sample=small)
    contrasts = pairwise_contrasts(fit, frame1, factor, small_sample=small)
    return Comparison(test, means, contrasts, factor, null_frame=frame0)


def compare_conditional(h1, data=None, factor: str = "system", by: str | None = None, where: str | None = None,
                        drop_missing: bool = False, reference: str = ref.AUTO,
                        bootstrap_samples: int = DEFAULT_SAMPLES, seed=None, h0=None) -> Comparison:
    """Does the difference between levels of ``factor`` depend on the data property ``by``?

    H0 drops the interaction terms of ``factor`` and ``by`` (or is ``h0``, when given). For a categorical
    property, levels are compared within each of its levels; for a numeric
    one, the slope of the score in it is estimated per level and compared.
    """
    spec = _spec(h1)
    if by is None:
        raise BayesreproError("a conditional comparison needs 'by', the data property the factor interacts with")
    require_fixed(spec, factor)
    require_fixed(spec, by)
    if not any({factor, by} <= used for used in spec.term_variables):
        raise BayesreproError(f"H1 {spec.formula!r} has no interaction of '{factor}' and '{by}'; write {factor}*{by}")
    h0 = h0 or spec.rewritten(drop_fixed=lambda used: {factor, by} <= used)
    test, frame0, frame1, small = _tested(h0, h1, data, where, drop_missing, reference, bootstrap_samples, seed)
    fit = small.fit if small else test.h1
    if _is_numeric(frame1.cells[by]):
        per_level, differences = slopes(fit, frame1, by, factor, small_sample=small)
        return Comparison(test, None, differences, factor, by, slopes=per_level, null_frame=frame0)
    means = estimated_means(fit, frame1, factor, by=by, small_sample=small)
    contrasts = pairwise_contrasts(fit, frame1, factor, by=by, small_sample=small)
    return Comparison(test, means, contrasts, factor, by, null_frame=frame0)


def compare_binary_levels(frame1: ModelFrame, family: Family, factor: str = "system", by: str | None = None,
                          h0=None) -> Comparison:
    """Do the levels of ``factor`` differ in the 0/1 scores of ``frame1``'s binary GLMM (``family``)?

    H0 drops every fixed term involving ``factor`` (with ``by``: its interactions with ``by``), or is ``h0``;
    both are fitted by ML on the same rows and compared by their likelihood ratio, read against χ². Then every
    level's probability of success and every pairwise contrast (``binary_contrasts``).
    """
    h0 = h0 or frame1.spec.rewritten(drop_fixed=lambda used: factor in used and (by is None or by in used))
    frame0, frame1 = nested_frames(h0, frame1)
    fit1 = fit_frame(frame1, family, "ml")
    test = compare_fits(fit_frame(frame0, family, "ml"), fit1, variance_component_only=fixed_parts_equal(frame0, frame1))
    return Comparison(dataclasses.replace(test, family=family.name), binary_means(fit1, frame1, factor, by),
                      binary_contrasts(fit1, frame1, factor, by), factor, by, null_frame=frame0)


def variance_component_test(h1, component: str, data=None, where: str | None = None,
                            drop_missing: bool = False, reference: str = ref.AUTO,
                            bootstrap_samples: int = DEFAULT_SAMPLES, seed=None) -> GlrtResult:
    """Does the variance of ``component`` differ from zero? (the boundary mixture, or a calibrated reference)"""
    spec = _spec(h1)
    if component not in spec.group_names:
        raise BayesreproError(
            f"'{component}' is not a random intercept of {spec.formula!r}; its groupings are: {', '.join(spec.group_names) or 'none'}"
        )
    h0 = spec.rewritten(drop_group=lambda columns: ":".join(columns) == component)
    return glrt(h0, h1, data, where=where, drop_missing=drop_missing, reference=reference,
                bootstrap_samples=bootstrap_samples, seed=seed)


@dataclass
class AveragedAnalysis:
    """Averaging replications before testing, next to the LMM on every score."""

    n_averaged: int
    f_statistic: float
    df: tuple[int, int]
    p: float
    residual_sd: float
    lmm: GlrtResult
    lmm_residual_sd: float

    def to_dict(self) -> dict:
        return {"n_averaged": self.n_averaged, "f": self.f_statistic, "df": list(self.df), "p": self.p,
                "residual_sd": self.residual_sd, "lmm_p": self.lmm.p, "lmm_chi2": self.lmm.chi2,
                "lmm_residual_sd": self.lmm_residual_sd}

    def __str__(self) -> str:
        return (
            f"Averaged over replications, linear model ({self.n_averaged} means): F({self.df[0]}, {self.df[1]}) = "
            f"{self.f_statistic:.3f}, p = {self.p:.3g}, residual SD {self.residual_sd:.4f}\n"
            f"LMM with item effect on all scores: chi2({self.lmm.df}) = {self.lmm.chi2:.2f}, p = {self.lmm.p:.3g}, "
            f"residual SD {self.lmm_residual_sd:.4f}"
        )


def averaged_comparison(data, score: str, factor: str, item: str, where: str | None = None) -> AveragedAnalysis:
    """The analysis that averages replications per item and level, then fits ``score ~ factor``.

    Without the item effect the item-to-item variation stays in the residual
    and swamps the system differences; the LMM on all scores removes it.
    """
    frame = read_table(data, where=where)
    require_columns(frame, [score, factor, item], "column")
    means = frame.groupby([item, factor], observed=True)[score].mean().reset_index()
    fit_h1 = build_model_frame(f"{score} ~ {factor}", means)
    fit_h0 = build_model_frame(f"{score} ~ 1", means)
    rss1, rss0 = _rss(fit_h1.X, fit_h1.y), _rss(fit_h0.X, fit_h0.y)
    df1 = fit_h1.X.shape[1] - fit_h0.X.shape[1]
    df2 = fit_h1.n_obs - fit_h1.X.shape[1]
    f_statistic = ((rss0 - rss1) / df1) / (rss1 / df2)
    lmm = glrt(f"{score} ~ 1 + (1|{item})", f"{score} ~ {factor} + (1|{item})", frame)
    lmm_reml = fit_model_frame(build_model_frame(f"{score} ~ {factor} + (1|{item})", frame), "reml")
    return AveragedAnalysis(
        n_averaged=len(means),
        f_statistic=float(f_statistic),
        df=(df1, df2),
        p=float(scipy.stats.f.sf(f_statistic, df1, df2)),
        residual_sd=float(np.sqrt(rss1 / df2)),
        lmm=lmm,
        lmm_residual_sd=lmm_reml.residual_sd,
    )


def _tested(h0, h1, data, where, drop_missing, reference, samples, seed):
    """The omnibus test read against ``reference``, its frames, and the small-sample machinery of the contrasts.

    The contrasts get Kenward–Roger (Satterthwaite when that was asked for)
    t tests whenever the omnibus test is calibrated; when it is not, Wald z
    tests on the ML fit (None).
    """
    reference = ref.check_reference(reference)
    samples = check_samples(samples)
    frame0, frame1 = nested_frames(h0, h1, data, drop_missing, where)
    require_memory(frame1, frame0)   # the larger model first
    fit0, fit1 = fit_model_frame(frame0, "ml"), fit_model_frame(frame1, "ml")
    test = calibrate(compare_fits(fit0, fit1, variance_component_only=fixed_parts_equal(frame0, frame1)), frame0, frame1,
                     reference, samples, seed)
    small = None
    if test.calibrated and ref.dense_size(frame1) <= ref.DENSE_LIMIT:
        reml = fit_model_frame(frame1, "reml")
        method = SATTERTHWAITE if test.method == SATTERTHWAITE else KENWARD_ROGER
        small = SmallSample(reml, frame_inference(frame1, reml), method)
    return test, frame0, frame1, small


def _spec(h1) -> FormulaSpec:
    return h1.spec if isinstance(h1, ModelFrame) else parse_formula(h1)


def _rss(X: np.ndarray, y: np.ndarray) -> float:
    coefficients, *_ = np.linalg.lstsq(X, y, rcond=None)
    residual = y - X @ coefficients
    return float(residual @ residual)


def require_fixed(spec, column: str) -> None:
    if column not in spec.fixed_variables:
        raise BayesreproError(f"'{column}' is not a fixed effect of {spec.formula!r}; add it to the formula")


def _is_numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not isinstance(values.dtype, pd.CategoricalDtype)


def _indent(table: pd.DataFrame) -> str:
    text = table.to_string(index=False, float_format=lambda v: f"{v:.4g}")
    return "\n".join("  " + line for line in text.splitlines())
