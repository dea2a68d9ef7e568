"""Generalized likelihood-ratio tests between nested random-intercept models (LMMs, or binary GLMMs).

Both models are fitted by ML on the same rows (REML likelihoods of models with
different fixed effects are not comparable). When the models differ only in
one variance component, the null value lies on the boundary of the parameter
space and the statistic follows a 50:50 mixture of χ²₀ and χ²₁ (Self & Liang
1987; Stram & Lee 1994): the p-value is half the χ²₁ one. The result says
which reference distribution was used. 0/1 scores are tested as Bernoulli
GLMMs (or binomial, for p(successes, trials)) fitted by ML with the Laplace
approximation, unless a Gaussian family is asked for.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import chdtrc  # χ² upper tail; scipy.stats would add ~0.3 s to every start-up

from ..data import read_table, remove_missing, require_columns
from ..errors import BayesreproError
from ..design import FormulaSpec, ModelFrame, build_model_frame, parse_formula, resolve_family
from .lmm import LmmFit, fit_model_frame

CHI2 = "chi2"
BOUNDARY_MIXTURE = "0.5*chi2(0) + 0.5*chi2(1)"
# Differences of −2 log L below this are within the optimizer's tolerance: the
# statistic is zero (which matters for the point mass of the boundary mixture).
STATISTIC_RESOLUTION = 1e-6


@dataclass
class GlrtResult:
    h0: LmmFit
    h1: LmmFit
    chi2: float
    df: int
    p: float
    reference: str
    family: str = "gaussian"

    @property
    def loglik_h0(self) -> float:
        return self.h0.loglik

    @property
    def loglik_h1(self) -> float:
        return self.h1.loglik

    def to_dict(self) -> dict:
        return {
            "chi2": self.chi2,
            "df": self.df,
            "p": self.p,
            "loglik_h0": self.loglik_h0,
            "loglik_h1": self.loglik_h1,
            "reference": self.reference,
            "h0": self.h0.formula,
            "h1": self.h1.formula,
            "family": self.family,
        }

    def __str__(self) -> str:
        fits = "ML fits" if self.family == "gaussian" else f"ML fits, Laplace approximation, {self.family} GLMMs"
        return (
            f"GLRT ({fits}, {self.h1.n_obs} observations)\n"
            f"  H0: {self.h0.formula}   log-likelihood {self.loglik_h0:.4f}\n"
            f"  H1: {self.h1.formula}   log-likelihood {self.loglik_h1:.4f}\n"
            f"  chi2 = {self.chi2:.4f}, df = {self.df}, p = {self.p:.4g}   (reference: {self.reference})"
        ) + "".join(f"\n  note: {note}" for note in (self.h1.notes if self.family != "gaussian" else []))


def glrt(h0, h1, data=None, where: str | None = None, drop_missing: bool = False, family: str = "auto",
         link: str | None = None) -> GlrtResult:
    """Test H0 against the larger H1 by the likelihood ratio of ML fits.

    ``h0`` and ``h1`` are formulas (then ``data`` is read and filtered by
    ``where``), or ``h1`` is a model frame already built and H0 is built on its rows.
    ``family`` and ``link`` choose the model (``design.resolve_family``).
    """
    frame0, frame1 = nested_frames(h0, h1, data, drop_missing, where)
    resolved = resolve_family(frame1, family, link)
    if resolved.binary:
        from .glmm import fit_glmm_frame

        fit0, fit1 = fit_glmm_frame(frame0, resolved), fit_glmm_frame(frame1, resolved)
    else:
        fit0, fit1 = fit_model_frame(frame0, "ml"), fit_model_frame(frame1, "ml")
    result = compare_fits(fit0, fit1, variance_component_only=fixed_parts_equal(frame0, frame1))
    result.family = resolved.name
    return result


def compare_fits(fit0: LmmFit, fit1: LmmFit, variance_component_only: bool) -> GlrtResult:
    """The statistic and its reference distribution for two ML fits of nested models."""
    if fit0.method != "ml" or fit1.method != "ml":
        raise BayesreproError("a likelihood-ratio test needs ML fits of both models (method='ml')")
    df = fit1.n_parameters - fit0.n_parameters
    if df < 1:
        raise BayesreproError(f"H1 {fit1.formula!r} has no more parameters than H0 {fit0.formula!r}; swap them or add terms")
    statistic = 2.0 * (fit1.loglik - fit0.loglik)
    if statistic < STATISTIC_RESOLUTION:
        statistic = 0.0
    if variance_component_only and df == 1:
        # χ²₀ is a point mass at zero: it adds 0.5 to the tail only at a zero statistic
        p = 0.5 * chdtrc(1, statistic) + (0.5 if statistic == 0 else 0.0)
        reference = BOUNDARY_MIXTURE
    else:
        p, reference = chdtrc(df, statistic), f"{CHI2}({df})"
    return GlrtResult(fit0, fit1, statistic, df, float(p), reference)


def nested_frames(h0, h1, data=None, drop_missing: bool = False, where: str | None = None) -> tuple[ModelFrame, ModelFrame]:
    """Both models on the same rows, H0 checked to be nested in H1; ``h1`` may be a frame already built."""
    if isinstance(h1, ModelFrame):
        frame1 = h1
        frame0 = h0 if isinstance(h0, ModelFrame) else frame1.sibling(parse_formula(h0))
        _check_same_response(frame0.spec, frame1.spec)
    else:
        spec0, spec1 = parse_formula(h0), parse_formula(h1)
        _check_same_response(spec0, spec1)
        rows = read_table(data, where=where)
        for spec in (spec0, spec1):
            require_columns(rows, spec.variables, f"formula term in {spec.formula!r},")
        rows, _ = remove_missing(rows, list(dict.fromkeys(spec1.variables + spec0.variables)), drop_missing)
        frame0, frame1 = build_model_frame(spec0, rows), build_model_frame(spec1, rows)
    _check_nested(frame0, frame1)
    return frame0, frame1


def _check_same_response(spec0: FormulaSpec, spec1: FormulaSpec) -> None:
    if spec0.response != spec1.response:
        raise BayesreproError(
            f"H0 and H1 model different responses ('{spec0.response}' and '{spec1.response}'); use the same score column"
        )


def _check_nested(frame0: ModelFrame, frame1: ModelFrame) -> None:
    groups0 = {frozenset(g.columns) for g in frame0.groups}
    groups1 = {frozenset(g.columns) for g in frame1.groups}
    extra = groups0 - groups1
    if extra:
        names = ", ".join(":".join(sorted(g)) for g in extra)
        raise BayesreproError(f"models are not nested: H0 has random intercepts for {names} that H1 lacks")
    if not _column_space_contains(frame1.X_cells, _h0_design_on_h1_cells(frame0, frame1)):
        raise BayesreproError(
            f"models are not nested: the fixed effects of H0 {frame0.formula!r} are not contained in those of "
            f"H1 {frame1.formula!r}"
        )
    if groups0 == groups1 and frame0.n_fixed == frame1.n_fixed:
        raise BayesreproError("H0 and H1 are the same model; H1 needs extra fixed effects or variance components")


def _h0_design_on_h1_cells(frame0: ModelFrame, frame1: ModelFrame) -> np.ndarray:
    """H0's fixed design evaluated on H1's cells (equal rows give equal spans, so cells stand for rows)."""
    missing = [v for v in frame0.spec.fixed_variables if v not in frame1.cells.columns]
    if missing:
        raise BayesreproError(
            f"models are not nested: H0 {frame0.formula!r} uses '{missing[0]}', which H1 {frame1.formula!r} does not"
        )
    if not frame0.spec.fixed_variables:
        return frame0.X_cells[np.zeros(len(frame1.cells), dtype=int)]
    return frame0.design_rows(frame1.cells[list(frame0.spec.fixed_variables)])


def fixed_parts_equal(frame0: ModelFrame, frame1: ModelFrame) -> bool:
    return frame0.n_fixed == frame1.n_fixed and _column_space_contains(_h0_design_on_h1_cells(frame0, frame1),
                                                                       frame1.X_cells)


def _column_space_contains(big: np.ndarray, small: np.ndarray) -> bool:
    """Does span(big) contain every column of small? (least-squares residuals vanish)"""
    if small.shape[1] == 0:
        return True
    if big.shape[1] == 0:
        return False
    coefficients, *_ = np.linalg.lstsq(big, small, rcond=None)
    residual = small - big @ coefficients
    return bool(np.all(np.linalg.norm(residual, axis=0) <= 1e-8 * np.maximum(1.0, np.linalg.norm(small, axis=0))))
