"""Generalized likelihood-ratio tests between nested LMMs.

Both models are fitted by ML on the same rows (REML likelihoods of models with
different fixed effects are not comparable). When the models differ only in
one variance component, the null value lies on the boundary of the parameter
space and the statistic follows a 50:50 mixture of χ²₀ and χ²₁ (Self & Liang
1987; Stram & Lee 1994): the p-value is half the χ²₁ one. Both are
asymptotic; with few levels of the grouping factor that carries the tested
effect, the p-value is taken from a calibrated reference instead (Kenward–Roger
or Satterthwaite F test, parametric bootstrap, exact restricted LRT; the rule
is in ``reference``). The result says which reference was used and keeps the
asymptotic p-value beside it. 0/1 scores are tested as Bernoulli GLMMs (or
binomial, for p(successes, trials)) fitted by ML with the Laplace
approximation, unless a Gaussian family is asked for; their only reference is
the asymptotic one. Covariance structures of random-slope models (H0 and
H1 differing in their random-effect terms) are referred in ``slope_glrt``;
H1 adding one variance with the covariances of its effect gets the 50:50
mixture of χ²_{df−1} and χ²_df (``compare_fits``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np
from scipy.special import chdtrc  # χ² upper tail; scipy.stats would add ~0.3 s to every start-up

from ..data import read_table, remove_missing, require_columns
from .. import limits
from ..errors import BayesreproError
from ..design import FormulaSpec, ModelFrame, build_model_frame, parse_formula, resolve_family
from . import reference as ref
from .bootstrap_test import bootstrap_workers, check_samples, read_against
from .fit_result import MixedFit, sd_count
from .fitting import fit_frame
from .lmm import fit_model_frame, require_memory

CHI2 = "chi2"
# Differences of −2 log L below this are within the optimizer's tolerance: the
# statistic is zero (which matters for the point mass of the boundary mixture).
STATISTIC_RESOLUTION = 1e-6
DEFAULT_SAMPLES = 1000
# Draws of the exact RLRT's null distribution: its Monte-Carlo SE at p = 0.05 is 0.001.
RLRT_DRAWS = 50_000


@dataclass
class GlrtResult:
    h0: MixedFit
    h1: MixedFit
    chi2: float                       # 2(ℓ₁ − ℓ₀) of the ML fits
    df: int
    p: float                          # read against ``reference``
    reference: str                    # what p was read against, in words
    method: str = ref.CHI2            # its key: chi2, kenward-roger, satterthwaite, bootstrap, exact-rlrt
    asymptotic_p: float | None = None  # from χ² (or the boundary mixture), kept beside a calibrated p
    asymptotic_reference: str = ""
    reason: str = ""                  # why this reference (the rule of --reference auto)
    details: dict = field(default_factory=dict)   # F and its df, or the simulation's size and Monte-Carlo SE
    family: str = "gaussian"

    @property
    def loglik_h0(self) -> float:
        return self.h0.loglik

    @property
    def loglik_h1(self) -> float:
        return self.h1.loglik

    @property
    def calibrated(self) -> bool:
        return self.method in ref.CALIBRATED

    def to_dict(self) -> dict:
        return {
            "chi2": self.chi2,
            "df": self.df,
            "p": self.p,
            "loglik_h0": self.loglik_h0,
            "loglik_h1": self.loglik_h1,
            "reference": self.reference,
            "method": self.method,
            "p_asymptotic": self.asymptotic_p,
            "asymptotic_reference": self.asymptotic_reference,
            "reason": self.reason,
            **self.details,
            "h0": self.h0.formula,
            "h1": self.h1.formula,
            "family": self.family,
        }

    def __str__(self) -> str:
        fits = "ML fits" if self.family == "gaussian" else f"ML fits, Laplace approximation, {self.family} GLMMs"
        lines = [
            f"GLRT ({fits}, {self.h1.n_obs} observations)",
            f"  H0: {self.h0.formula}   log-likelihood {self.loglik_h0:.4f}",
            f"  H1: {self.h1.formula}   log-likelihood {self.loglik_h1:.4f}",
            f"  chi2 = {self.chi2:.4f}, df = {self.df}, p = {self.p:.4g}   (reference: {self.reference})",
        ]
        if self.calibrated:
            lines.append(f"  asymptotic p = {self.asymptotic_p:.4g} ({self.asymptotic_reference})")
        if self.reason:
            lines.append(f"  reference chosen because {self.reason}" if self.reason != "requested"
                         else "  reference as requested")
        lines += [f"  note: {note}" for note in (self.h1.notes if self.family != "gaussian" else [])]
        return "\n".join(lines)


def glrt(h0, h1, data=None, where: str | None = None, drop_missing: bool = False, reference: str = ref.AUTO,
         bootstrap_samples: int = DEFAULT_SAMPLES, seed=None, workers: int | None = None, family: str = "auto",
         link: str | None = None) -> GlrtResult:
    """Test H0 against the larger H1 by the likelihood ratio of ML fits.

    ``h0`` and ``h1`` are formulas (then ``data`` is read and filtered by
    ``where``), or ``h1`` is a model frame already built and H0 is built on its rows.
    ``reference`` is ``auto`` (the rule of ``frequentist.reference``), ``chi2``
    (χ², or the boundary mixture for one variance component),
    ``kenward-roger``, ``satterthwaite``, ``bootstrap`` (``bootstrap_samples``
    refits, ``seed``, ``workers`` processes) or ``exact-rlrt``. ``family`` and
    ``link`` choose the model (``design.resolve_family``); binary GLMMs are read
    against χ² only.
    """
    reference = ref.check_reference(reference)
    samples = check_samples(bootstrap_samples)
    if seed is not None:
        limits.SEED.check(seed)
    frame0, frame1 = nested_frames(h0, h1, data, drop_missing, where)
    resolved = resolve_family(frame1, family, link)
    if resolved.binary:
        choice = _binary_reference(frame0, frame1, reference)
    else:
        require_memory(frame1, frame0)   # the larger model first
    fit0, fit1 = fit_frame(frame0, resolved, "ml"), fit_frame(frame1, resolved, "ml")
    test = compare_fits(fit0, fit1, variance_component_only=fixed_parts_equal(frame0, frame1),
                        added_variances=sd_count(fit1) - sd_count(fit0))
    if resolved.binary:
        return _calibrate_binary(dataclasses.replace(test, family=resolved.name), frame0, frame1, choice, samples, seed,
                                 workers)
    return calibrate(test, frame0, frame1, reference, samples, seed, workers)


BINARY_SLOPES_REASON = ("binary models with random slopes are read against the asymptotic reference (a 50:50 chi2 "
                        "mixture where one variance is added, else chi2); with few levels of the factor that carries "
                        "the effect it can be liberal (glrt --reference bootstrap calibrates it)")
BINARY_REFERENCE_REASON = ("binary GLMMs are read against chi2 here; with few levels of the factor that carries the "
                           "effect the chi2 reference of a Laplace likelihood ratio is liberal (glrt --reference "
                           "bootstrap calibrates it)")


def _binary_reference(frame0: ModelFrame, frame1: ModelFrame, reference: str) -> ref.Choice:
    """The reference a binary GLRT is read against (refused before any fit where it is not available)."""
    if frame0.spec.has_slopes or frame1.spec.has_slopes:
        if reference not in (ref.AUTO, ref.CHI2, ref.BOOTSTRAP):
            raise BayesreproError(f"--reference {reference} is not available for binary models with random slopes; "
                                  "use --reference chi2 or bootstrap")
        return ref.Choice(ref.BOOTSTRAP, "requested") if reference == ref.BOOTSTRAP \
            else ref.Choice(ref.CHI2, BINARY_SLOPES_REASON)
    if reference == ref.AUTO:
        return ref.Choice(ref.CHI2, BINARY_REFERENCE_REASON)
    return ref.choose(frame0, frame1, _h0_design_on_h1_cells(frame0, frame1), reference, binary=True)


def _calibrate_binary(test: GlrtResult, frame0: ModelFrame, frame1: ModelFrame, choice: ref.Choice, samples: int,
                      seed, workers: int | None) -> GlrtResult:
    if choice.method == ref.CHI2:
        return dataclasses.replace(test, reason=choice.reason)
    from .binary_bootstrap import binary_bootstrap_lrt

    simulated = binary_bootstrap_lrt(frame0, frame1, test.h0, test.h1, samples, seed, bootstrap_workers(workers, samples))
    return read_against(test, simulated, f"parametric bootstrap, {samples} Laplace refits under H0", choice)


def compare_fits(fit0: MixedFit, fit1: MixedFit, variance_component_only: bool,
                 added_variances: int | None = None) -> GlrtResult:
    """The statistic and its asymptotic reference for two ML fits of nested models.

    ``variance_component_only``: the models share their fixed effects, and H1 adds ``added_variances`` variances
    (default: every added parameter is one), the rest of its added parameters being covariances. With one added
    variance its null value is on the boundary, and with it any covariances of its effect (Stram & Lee 1994):
    the statistic follows the 50:50 mixture of χ²_{df−1} and χ²_df (Self & Liang 1987). Covariances alone are
    interior: χ²_df. With several added variances χ²_df is conservative.
    """
    if fit0.method != "ml" or fit1.method != "ml":
        raise BayesreproError("a likelihood-ratio test needs ML fits of both models (method='ml')")
    df = fit1.n_parameters - fit0.n_parameters
    if df < 1:
        raise BayesreproError(f"H1 {fit1.formula!r} has no more parameters than H0 {fit0.formula!r}; swap them or add terms")
    statistic = 2.0 * (fit1.loglik - fit0.loglik)
    if statistic < STATISTIC_RESOLUTION:
        statistic = 0.0
    added = df if added_variances is None else added_variances
    if variance_component_only and added == 1:
        p, reference = mixture_p(df - 1, statistic), boundary_mixture(df - 1)
    else:
        p, reference = chdtrc(df, statistic), f"{CHI2}({df})"
    return GlrtResult(fit0, fit1, statistic, df, float(p), reference, asymptotic_p=float(p),
                      asymptotic_reference=reference)


def boundary_mixture(low: int) -> str:
    return f"0.5*{CHI2}({low}) + 0.5*{CHI2}({low + 1})"


def mixture_p(low: int, statistic: float) -> float:
    """Upper tail of the 50:50 mixture of χ²_low and χ²_(low+1); χ²₀ is a point mass at zero."""
    def tail(k: int) -> float:
        if k == 0:
            return 1.0 if statistic == 0 else 0.0
        return float(chdtrc(k, statistic))

    return 0.5 * tail(low) + 0.5 * tail(low + 1)


def calibrate(test: GlrtResult, frame0: ModelFrame, frame1: ModelFrame, reference: str = ref.AUTO,
              samples: int = DEFAULT_SAMPLES, seed=None, workers: int | None = None) -> GlrtResult:
    """The asymptotic ``test`` of H0 (``frame0``) against H1 (``frame1``) read against ``reference``."""
    if set(frame0.spec.random_terms) != set(frame1.spec.random_terms) and \
            (frame0.spec.has_slopes or frame1.spec.has_slopes):
        from .slope_glrt import calibrate_structure

        return calibrate_structure(test, fixed_parts_equal(frame0, frame1), frame0, frame1, reference, samples, seed,
                                   workers)
    x0_on_h1 = _h0_design_on_h1_cells(frame0, frame1)
    choice = ref.choose(frame0, frame1, x0_on_h1, reference)
    if choice.method == ref.CHI2:
        return dataclasses.replace(test, reason=choice.reason)
    if choice.method in (ref.KENWARD_ROGER, ref.SATTERTHWAITE):
        reml1 = fit_model_frame(frame1, "reml")
        choice = ref.unless_carrier_at_zero(choice, reml1)
        if choice.method != ref.BOOTSTRAP:
            from .ddf import frame_inference

            f = frame_inference(frame1, reml1).f_test(restriction_matrix(frame1, x0_on_h1), choice.method)
            return dataclasses.replace(test, p=f.p, reference=f"{f.describe()} = {f.f:.4g}", method=choice.method,
                                       reason=choice.reason,
                                       details={"f": f.f, "ndf": f.ndf, "ddf": f.ddf, "f_scaling": f.scaling})
    if choice.method == ref.BOOTSTRAP and frame1.spec.has_slopes:
        from .slope_bootstrap import row_bootstrap_lrt

        simulated = row_bootstrap_lrt(frame0, frame1, test.h0, test.h1, samples, seed,
                                      bootstrap_workers(workers, samples))
        text = f"parametric bootstrap, {samples} refits under H0"
    elif choice.method == ref.BOOTSTRAP:
        from .bootstrap_test import bootstrap_lrt

        simulated = bootstrap_lrt(frame0, frame1, test.h0, test.h1, x0_on_h1, samples, seed,
                                  bootstrap_workers(workers, samples))
        text = f"parametric bootstrap, {samples} refits under H0"
    else:
        from .rlrt import exact_rlrt

        reml0, reml1 = fit_model_frame(frame0, "reml"), fit_model_frame(frame1, "reml")
        component = ref.test_kind(frame0, frame1).random[0]
        simulated = exact_rlrt(frame1, reml0, reml1, component, RLRT_DRAWS, seed)
        text = f"exact restricted LRT = {simulated.statistic:.4g} against {RLRT_DRAWS} draws of its null"
    return read_against(test, simulated, text, choice)


def restriction_matrix(frame1: ModelFrame, x0_on_h1_cells: np.ndarray) -> np.ndarray:
    """L with H0 ⇔ Lβ = 0 on H1's coefficients: an orthonormal basis of the directions H0 removes."""
    import scipy.linalg

    to_h1, *_ = np.linalg.lstsq(frame1.X_cells, x0_on_h1_cells, rcond=None)
    return scipy.linalg.null_space(to_h1.T).T


def nested_frames(h0, h1, data=None, drop_missing: bool = False, where: str | None = None) -> tuple[ModelFrame, ModelFrame]:
    """Both models on the same rows, H0 checked to be nested in H1; ``h1`` may be a frame already built."""
    if isinstance(h1, ModelFrame):
        frame1 = h1
        frame0 = h0 if isinstance(h0, ModelFrame) else frame1.sibling(parse_formula(h0, slopes=True))
        _check_same_response(frame0.spec, frame1.spec)
    else:
        spec0, spec1 = parse_formula(h0, slopes=True), parse_formula(h1, slopes=True)
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
    _check_nested_terms(frame0.spec, frame1.spec)
    same_random = set(frame0.spec.random_terms) == set(frame1.spec.random_terms)
    if groups0 == groups1 and same_random and frame0.n_fixed == frame1.n_fixed:
        raise BayesreproError("H0 and H1 are the same model; H1 needs extra fixed effects or variance components")


def _check_nested_terms(spec0: FormulaSpec, spec1: FormulaSpec) -> None:
    """Every random-effect term of H0 lies within H1's: its effects in one H1 term on the same factor (so that its
    correlations exist in H1), or, a single effect, in any."""
    for term in spec0.random_terms:
        effects = _effects(term)
        blocks = [_effects(other) for other in spec1.random_terms if other.factor == term.factor]
        inside = any(effects <= block for block in blocks) or (len(effects) == 1 and effects <= set().union(*blocks))
        if not inside:
            raise BayesreproError(f"models are not nested: H0's random-effect term '{term.text}' is not contained in "
                                  f"H1's terms on '{term.group}'")


def _effects(term) -> set[str]:
    return ({"1"} if term.intercept else set()) | set(term.slopes)


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
