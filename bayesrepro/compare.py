"""One formula, both engines: the frequentist and the Bayesian answer side by side.

For every variance component, its percent of the total and φ: the REML
estimate with a parametric-bootstrap interval (Wald intervals for variances
are poor near zero) next to the posterior median and interval. For the
levels of a categorical fixed factor (optionally within the levels of a data
property): the omnibus GLRT, Wald p-values of pairwise contrasts next to the
posterior interval and probability of direction. Where the two engines tell
different stories, a sentence says so.

The Bayesian contrasts apply the frequentist contrast weights (the same
reference grid) to the posterior draws of the fixed effects, so both columns
estimate exactly the same linear combination.
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from . import limits
from .bayes.posterior import check_probability
from .bayes.sampling import SamplingSettings
from .bayes.slope_loo import slope_item_factor
from .choices import DEFAULT_BOOTSTRAP
from .errors import BayesreproError
from .design import ModelFrame, model_frame, parse_formula, resolve_family
from .design.cells import mean_of
from .compare_binary import binary_comparison, glmm_bootstrap
from .frequentist.binary_slope_bootstrap import binary_slope_bootstrap
from .frequentist.general_lmm import needs_general_core
from .frequentist.glmm import fitted_on_rows
from .frequentist.bootstrap_test import reml_refits
from .frequentist.fitting import fit_frame
from .frequentist.lmm_fit import LmmFit
from .frequentist.reference import AUTO, SATTERTHWAITE
from .frequentist.covariance_structure import TERM_VARIANCE_NOTE
from .frequentist.slope_variance_bootstrap import slope_variance_bootstrap
from .progress import Progress
from .reliability import koo_li_label, koo_li_probabilities, object_of_measurement
from .runtime import numerical_work

ALPHA = 0.05
# A component REML puts at exactly zero is flagged when the posterior allows it
# more than one percentage point of the total variance: a share that size
# changes a VCA table a reader would act on.
WIDE_SHARE = 0.01
SLOPE_REFERENCE_REASON = ("the model has random slopes: its fixed effects are tested as lmerTest tests them, "
                          "by Satterthwaite's F and t on the REML fit")
SLOPE_LOO_NOTE = ("leave-one-item-out LOO of a model with random slopes (or --prior brms) is given when every random "
                  "term is of one grouping factor: with terms of several factors an item's likelihood needs each "
                  "draw's effects of the others, which its posterior does not record; the GLRT stands alone")


@dataclass
class SideBySide:
    """Frequentist and Bayesian estimates of the same quantities, and where they disagree."""

    formula: str
    object: str | None
    n_obs: int
    prob: float
    estimates: pd.DataFrame            # quantity, component, reml, boot_low, boot_high, median, low, high
    contrasts: pd.DataFrame | None     # Wald/GLRT next to posterior, one row per contrast
    means: pd.DataFrame | None         # estimated means (or slopes) per cell, both engines
    tests: list[dict]
    flags: list[str]
    reml: LmmFit                       # the frequentist fit: REML, or ML (Laplace) of a binary GLMM (GlmmFit)
    bayes: object                      # bayes.BayesFit
    bootstrap: pd.DataFrame            # one row of variances per bootstrap replicate
    bootstrap_unconverged: int
    factor: str | None = None
    by: str | None = None
    seed: int | None = None
    notes: list[str] = field(default_factory=list)
    method: str = "REML"               # of the frequentist fit, as printed: "REML" or "ML (Laplace)"

    @property
    def variances(self) -> dict[str, float]:
        """The frequentist estimate of every component, residual included (latent scale for 0/1 scores)."""
        rows = self.estimates[self.estimates["quantity"] == "variance"]
        return dict(zip(rows["component"], rows["reml"]))

    @property
    def phi(self) -> pd.Series | None:
        rows = self.estimates[self.estimates["quantity"] == "phi"]
        return rows.iloc[0] if len(rows) else None

    def to_dict(self) -> dict:
        diagnostics = self.bayes.diagnostics
        return _plain({
            "formula": self.formula,
            "object": self.object,
            "n_obs": self.n_obs,
            "prob": self.prob,
            "estimates": self.estimates.to_dict(orient="records"),
            "contrasts": None if self.contrasts is None else self.contrasts.to_dict(orient="records"),
            "means": None if self.means is None else self.means.to_dict(orient="records"),
            "tests": self.tests,
            "flags": self.flags,
            "frequentist": {"method": self.method, "bootstrap_replicates": len(self.bootstrap),
                            "bootstrap_unconverged": self.bootstrap_unconverged, "boundary": self.reml.boundary,
                            "converged": self.reml.converged},
            "bayesian": {"backend": self.bayes.backend, "family": self.bayes.family,
                         "chains": diagnostics.chains, "draws": diagnostics.draws,
                         "diagnostics": diagnostics.as_dict(),
                         "priors": self.bayes.prior_table.to_dict(orient="records")},
            "seed": self.seed,
            "notes": self.notes,
        })

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def not_converged(self) -> list[str]:
        """What did not converge, one phrase each; empty when both engines converged."""
        problems = []
        if not self.reml.converged:
            problems.append(f"the {self.method} fit did not converge ({self.reml.message})")
        if not self.bayes.diagnostics.converged:
            problems.append(f"the sampler did not converge ({self.bayes.diagnostics.line()})")
        return problems

    def __str__(self) -> str:
        level = f"{100 * self.prob:g} %"
        d = self.bayes.diagnostics
        lines = [
            f"Frequentist and Bayesian answers for {self.formula} ({self.n_obs} observations)",
            f"  frequentist: {self.method}, {level} parametric-bootstrap intervals ({len(self.bootstrap)} replicates)",
            f"  Bayesian: posterior median and {level} interval ({self.bayes.backend} backend, "
            f"{d.chains} chains x {d.draws} draws; {'converged' if d.converged else 'NOT converged'})",
            "",
        ]
        scale = " on the latent scale" if self.bayes.scale == "latent" else ""
        for quantity, title in (("variance", f"Variance components{scale}"),
                                ("percent", f"Percent of total variance{scale}"),
                                ("phi", f"Reliability phi{scale} (object of measurement: {self.object})"),
                                ("phi_observed", f"Reliability phi on the observation scale (two 0/1 scores of "
                                                 f"the same {self.object})")):
            rows = self.estimates[self.estimates["quantity"] == quantity]
            if len(rows):
                lines += [title, _indent(_estimate_display(rows, quantity, self.method)), ""]
        for test in self.tests:
            lines.append(f"GLRT {test['h1']}  vs  {test['h0']}: chi2 = {test['chi2']:.2f}, df = {test['df']}, "
                         f"p = {test['p']:.3g} ({test['reference']})")
            if test.get("method", "chi2") != "chi2":
                lines.append(f"  asymptotic p = {test['p_asymptotic']:.3g} ({test['asymptotic_reference']})")
            if test.get("reason") not in (None, "", "requested"):
                lines.append(f"  reference chosen because {test['reason']}")
            if "loo_elpd_diff" in test:
                lines.append(f"LOO (leave one item out): elpd(H1) - elpd(H0) = {test['loo_elpd_diff']:.2f} "
                             f"(SE {test['loo_se']:.2f})")
        if self.contrasts is not None:
            lines += ["", f"Contrasts ({self.contrasts['reference'].iloc[0]}, 95 % intervals; Holm within each family) "
                          f"next to the posterior ({level} intervals)",
                      _indent(_contrast_display(self.contrasts, self.by))]
        lines += ["", "Disagreements:" if self.flags else "No disagreements flagged."]
        lines += [f"  - {flag}" for flag in self.flags]
        lines += [f"note: {note}" for note in self.notes]
        return "\n".join(lines)


def compare(formula, data=None, object: str | None = None, *, factor: str | None = None, by: str | None = None,
            h0: str | None = None, reliability: bool = True, where: str | None = None,
            n_boot: int = DEFAULT_BOOTSTRAP, prob: float = 0.95, prior: str | None = None,
            drop_missing: bool = False, loo: bool = True, bayes_options: dict | None = None,
            sampling: SamplingSettings | None = None, family: str = "auto", link: str | None = None,
            **settings) -> SideBySide:
    """Fit ``formula`` with both engines and set their answers side by side.

    ``formula`` is a formula (then ``data`` is read and filtered by ``where``,
    by the engine ``design.model_frame`` chooses for it) or a model frame
    already built, by any producer; the frame, its statistics and the null
    model's frame are built once and shared by both engines. ``object`` is the object of measurement of φ (default: the single-column
    grouping factor with most levels when that is clear, see ``reliability.object_of_measurement``; ``reliability=False`` omits φ, e.g. for a pure
    meta-parameter-importance design). ``factor`` is the categorical fixed
    effect whose levels are compared (default: the first categorical fixed
    variable), ``by`` a data property it interacts with; ``h0`` replaces the
    null model of the omnibus GLRT (default: H1 without ``factor``'s terms, or
    without the interaction when ``by`` is given). ``n_boot`` parametric
    bootstrap replicates; ``sampling`` (a ``SamplingSettings``) and keyword
    settings (``draws``, ``chains``, ``seed``, ...) for NUTS; the seed (default 0)
    makes both engines reproducible. Both engines fit the same model to the same rows
    (``drop_missing`` drops rows with a missing value in a formula column).
    With ``loo`` the GLRT's null model is also fitted by NUTS and the
    leave-one-item-out elpd difference (H1 − H0) is reported next to the GLRT
    (for a frame with its rows in memory; a frame a producer built from
    grouped sums gets a note instead).
    ``family`` (and ``link``) as ``design.resolve_family``: 0/1 scores are
    compared as a binary GLMM, ML (Laplace) next to the posterior, on the
    latent scale (``compare_binary``); ``family="gaussian"`` fits them as a
    linear probability model instead. A Gaussian model with random slopes
    is bootstrapped on its rows (``slope_variance_bootstrap``), its contrasts
    get Satterthwaite t tests (lmerTest's), and LOO (``bayes.slope_loo``)
    when every random term is of one grouping factor, else a note.
    """
    from .bayes import fit_bayes

    settings = SamplingSettings.of(sampling, **({"seed": 0} if sampling is None else {}) | settings)
    seed = settings.seed
    check_probability(prob)
    check_bootstrap(n_boot)
    frame = formula if isinstance(formula, ModelFrame) else model_frame(formula, data, where, drop_missing)
    if not frame.groups:
        raise BayesreproError(f"formula {frame.formula!r} has no (1|g) term; there are no variance components to compare")
    resolved = resolve_family(frame, family, link)
    factor, by = _factor_and_by(frame, factor, by)
    choice = object_of_measurement({g.name: g.n_levels for g in frame.groups}, object) if reliability else None
    object = choice.name if choice else None
    fit = fit_frame(frame, resolved, "reml")   # a binary model: ML (Laplace), components on the latent scale
    variances, method = fit.components, "ML (Laplace)" if resolved.binary else "REML"
    rng = np.random.default_rng(None if seed is None else [int(seed), 1])
    with Progress("bootstrap", enabled=settings.show_progress) as bar:
        if resolved.binary and fitted_on_rows(frame):   # slopes, or crossed factors beyond the cell engine
            boot, unconverged, boot_observed = binary_slope_bootstrap(fit, frame, int(n_boot), rng, object,
                                                                      bar.update)
        elif resolved.binary:
            boot, unconverged, boot_observed = glmm_bootstrap(fit, frame.binomial(), int(n_boot), rng, object,
                                                              bar.update)
        elif frame.spec.has_slopes or (frame.has_rows and needs_general_core(frame)):
            # slopes, or crossed factors whose dense block would be large (a crowd): refitted on the sparse core
            boot, unconverged = slope_variance_bootstrap(fit, frame, int(n_boot), rng, bar.update)
        else:
            boot, unconverged = parametric_bootstrap(fit, frame, int(n_boot), rng, bar.update)
    bayes = fit_bayes(frame, object=object or frame.groups[0].name, family=resolved.name,
                      link=resolved.link if resolved.binary else None,
                      prior=prior, sampling=settings, **(bayes_options or {}))
    estimates = _estimates(variances, boot, bayes, object, prob, frame.spec.random_terms)
    if resolved.binary and object is not None:
        estimates = pd.concat([estimates, _observed_phi_row(fit, boot_observed, bayes, object, prob)],
                              ignore_index=True)

    tests, contrasts, means = [], None, None
    notes = list(frame.notes) + [note for note in (resolved.note, choice and choice.note) if note]
    if frame.spec.has_slopes:
        notes.append(TERM_VARIANCE_NOTE)
    if factor:
        comparison = (binary_comparison(frame, resolved, factor, by, h0) if resolved.binary
                      else _frequentist_comparison(frame, factor, by, h0, seed))
        test = comparison.test.to_dict()
        if loo and resolved.binary:
            notes.append("leave-one-item-out LOO is not computed for binary models; the GLRT stands alone")
        elif loo and bayes.terms and slope_item_factor(frame) is None:
            notes.append(SLOPE_LOO_NOTE)
        elif loo and not frame.has_rows:
            notes.append("leave-one-item-out LOO needs each item's sum of squares and its sums per level of the other "
                         "factors, which grouped sums do not hold: it is computed with --engine memory; the GLRT "
                         "stands alone")
        elif loo:
            h0_fit = fit_bayes(comparison.null_frame, object=bayes.object, family="gaussian", prior=prior,
                               sampling=settings, **(bayes_options or {}))
            test |= _loo_difference(bayes, h0_fit, notes)
        tests.append(test)
        contrasts, means = _bayes_contrasts(comparison, frame, bayes, factor, by, prob)
    flags = _flags(estimates, contrasts, fit, method, bayes, object, prob) + _test_flags(tests)
    if unconverged:
        notes.append(f"{unconverged} of {n_boot} bootstrap refits did not meet the convergence test; they are kept")
    return SideBySide(frame.formula, object, frame.n_obs, prob, estimates, contrasts, means, tests, flags, fit, bayes,
                      boot, unconverged, factor, by, seed, notes, method)


def check_bootstrap(n_boot) -> int:
    """The number of bootstrap replicates (the command line's ``--bootstrap``), within ``limits.BOOTSTRAP``."""
    if isinstance(n_boot, str):
        raise BayesreproError(limits.BOOTSTRAP.refusal(n_boot))
    return limits.BOOTSTRAP.check(n_boot)


def parametric_bootstrap(fit: LmmFit, frame: ModelFrame, n_boot: int, rng: np.random.Generator,
                         progress: Callable[[float], None] | None = None) -> tuple[pd.DataFrame, int]:
    """REML variance components of ``n_boot`` data sets simulated from ``fit``; and how many refits did not converge.

    Each replicate draws new level effects of every grouping factor and new
    residuals from the fitted variances, keeps Xβ̂, and refits by REML from the
    fitted θ. REML sees a response only through U'y and y'y, which are drawn
    from their distribution, or through the rows when the frame has them
    (``frequentist.bootstrap_test.ResponseSimulator``): a frame built from
    grouped sums by a producer is resampled as one built from rows.
    ``progress(fraction)`` is told how far it got.
    """
    rows, unconverged = [], 0
    with numerical_work():
        for refit, solution, converged in reml_refits(fit, frame, n_boot, rng):
            unconverged += not converged
            sigma2 = refit.sigma2(solution)
            rows.append([sigma2 * t * t for t in solution.theta] + [sigma2])
            if progress is not None:
                progress(len(rows) / n_boot)
    return pd.DataFrame(rows, columns=list(fit.variances)), unconverged


def _estimates(variances: dict[str, float], boot: pd.DataFrame, bayes, object: str | None, prob: float,
               terms=()) -> pd.DataFrame:
    """Variances, percents and φ: REML with bootstrap intervals beside the posterior. φ counts every one of the
    object's ``terms`` (``(x || g)``'s ``g`` and ``g.1``), as the posterior's φ does."""
    from .design.random_design import factor_variances

    tails = [(1 - prob) / 2, (1 + prob) / 2]
    posterior = bayes.summary(prob)
    boot_percent = 100 * boot.div(boot.sum(axis=1), axis=0)
    total = sum(variances.values())
    rows = []
    for name, value in variances.items():
        lo, hi = np.quantile(boot[name], tails)
        post = posterior.loc[name]
        rows.append(("variance", name, value, lo, hi, post.variance, post.low, post.high))
    for name, value in variances.items():
        lo, hi = np.quantile(boot_percent[name], tails)
        post = posterior.loc[name]
        rows.append(("percent", name, 100 * value / total, lo, hi, 100 * post.share, 100 * post.share_low,
                     100 * post.share_high))
    if object is not None:
        boot_object = factor_variances({name: boot[name] for name in boot.columns}, terms)[object]
        lo, hi = np.quantile(boot_object / boot.sum(axis=1), tails)
        phi = bayes.phi(prob)
        reml_object = factor_variances(variances, terms)[object]
        rows.append(("phi", object, reml_object / total, lo, hi, phi["median"], phi["low"], phi["high"]))
    return pd.DataFrame(rows, columns=["quantity", "component", "reml", "boot_low", "boot_high", "median", "low", "high"])


def _observed_phi_row(fit, boot_observed: np.ndarray, bayes, object: str, prob: float) -> pd.DataFrame:
    """φ of a binary model on the observation scale: ML with its bootstrap interval, and the posterior."""
    lo, hi = np.quantile(boot_observed, [(1 - prob) / 2, (1 + prob) / 2])
    posterior = bayes.phi(prob, observed=True)
    return pd.DataFrame([("phi_observed", object, fit.phi_observed(object), lo, hi, posterior["median"],
                          posterior["low"], posterior["high"])],
                        columns=["quantity", "component", "reml", "boot_low", "boot_high", "median", "low", "high"])


def _factor_and_by(frame: ModelFrame, factor: str | None, by: str | None) -> tuple[str | None, str | None]:
    spec = frame.spec
    for name, role in ((factor, "factor"), (by, "by")):
        if name is not None and name not in spec.fixed_variables:
            raise BayesreproError(f"{role} '{name}' is not a fixed effect of {spec.formula!r}; add it to the formula")
    if by is not None and factor is None:
        raise BayesreproError("'by' needs a 'factor' whose levels are compared within the levels of the data property")
    categorical = [v for v in spec.fixed_variables if not _is_numeric(frame.cells[v])]
    if factor is None and categorical:
        factor = categorical[0]
    if factor is not None and _is_numeric(frame.cells[factor]):
        raise BayesreproError(f"factor '{factor}' is numeric; contrasts compare the levels of a categorical column")
    if factor is not None and by is None:
        partners = [v for used in spec.term_variables if factor in used and len(used) > 1 for v in sorted(used - {factor})]
        by = partners[0] if partners else None
    return factor, by


def _frequentist_comparison(frame: ModelFrame, factor: str, by: str | None, h0: str | None, seed):
    """The GLRT (of ``h0``, or of H1 without the factor's terms) and contrasts; a simulated reference (bootstrap,
    exact RLRT) draws from ``seed``."""
    from .frequentist.analyses import compare_conditional, compare_levels

    stream = None if seed is None else [int(seed), 2]
    slope_fixed_test = frame.spec.has_slopes and (
        h0 is None or set(parse_formula(h0, slopes=True).random_terms) == set(frame.spec.random_terms))
    reference = SATTERTHWAITE if slope_fixed_test else AUTO
    if by:
        comparison = compare_conditional(frame, factor=factor, by=by, seed=stream, h0=h0, reference=reference)
    else:
        comparison = compare_levels(frame, factor=factor, seed=stream, h0=h0, reference=reference)
    if slope_fixed_test:
        comparison.test = dataclasses.replace(comparison.test, reason=SLOPE_REFERENCE_REASON)
    return comparison


def _loo_difference(h1_fit, h0_fit, notes: list[str]) -> dict:
    """elpd(H1) − elpd(H0) by leave-one-item-out PSIS-LOO, with the standard error of the difference."""
    from .bayes.loo import compare_models

    with numerical_work():   # ArviZ's Pareto-k warning is reported below, as a note
        table = compare_models({"h1": h1_fit, "h0": h0_fit})
    difference = float(table.loc["h1", "elpd_loo"] - table.loc["h0", "elpd_loo"])
    se = float(table["dse"].max())  # dse is 0 for the better model and the SE of the difference for the other
    if (table.get("warning") is not None) and bool(table["warning"].any()):
        notes.append("PSIS-LOO warned (Pareto k > 0.7 for some items): its elpd difference is approximate")
    return {"loo_elpd_diff": difference, "loo_se": se}


def _bayes_contrasts(comparison, frame: ModelFrame, bayes, factor: str, by: str | None, prob: float):
    """Posterior draws of the frequentist contrasts (and means or slopes), merged onto its tables."""
    from .frequentist.contrasts import averaging_weights

    if "fixed" not in bayes.draws:
        raise BayesreproError("the Bayesian fit has no fixed-effect draws; use the fast backend with effects=True")
    draws = bayes.draws["fixed"].reshape(-1, len(frame.fixed_names))
    keys = ["contrast"] + ([by] if by and comparison.slopes is None else [])
    if comparison.slopes is not None:
        centre = mean_of(frame.cells, by)
        low, labels = averaging_weights(frame, factor, None, {by: centre})
        high, _ = averaging_weights(frame, factor, None, {by: centre + 1.0})
        cell = high - low
        pairs = [(i, j, {}) for i, j in itertools.combinations(labels.index, 2)]
        means = _merge(comparison.slopes, _summaries(draws, cell, labels, [factor], prob), [factor])
    else:
        cell, labels = averaging_weights(frame, factor, by, None)
        families = labels.groupby(by, observed=True).groups if by else {None: labels.index}
        pairs = [(i, j, {by: family} if by else {}) for family, index in families.items()
                 for i, j in itertools.combinations(index, 2)]
        cells = [factor] + ([by] if by else [])
        means = _merge(comparison.means, _summaries(draws, cell, labels, cells, prob), cells)
    matrix = np.array([cell[i] - cell[j] for i, j, _ in pairs])
    names = pd.DataFrame([{"contrast": f"{labels.loc[i, factor]} - {labels.loc[j, factor]}", **extra}
                          for i, j, extra in pairs])
    contrasts = _merge(comparison.contrasts, _summaries(draws, matrix, names, keys, prob), keys)
    return contrasts, means


def _summaries(draws: np.ndarray, matrix: np.ndarray, labels: pd.DataFrame, keys: list[str], prob: float) -> pd.DataFrame:
    from .bayes import direction_probability

    values = draws @ np.asarray(matrix).T
    tails = [(1 - prob) / 2, 0.5, (1 + prob) / 2]
    low, median, high = np.quantile(values, tails, axis=0)
    table = labels[keys].reset_index(drop=True).copy()
    table["post_median"], table["post_low"], table["post_high"] = median, low, high
    table["p_direction"] = [direction_probability(values[:, k]) for k in range(values.shape[1])]
    return table


def _merge(frequentist: pd.DataFrame, bayesian: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    left, right = frequentist.copy(), bayesian.copy()
    for table in (left, right):
        for key in keys:
            table[key] = table[key].astype(str)
    merged = left.merge(right, on=keys, how="left", validate="one_to_one")
    if merged["post_median"].isna().any():
        raise BayesreproError("could not match the Bayesian contrasts to the frequentist ones; report this formula as a bug")
    return merged


def _flags(estimates: pd.DataFrame, contrasts, fit, method: str, bayes, object, prob) -> list[str]:
    level = f"{100 * prob:g} %"
    flags = []
    percent = estimates[estimates["quantity"] == "percent"].set_index("component")
    for name in fit.boundary:
        row = percent.loc[name]
        if row["high"] >= 100 * WIDE_SHARE:
            flags.append(
                f"component {name}: {method} puts its variance at exactly 0, but the posterior is wide: its share has "
                f"median {row['median']:.2g} % and {level} interval [{row['low']:.2g} %, {row['high']:.3g} %]"
            )
    for _, row in estimates[estimates["quantity"].isin(["percent", "phi"])].iterrows():
        if row["boot_high"] < row["low"] or row["high"] < row["boot_low"]:
            what = f"phi ({row['component']})" if row["quantity"] == "phi" else f"percent of {row['component']}"
            flags.append(
                f"{what}: the bootstrap interval [{row['boot_low']:.3g}, {row['boot_high']:.3g}] and the posterior "
                f"interval [{row['low']:.3g}, {row['high']:.3g}] do not overlap"
            )
    if object is not None:
        row = estimates[estimates["quantity"] == "phi"].iloc[0]
        reml_label, post_label = koo_li_label(row["reml"]), koo_li_label(row["median"])
        if reml_label != post_label:
            bands = koo_li_probabilities(bayes.draws["phi"])
            flags.append(
                f"phi ({object}): the {method} estimate {row['reml']:.3f} is '{reml_label}' but the posterior median "
                f"{row['median']:.3f} is '{post_label}' (posterior probability of '{reml_label}': {bands[reml_label]:.2f})"
            )
    if contrasts is not None:
        for _, row in contrasts.iterrows():
            where = "".join(f" within {k} = {row[k]}" for k in contrasts.columns if k not in CONTRAST_COLUMNS)
            includes_zero = row["post_low"] <= 0 <= row["post_high"]
            interval = f"[{row['post_low']:.3g}, {row['post_high']:.3g}]"
            if row["p"] < ALPHA and includes_zero:
                flags.append(
                    f"contrast {row['contrast']}{where}: significant at 5 % ({row['reference']} p = {row['p']:.3g}) but the {level} "
                    f"posterior interval {interval} includes 0 (probability of direction {row['p_direction']:.3f})"
                )
            elif row["p"] >= ALPHA and not includes_zero:
                flags.append(
                    f"contrast {row['contrast']}{where}: not significant at 5 % ({row['reference']} p = {row['p']:.3g}) but the "
                    f"{level} posterior interval {interval} excludes 0 (probability of direction {row['p_direction']:.3f})"
                )
    if not bayes.diagnostics.converged:
        flags.append(f"the posterior did not converge ({bayes.diagnostics.line()}); its intervals are not to be trusted")
    if not fit.converged:
        flags.append(f"the {method} fit did not converge ({fit.message})")
    return flags


CONTRAST_COLUMNS = {"contrast", "estimate", "std_error", "df", "low", "high", "statistic", "p", "reference",
                    "effect_size", "p_holm", "post_median", "post_low", "post_high", "p_direction",
                    # binary GLMMs (frequentist.binary_contrasts)
                    "z", "odds_ratio", "odds_ratio_low", "odds_ratio_high", "probability_difference", "probability_se",
                    "probability_low", "probability_high", "probability_p", "probability_p_holm"}


def _test_flags(tests: list[dict]) -> list[str]:
    """GLRT and LOO disagree when one is decisive and the other is not (LOO: two standard errors); the
    asymptotic and the calibrated p-value of the GLRT disagree when only one of them is below 5 %."""
    flags = []
    for test in tests:
        asymptotic = test.get("p_asymptotic")
        if test.get("method", "chi2") != "chi2" and (asymptotic < ALPHA) != (test["p"] < ALPHA):
            which = "asymptotic" if asymptotic < ALPHA else "calibrated"
            why = f"; {test['reason']}" if test.get("reason") not in (None, "", "requested") else ""
            flags.append(
                f"the GLRT's asymptotic p = {asymptotic:.3g} ({test['asymptotic_reference']}) and its calibrated "
                f"p = {test['p']:.3g} ({test['reference']}) disagree at 5 %: only the {which} one rejects "
                f"{test['h0']}{why}"
            )
        if "loo_elpd_diff" not in test:
            continue
        difference, se = test["loo_elpd_diff"], test["loo_se"]
        if test["p"] < ALPHA and difference < 2 * se:
            flags.append(
                f"the GLRT rejects {test['h0']} at 5 % (p = {test['p']:.3g}) but leave-one-item-out LOO favours "
                f"{test['h1']} by only {difference:.1f} elpd (SE {se:.1f}), less than two standard errors"
            )
        elif test["p"] >= ALPHA and difference > 2 * se:
            flags.append(
                f"the GLRT does not reject {test['h0']} at 5 % (p = {test['p']:.3g}) but leave-one-item-out LOO "
                f"favours {test['h1']} by {difference:.1f} elpd (SE {se:.1f})"
            )
    return flags


def _estimate_display(rows: pd.DataFrame, quantity: str, method: str) -> str:
    phi = quantity in ("phi", "phi_observed")
    fmt = (lambda v: f"{v:.4g}") if quantity == "variance" else (lambda v: f"{v:.3f}") if phi \
        else (lambda v: f"{v:.2f}")
    table = pd.DataFrame({
        "component": rows["component"],
        method: rows["reml"].map(fmt),
        "bootstrap interval": [f"[{fmt(a)}, {fmt(b)}]" for a, b in zip(rows["boot_low"], rows["boot_high"])],
        "posterior median": rows["median"].map(fmt),
        "posterior interval": [f"[{fmt(a)}, {fmt(b)}]" for a, b in zip(rows["low"], rows["high"])],
    })
    if phi:
        table[f"Koo & Li ({method} | posterior)"] = [f"{koo_li_label(a)} | {koo_li_label(b)}"
                                               for a, b in zip(rows["reml"], rows["median"])]
    return table.to_string(index=False)


def _contrast_display(contrasts: pd.DataFrame, by: str | None) -> str:
    g = lambda v: f"{v:.3g}"  # noqa: E731
    keys = ["contrast"] + [k for k in contrasts.columns if k not in CONTRAST_COLUMNS]
    table = contrasts[keys].copy()
    table["estimate"] = contrasts["estimate"].map(g)
    table["interval"] = [f"[{g(a)}, {g(b)}]" for a, b in zip(contrasts["low"], contrasts["high"])]
    table["p"] = contrasts["p"].map(g)
    table["p (Holm)"] = contrasts["p_holm"].map(g)
    table["posterior median"] = contrasts["post_median"].map(g)
    table["posterior interval"] = [f"[{g(a)}, {g(b)}]" for a, b in zip(contrasts["post_low"], contrasts["post_high"])]
    table["P(direction)"] = contrasts["p_direction"].map(lambda v: f"{v:.3f}")
    return table.to_string(index=False)


def _indent(text: str) -> str:
    return "\n".join("  " + line for line in text.splitlines())


def _is_numeric(values: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(values) and not isinstance(values.dtype, pd.CategoricalDtype)


def _plain(value):
    """JSON-ready: numpy scalars to Python, NaN/inf to None."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    return value
