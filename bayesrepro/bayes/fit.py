"""``fit_bayes``: one formula and data in, posterior draws of every variance component and of φ out."""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..choices import BACKENDS, BRMS_PRIOR, TERM_PRIOR_FAMILIES
from ..errors import BayesreproError
from ..design import Family, ModelFrame, model_frame, resolve_family
from ..design.binomial import binomial_cells
from ..design.memory_estimate import beyond_dense_path, format_bytes, resolve_limit
from ..progress import announce_path
from ..links import get_link
from ..reliability import object_of_measurement
from .diagnostics import Diagnostics, diagnose, require_convergence
from .draws import Draws
from .posterior import (
    add_reliability,
    band_table,
    d_study_summary,
    level_contrasts,
    phi_summary,
    reliability_summary,
)
from ..frequentist.covariance_structure import TERM_VARIANCE_NOTE
from .priors import DEFAULT_PRIOR, PRIOR_FAMILIES, RESIDUAL, PriorSpec, default_priors
from .sampling import CROSSED_GIBBS, SamplingSettings, check_posterior_size

# Levels sampled by NUTS (every factor's but the largest, which the binary fast path integrates out) from which an
# intercept-only binary model of crossed factors is sampled by the crossed Gibbs sampler instead (measured: see
# docs/guide/binary-crowd-posterior.md)
BINARY_GIBBS_LEVELS = 500
_AUGMENTATION = {"logit": "Polya-Gamma augmentation", "probit": "Albert-Chib augmentation"}


@dataclass
class BayesFit:
    """A fitted Bayesian random-intercept model; every posterior variable lives in ``draws`` (and ``idata``)."""

    draws: Draws
    diagnostics: Diagnostics
    frame: ModelFrame
    priors: PriorSpec | None
    prior_table: pd.DataFrame
    family: str
    backend: str
    object: str
    seconds: float
    notes: list[str] = field(default_factory=list)
    terms: tuple = ()   # ``term_model.TermLayout`` of every random-effect term, for a model with correlated effects
    link: str = "identity"   # of a binary model: "logit" or "probit"

    @property
    def idata(self):
        """The posterior as an ``arviz.InferenceData`` (built on first use, then kept)."""
        return self.draws.idata

    def summary(self, prob: float = 0.95, finite_population: bool = False) -> pd.DataFrame:
        return reliability_summary(self.draws, prob, prefix="fp_" if finite_population else "")

    def phi(self, prob: float = 0.95, finite_population: bool = False, observed: bool = False) -> dict:
        """Median, interval and Koo & Li bands of φ on the model's scale (``scale``: latent for binary models),
        or with ``observed`` of a binary model's φ on the observation scale."""
        if observed:
            if "phi_observed" not in self.draws:
                raise BayesreproError("phi on the observation scale is computed for binary models only")
            return {**phi_summary(self.draws, prob, variable="phi_observed"), "scale": "observed"}
        return {**phi_summary(self.draws, prob, prefix="fp_" if finite_population else ""), "scale": self.scale}

    def bands(self, finite_population: bool = False) -> pd.DataFrame:
        return band_table(self.draws, prefix="fp_" if finite_population else "")

    def d_study(self, n: dict, prob: float = 0.95, finite_population: bool = False) -> pd.DataFrame:
        """Φ and Eρ² of scores averaged over ``n[facet]`` levels, e.g. ``{"seed": 3}``, with intervals."""
        return d_study_summary(self.draws, n, self.object, prob, prefix="fp_" if finite_population else "",
                               terms=self.frame.spec.random_terms)

    def contrasts(self, term: str, prob: float = 0.95, rope: tuple[float, float] | None = None) -> pd.DataFrame:
        """Posterior differences of the level means of a categorical fixed term."""
        reference = "(reference)"
        if term in self.frame.cells:
            levels = [str(v) for v in pd.unique(self.frame.cells[term].astype(str))]
            present = {n[len(term) + 1 : -1] for n in self.frame.fixed_names if n.startswith(f"{term}[")}
            missing = sorted(set(levels) - present)
            reference = missing[0] if len(missing) == 1 else reference
        return level_contrasts(self.draws, self.frame.fixed_names, term, reference, prob, rope)

    def level_effects(self, group: str | None = None, prob: float = 0.95) -> pd.DataFrame:
        """Posterior median, SD, central ``prob`` interval, R-hat and bulk ESS of every level's effect of every
        random-effect term (of ``group`` alone if given), a block of levels at a time."""
        from .level_effects import level_effect_table

        return level_effect_table(self, group, prob)

    def level_effect_draws(self, group: str, term: str = "(Intercept)") -> tuple[np.ndarray, list[str]]:
        """Draws (chains × draws, levels) of one term's level effects of ``group`` and the level labels."""
        from .level_effects import level_effect_draws

        return level_effect_draws(self, group, term)

    def to_dict(self, prob: float = 0.95) -> dict:
        """The JSON form: φ, components, diagnostics, backend, seconds."""
        phi = self.phi(prob)
        table = self.summary(prob)
        out = {
            "phi": {k: phi[k] for k in ("median", "low", "high", "prob", "scale")},
            "object": self.object,
            "bands": phi["bands"],
            "components": [
                {"name": name, "median": row.variance, "low": row.low, "high": row.high,
                 "share_median": row.share, "share_low": row.share_low, "share_high": row.share_high}
                for name, row in table.iterrows()
            ],
            "diagnostics": self.diagnostics.as_dict(),
            "backend": self.backend,
            "family": self.family,
            "scale": self.scale,
            "seconds": self.seconds,
            "n_obs": self.frame.n_obs,
            "notes": self.notes,
        }
        if self.terms:
            out["random_effects"] = self.random_effects(prob)
        if "phi_observed" in self.draws:
            observed = self.phi(prob, observed=True)
            out["phi_observed"] = {k: observed[k] for k in ("median", "low", "high", "prob", "scale")}
        if "fp_phi" in self.draws:
            fp = self.phi(prob, finite_population=True)
            out["phi_finite_population"] = {k: fp[k] for k in ("median", "low", "high", "prob", "scale")}
            out["components_finite_population"] = [
                {"name": name, "median": row.variance, "low": row.low, "high": row.high}
                for name, row in self.summary(prob, finite_population=True).iterrows()
            ]
        return out

    def random_effects(self, prob: float = 0.95) -> list[dict]:
        """Posterior median and interval, R-hat and ESS of every random-effect SD and correlation, and of σ
        (models with correlated random effects; lme4's VarCorr rows)."""
        from .term_model import random_effect_rows

        if not self.terms:
            raise BayesreproError("random_effects are reported for models with random slopes (or --prior brms)")
        return random_effect_rows(self.draws, self.terms, prob)

    @property
    def scale(self) -> str:
        """Where the variance components live: the observed scores, or the latent scale of a binary model's link."""
        return "observed" if self.family == "gaussian" else "latent"

    def __str__(self) -> str:
        return self.describe()

    def describe(self, prob: float = 0.95) -> str:
        """The text summary, every interval a central ``prob`` one."""
        phi = self.phi(prob)
        level = f"{100 * prob:g}%"
        kind = "random-slope" if self.frame.spec.has_slopes else "random-intercept"
        lines = [
            f"Bayesian {self.family} {kind} model ({self.backend} backend), {self.frame.n_obs} observations",
            f"formula: {self.frame.formula}",
            f"posterior medians and central {level} intervals (low, high)",
            "",
            self.summary(prob).to_string(float_format=lambda v: f"{v:.4g}"),
            "",
            *([pd.DataFrame(self.random_effects(prob)).fillna("").to_string(index=False,
                                                                            float_format=lambda v: f"{v:.4g}"), ""]
              if self.terms else []),
            f"phi ({self.object}, {self.scale} scale) = {phi['median']:.3f}, {level} interval "
            f"[{phi['low']:.3f}, {phi['high']:.3f}]",
            "Koo & Li bands: " + ", ".join(f"P({k}) = {v:.2f}" for k, v in phi["bands"].items()),
        ]
        if "phi_observed" in self.draws:
            observed = self.phi(prob, observed=True)
            lines.append(f"phi ({self.object}, observation scale: two 0/1 scores of the same {self.object}) = "
                         f"{observed['median']:.3f}, {level} interval [{observed['low']:.3f}, {observed['high']:.3f}]")
        if "fp_phi" in self.draws:
            fp = self.phi(prob, finite_population=True)
            lines.append(f"finite-population phi ({self.scale} scale) = {fp['median']:.3f}, {level} interval "
                         f"[{fp['low']:.3f}, {fp['high']:.3f}]")
        status = "converged" if self.diagnostics.converged else "NOT CONVERGED"
        lines += ["", f"diagnostics ({status}): {self.diagnostics.line()}", f"{self.seconds:.1f} s"]
        return "\n".join(lines + self.notes)


def fit_bayes(
    formula,
    data=None,
    *,
    object: str | None = None,
    family: str = "auto",
    link: str | None = None,
    backend: str = "auto",
    prior: str | PriorSpec | None = None,
    prior_overrides: dict | None = None,
    effects: bool = True,
    where: str | None = None,
    drop_missing: bool = False,
    bambi_noncentered: bool = True,
    sampling: SamplingSettings | None = None,
    max_memory=None,
    **settings,
) -> BayesFit:
    """Fit ``formula`` to ``data`` and return posterior draws of every variance component and of φ.

    ``formula`` is a formula string (then ``data`` is a DataFrame, a path or a
    bundled dataset name, filtered by ``where``) or a ModelFrame already built.
    ``family`` and ``link`` are resolved by ``design.resolve_family`` (0/1
    scores are Bernoulli unless ``family="gaussian"``).
    ``backend="auto"`` takes the fast path: for Gaussian models the random
    effects integrated out analytically, for Bernoulli and binomial models (logit or
    probit link) the items integrated out numerically and the rest sampled by nutpie's NUTS on a
    compiled density (``binary_fit``; it runs nutpie whatever ``sampler``
    says); ``backend="bambi"`` takes Bambi's own model. ``prior`` is a family
    name ("scaled", the default for Gaussian models, "bambi" or "r2d2"; see
    ``priors``) or a ``PriorSpec``; binary models take Bambi's default priors;
    ``prior_overrides`` changes single scales by
    name. With ``effects=True`` (fast path) fixed and level effects are drawn
    afterwards from their exact conditional, giving the finite-population
    components and contrasts (the items' effects are drawn when first read).
    ``sampling`` (a ``SamplingSettings``) and keyword settings (``draws=2000,
    chains=4, seed=1, progress=False, ...``) say how NUTS runs; progress is
    shown by default where someone watches (stderr a terminal, or a notebook).
    The draws are NumPy arrays in ``fit.draws``; ``fit.idata`` builds an ArviZ
    InferenceData of them on first use. Raises
    ``NotConvergedError`` if the run did not converge, unless the settings allow
    it. ``bambi_noncentered`` chooses the parameterisation of Bambi's own model
    (centred mixes better with many observations per level). ``max_memory`` (bytes or a size such as
    ``'4G'``; default half the machine's memory) bounds the dense blocks of the fast path.
    """
    settings = SamplingSettings.of(sampling, **settings)
    start = time.perf_counter()
    if backend not in BACKENDS:
        raise BayesreproError(f"backend '{backend}' is unknown; choose one of: {', '.join(BACKENDS)}")
    frame = formula if isinstance(formula, ModelFrame) else model_frame(formula, data, where, drop_missing)
    frame = frame.with_memory_limit(max_memory)
    resolved = resolve_family(frame, family, link)
    family = resolved.name
    if not frame.groups:
        raise BayesreproError(f"formula {formula!r} has no (1|g) term; add the object of measurement, e.g. (1|item)")
    if frame.spec.has_slopes or prior == BRMS_PRIOR:
        return _fit_correlated(frame, resolved, object, prior, prior_overrides, backend, settings, start)
    # an explicit --backend or --sampler is kept; only "auto" may turn to the crossed Gibbs sampler
    reason = _crossed_gibbs_reason(frame, resolved) if backend == "auto" and settings.sampler == "auto" else None
    backend = CROSSED_GIBBS if reason else "fast" if backend == "auto" else backend
    spec = _prior_spec(frame, prior, prior_overrides, family, backend)
    choice = object_of_measurement({g.name: g.n_levels for g in frame.groups}, object)
    object = choice.name
    check_posterior_size(settings, _values_per_draw(frame, backend))
    notes = list(frame.notes) + [note for note in (resolved.note, choice.note) if note]
    if backend == CROSSED_GIBBS and resolved.binary:
        draws, prior_table = _fit_crossed_binary(frame, resolved.link, object, settings, reason)
        notes.append(f"method: crossed Gibbs sampler ({_AUGMENTATION[resolved.link]}), O(cells) per sweep; {reason}; "
                     "level effects are not kept")
    elif backend == CROSSED_GIBBS:
        from .crossed_gibbs import crossed_data, sample_crossed
        from .gaussian_model import sd_name

        notes.append(f"method: crossed Gibbs sampler, O(rows) per sweep; {reason}; level effects are not kept")
        announce_path(f"crossed Gibbs sampler: {reason}", settings.progress)
        draws = sample_crossed(crossed_data(frame), spec, settings.draws, settings.tune, settings.chains, settings.seed)
        add_reliability(draws, {name: draws[sd_name(name)] ** 2 for name in [*frame.group_names, RESIDUAL]}, object)
        prior_table = spec.table()
    elif backend == "fast" and family == "gaussian":
        draws, prior_table = _fit_fast(frame, spec, object, settings, effects)
    elif backend == "fast":
        from .binary_fit import fit_binary

        draws, prior_table = fit_binary(frame, object, settings, resolved.link, effects)
    else:
        draws, prior_table = _fit_bambi(frame, spec, resolved, object, settings, bambi_noncentered)
    if resolved.binary:
        from .binary_phi import add_observed_phi

        add_observed_phi(draws, frame.binomial(), resolved.link, object)
        notes.append(_latent_note(resolved))
    sd_vars = [v for v in draws.names if v == "sigma" or (v.startswith("1|") and v.endswith("_sigma"))]
    diagnostics = diagnose(draws, sd_vars + ["phi"])
    fit = BayesFit(draws, diagnostics, frame, spec, prior_table, family, backend, object,
                   time.perf_counter() - start, notes, link=resolved.link)
    require_convergence(diagnostics, settings.allow_unconverged)
    return fit


def _fit_correlated(frame, family: Family, object, prior, overrides, backend, settings, start) -> BayesFit:
    """Random slopes (correlated random effects), or brms's priors: the compiled model of ``term_model``."""
    from .term_model import diagnosed_variables, fit_terms

    what = "random slopes" if frame.spec.has_slopes else "--prior brms"
    if backend == "bambi" or settings.sampler == "pymc":
        raise BayesreproError(f"{'--backend bambi' if backend == 'bambi' else '--sampler pymc'} cannot fit {what}: "
                              "they are sampled by nutpie on the compiled model; drop the option")
    if overrides:
        raise BayesreproError(f"--prior-scale applies to random-intercept models, not to {what}; drop --prior-scale")
    if prior is not None and not isinstance(prior, str):
        raise BayesreproError(f"--prior for {what} is a name ({', '.join(TERM_PRIOR_FAMILIES)}), not a PriorSpec")
    choice = object_of_measurement({g.name: g.n_levels for g in frame.groups}, object)
    # the fixed cells of a binomial model, which also check its scores, weigh φ on the observation scale
    cells = binomial_cells(dataclasses.replace(frame, groups=[])) if family.binary else None
    draws, prior_table, terms = fit_terms(frame, prior or DEFAULT_PRIOR, choice.name, settings,
                                          family.link if family.binary else None)
    diagnostics = diagnose(draws, diagnosed_variables(terms, family.binary) + ["phi"])
    notes = list(frame.notes) + [note for note in (family.note, choice.note) if note]
    if family.binary:
        from .binary_phi import add_observed_phi

        add_observed_phi(draws, cells, family.link, choice.name)
        notes.append(_latent_note(family))
    if frame.spec.has_slopes:
        notes.append(TERM_VARIANCE_NOTE)
    fit = BayesFit(draws, diagnostics, frame, None, prior_table, family.name, "fast", choice.name,
                   time.perf_counter() - start, notes, tuple(terms), family.link)
    require_convergence(diagnostics, settings.allow_unconverged)
    return fit


def _latent_note(family: Family) -> str:
    residual = "the logistic variance pi^2/3" if family.link == "logit" else "1, the standard normal's variance"
    return (f"{family.name.capitalize()} model: variance components and phi on the latent ({family.link}) scale, "
            f"where the residual is {residual}")


def _crossed_gibbs_reason(frame: ModelFrame, family: Family) -> str | None:
    """Why a crossed Gibbs sampler replaces the fast path, or None: for an intercept-only model of crossed factors
    with rows in memory, a Gaussian one whose dense block is too large, or a binary one whose NUTS would sample
    at least ``BINARY_GIBBS_LEVELS`` levels."""
    if frame.fixed_names != ["Intercept"] or not frame.has_rows or len(frame.groups) < 2:
        return None
    if family.binary:
        sizes = sorted(((g.n_levels, g.name) for g in frame.groups), reverse=True)
        sampled = sum(size for size, _ in sizes[1:])
        if sampled < BINARY_GIBBS_LEVELS:
            return None
        return (f"the fast path would sample {sampled:,} levels of {', '.join(name for _, name in sizes[1:])} by NUTS "
                f"(from {BINARY_GIBBS_LEVELS:,} on, Gibbs sampling is faster)")
    if family.name != "gaussian":
        return None
    estimate = frame.dense_estimate("bayes")
    if not beyond_dense_path(estimate, frame.max_memory):
        return None
    return (f"the fast path would need {estimate.describe()} (memory limit "
            f"{format_bytes(resolve_limit(frame.max_memory))}, --max-memory)")


def _fit_crossed_binary(frame, link: str, object: str, settings, reason: str) -> tuple[Draws, pd.DataFrame]:
    from .binary_fit import add_latent_reliability
    from .binary_priors import binary_priors
    from .crossed_binary_gibbs import sample_crossed_binary

    announce_path(f"crossed Gibbs sampler ({_AUGMENTATION[link]}): {reason}", settings.progress)
    priors = binary_priors(frame)
    draws = sample_crossed_binary(frame.binomial(), priors, link, settings)
    add_latent_reliability(draws, frame.group_names, link, object)
    return draws, priors.table()


def _prior_spec(frame, prior, overrides, family, backend) -> PriorSpec | None:
    if family != "gaussian":
        if overrides or prior is not None:
            raise BayesreproError("prior choices apply to Gaussian models; Bernoulli models use Bambi's default priors")
        return None
    if prior is None:
        spec = default_priors(frame, DEFAULT_PRIOR)
    elif isinstance(prior, PriorSpec):
        spec = prior
    elif prior in PRIOR_FAMILIES:
        spec = default_priors(frame, prior)
    else:
        raise BayesreproError(f"prior '{prior}' is unknown; choose one of: {', '.join(PRIOR_FAMILIES)}")
    if backend == "bambi" and not spec.half_normal_sds:
        raise BayesreproError(
            f"Bambi's own model takes half-normal SD priors ('scaled' or 'bambi'); use --backend fast for '{spec.family}'"
        )
    return spec.with_overrides(overrides)


def _fit_fast(frame, spec, object, settings, effects) -> tuple[Draws, pd.DataFrame]:
    from .gaussian_model import sd_name
    from .marginal import marginal_stats

    stats = marginal_stats(frame, spec)
    if settings.sampler_or("nutpie") == "nutpie":
        from .compiled_sampler import sample_compiled
        from .gaussian_model import gaussian_density

        draws = sample_compiled(gaussian_density(stats, spec), settings)
    else:  # PyMC's own sampler on PyMC's model of the same posterior
        from .gaussian_model import build_pymc_model
        from .sampling import run_nuts

        draws = Draws.from_idata(run_nuts(build_pymc_model(stats, spec), settings))
    sd = {name: draws[sd_name(name)] for name in [*stats.group_names, RESIDUAL]}
    add_reliability(draws, {name: sd[name] ** 2 for name in sd}, object)
    if effects:
        _add_effects(draws, frame, stats, spec, sd, object, settings.seed)
    return draws, spec.table()


def _add_effects(draws: Draws, frame, stats, spec, sd, object, seed) -> None:
    """Fixed and level effects and the finite-population components; the items' effects are drawn when read."""
    from .effects import draw_effects
    from .draws import LEVEL_BLOCK_VALUES

    shape = draws.shape
    flat = {name: value.reshape(-1) for name, value in sd.items()}
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0] if seed is not None else None)
    effects = draw_effects(stats, spec.fixed_sigma**2, flat[RESIDUAL], flat, rng)
    draws.add("fixed", effects.fixed.reshape(*shape, -1), ("fixed_effect",), {"fixed_effect": list(frame.fixed_names)})
    for group in frame.groups:
        dim = f"{group.name}__level"
        coords = {dim: list(group.levels)}
        if group.name == stats.dominant:
            draws.add_deferred(f"1|{group.name}", lambda: effects.dominant.draw().reshape(*shape, -1), (dim,), coords)
            draws.add_level_blocks(f"1|{group.name}", lambda: ((items, values.reshape(*shape, -1)) for items, values
                                                               in effects.dominant.blocks(LEVEL_BLOCK_VALUES)))
        else:
            draws.add(f"1|{group.name}", effects.levels[group.name].reshape(*shape, -1), (dim,), coords)
    variances = {name: value.reshape(shape) for name, value in effects.variances.items()}
    add_reliability(draws, variances, object, prefix="fp_")


def _fit_bambi(frame, spec, family: Family, object, settings, noncentered) -> tuple[Draws, pd.DataFrame]:
    from .bambi_model import bambi_prior_table, build_bambi_model, fit_bambi, fixed_draws, level_effects

    model = build_bambi_model(frame, family.name, spec, noncentered, link=family.link)
    draws = Draws.from_idata(fit_bambi(model, settings))
    variances = {g.name: draws[f"1|{g.name}_sigma"] ** 2 for g in frame.groups}
    if not family.binary:
        variances[RESIDUAL] = draws["sigma"] ** 2
    else:
        variances[RESIDUAL] = np.full(draws.shape, get_link(family.link).latent_residual)
        draws.add("fixed", fixed_draws(draws, frame), ("fixed_effect",), {"fixed_effect": list(frame.fixed_names)})
    add_reliability(draws, variances, object)
    fp = {name: np.var(value, axis=-1, ddof=1) for name, value in level_effects(draws, frame).items()}
    if len(fp) == len(frame.groups):
        # The residual has one level per observation, so its realised variance equals σ² up to O(1/√N);
        # Bambi's posterior holds no residual draws to take it from exactly.
        fp[RESIDUAL] = variances[RESIDUAL]
        add_reliability(draws, fp, object, prefix="fp_")
    return draws, bambi_prior_table(model)


def _values_per_draw(frame: ModelFrame, backend: str) -> int:
    """What a posterior stores per draw: level and fixed effects (Bambi's model twice: its offsets too), and
    per component its SD, variance, share and their finite-population versions."""
    effects = sum(g.n_levels for g in frame.groups) + len(frame.fixed_names)
    if backend == CROSSED_GIBBS:   # the intercept and the SDs, not the level effects
        effects = 1
    return (2 if backend == "bambi" else 1) * effects + 6 * (len(frame.groups) + 1)
