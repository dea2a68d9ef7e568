"""Leaderboards with rank uncertainty: the levels of one factor ranked by both engines.

Each engine gives draws of the levels' values: the posterior draws (Bayesian)
and the parametric-bootstrap replicates (frequentist) of the same linear
combinations. Ranks are computed within every draw (rank 1 the best; ties,
which continuous draws almost never have, broken at random), and summarised
per level as the probability of being best, of being in the top k, the
expected rank and a central interval of the rank.

For a categorical fixed effect the values are its estimated marginal means
(``frequentist.contrasts.averaging_weights``: the reference grid of
``compare``), w'β: the posterior applies w to its draws of β, the bootstrap to
the β̂ of data simulated from the fit and refitted
(``frequentist.fixed_bootstrap``). Binary scores are ranked on the link scale
and their means shown as probabilities: the inverse link keeps the order.

For a grouping factor the values are its levels' random intercepts: the
posterior's draws of them, and draws from each level's conditional
distribution at the frequentist fit (``_grouping_values`` says why not a
bootstrap).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .errors import BayesreproError
from .links import get_link

FIXED, GROUPING = "fixed", "grouping"


@dataclass
class LevelRanking:
    """Both engines' ranks of the levels of one factor, one row per level in ``table``."""

    formula: str
    factor: str
    kind: str                    # FIXED or GROUPING
    scale: str                   # what ``estimate`` is: "score", "probability", "effect" or "latent effect"
    top: int
    lower_is_better: bool
    prob: float
    table: pd.DataFrame
    method: str                  # of the frequentist fit, as printed
    converged: bool              # the frequentist fit
    n_boot: int
    bootstrap_unconverged: int
    bayes: object                # bayes.BayesFit
    seed: int | None
    notes: list[str] = field(default_factory=list)

    def leaders(self) -> dict[str, str]:
        """The level each answer puts first: the estimate's, the bootstrap's and the posterior's most probable."""
        table = self.table
        return {"estimate": str(table.loc[table["rank"].idxmin(), "level"]),
                "bootstrap": str(table.loc[table["boot_p_best"].idxmax(), "level"]),
                "bayesian": str(table.loc[table["p_best"].idxmax(), "level"])}


def rank_statistics(values: np.ndarray, top: int, prob: float, rng: np.random.Generator) -> pd.DataFrame:
    """Per column of ``values`` (rows: draws; columns: levels; larger is better): ``p_best``, ``p_top`` (rank at
    most ``top``), ``expected_rank`` and the central ``prob`` interval of the rank (``rank_low``, ``rank_high``).

    Within a draw, levels are ranked 1 (largest) to L; tied values are ordered at random, so each of them is
    best with equal probability and the expected ranks always sum to L(L + 1)/2.
    """
    values = np.asarray(values, dtype=float)
    n, levels = values.shape
    order = np.lexsort((rng.random(values.shape), -values), axis=1)
    ranks = np.empty_like(order)
    np.put_along_axis(ranks, order, np.arange(1, levels + 1)[None, :].repeat(n, axis=0), axis=1)
    low, high = np.quantile(ranks, [(1 - prob) / 2, (1 + prob) / 2], axis=0, method="inverted_cdf")
    return pd.DataFrame({
        "p_best": (ranks == 1).mean(axis=0),
        "p_top": (ranks <= top).mean(axis=0),
        "expected_rank": ranks.mean(axis=0),
        "rank_low": low.astype(int),
        "rank_high": high.astype(int),
    })


def factor_kind(spec, factor: str) -> str:
    """Whether ``factor`` is a fixed effect or a grouping factor of the formula; refused when it is neither."""
    if factor in spec.fixed_variables:
        return FIXED
    if factor in spec.group_names:
        return GROUPING
    named = [*spec.fixed_variables, *spec.group_names]
    raise BayesreproError(f"--factor '{factor}' is not in --formula {spec.formula!r}; name a categorical fixed effect "
                          f"or a grouping factor of it ({', '.join(named) or 'the formula has none'})")


def check_top(top, levels: int, factor: str) -> int:
    """``top`` as a whole number of levels from 1 to ``levels``, or one line naming ``--top``."""
    whole = isinstance(top, (int, np.integer)) and not isinstance(top, bool)
    if not whole or not 1 <= top <= levels:
        raise BayesreproError(f"--top must be a whole number from 1 to {levels} (the levels of {factor}), not {top!r}")
    return int(top)


def rank_levels(model, factor: str, *, top: int = 1, lower_is_better: bool = False, prob: float = 0.95,
                n_boot: int, sampling, prior: str | None = None) -> LevelRanking:
    """Rank the levels of ``factor`` in ``model`` (an ``api.Model``) by both engines.

    ``n_boot`` parametric-bootstrap replicates; ``sampling`` (a ``SamplingSettings``) says how NUTS runs and its
    seed also seeds the bootstrap; ``prior`` names the family of priors (``Model.sample``'s).
    """
    from .bayes.posterior import check_probability
    from .compare import check_bootstrap

    check_probability(prob)
    check_bootstrap(n_boot)
    kind = factor_kind(model.spec, factor)
    frame = model.frame
    if kind == FIXED:
        values = _fixed_values(model, factor, top, prob, n_boot, sampling, prior)
    else:
        values = _grouping_values(model, factor, top, prob, n_boot, sampling, prior)
    family = model.family
    to_scale = get_link(family.link).inverse if family.binary and kind == FIXED else (lambda v: v)
    sign = -1.0 if lower_is_better else 1.0
    seed = sampling.seed
    tails = [(1 - prob) / 2, 0.5, (1 + prob) / 2]
    post_low, post_median, post_high = np.quantile(values.posterior, tails, axis=0)
    table = pd.DataFrame({"level": values.labels, "rank": _point_ranks(sign * values.estimate),
                          "estimate": to_scale(values.estimate),
                          "boot_low": to_scale(values.low), "boot_high": to_scale(values.high)})
    boot = rank_statistics(sign * values.replicates, values.top, prob, _stream(seed, 2)).add_prefix("boot_")
    post = rank_statistics(sign * values.posterior, values.top, prob, _stream(seed, 3))
    table = pd.concat([table, boot, pd.DataFrame({"post_median": to_scale(post_median),
                                                  "post_low": to_scale(post_low),
                                                  "post_high": to_scale(post_high)}), post], axis=1)
    notes = list(frame.notes) + [note for note in (family.note,) if note] + values.notes
    if kind == FIXED:
        scale = "probability" if family.binary else "score"
    else:
        scale = "latent effect" if family.binary else "effect"
    ranking = LevelRanking(
        formula=model.formula, factor=factor, kind=kind, scale=scale, top=values.top, lower_is_better=lower_is_better,
        prob=prob, table=table.sort_values("rank", kind="stable").reset_index(drop=True), method=values.method,
        converged=values.converged, n_boot=len(values.replicates), bootstrap_unconverged=values.unconverged,
        bayes=values.bayes, seed=seed, notes=notes)
    ranking.notes += leader_notes(ranking)
    return ranking


@dataclass
class LevelValues:
    """Both engines' values of the levels (larger is better before ``lower_is_better``), on the link scale."""

    labels: np.ndarray           # the levels, as text
    top: int
    estimate: np.ndarray         # the frequentist point estimate of each level
    low: np.ndarray              # its frequentist interval
    high: np.ndarray
    replicates: np.ndarray       # frequentist replicates (rows) of every level (columns)
    posterior: np.ndarray        # posterior draws (rows) of every level (columns)
    method: str
    converged: bool
    unconverged: int
    bayes: object
    notes: list[str] = field(default_factory=list)


def _fixed_values(model, factor, top, prob, n_boot, sampling, prior) -> LevelValues:
    """The estimated marginal means of a categorical fixed effect: w'β̂ with its parametric bootstrap, and the
    posterior's w'β."""
    from .data import is_categorical
    from .frequentist.contrasts import averaging_weights
    from .frequentist.fixed_bootstrap import fixed_effect_replicates
    from .progress import Progress

    frame = model.frame
    if not is_categorical(frame.cells[factor]):
        raise BayesreproError(f"--factor '{factor}' is numeric: ranks order the levels of a categorical column; "
                              f"add --categorical {factor} to read its values as levels")
    weights, labels = averaging_weights(frame, factor, None, None)
    top = check_top(top, len(labels), factor)
    family = model.family
    fit = model.engine_fit("ml" if family.binary else "reml")
    with Progress("bootstrap", enabled=sampling.show_progress) as bar:
        betas, unconverged = fixed_effect_replicates(fit, frame, family.binary, n_boot, _stream(sampling.seed, 1),
                                                     bar.update)
    bayes = _posterior(model, sampling, prior)
    if "fixed" not in bayes.draws:
        raise BayesreproError("the Bayesian fit has no draws of the fixed effects to rank the levels by")
    replicates = betas @ weights.T
    low, high = np.quantile(replicates, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
    return LevelValues(
        labels=labels[factor].astype(str).to_numpy(), top=top, estimate=weights @ fit.beta, low=low, high=high,
        replicates=replicates, posterior=bayes.draws["fixed"].reshape(-1, len(frame.fixed_names)) @ weights.T,
        method="ML (Laplace)" if family.binary else "REML", converged=bool(fit.converged), unconverged=unconverged,
        bayes=bayes, notes=[f"{unconverged} of {n_boot} bootstrap refits did not meet the convergence test; they "
                            "are kept"] if unconverged else [])


def _grouping_values(model, factor, top, prob, n_boot, sampling, prior) -> LevelValues:
    """The levels' random intercepts of a grouping factor: their conditional modes, with draws from each level's
    conditional distribution given the data at the fit, and the posterior's draws of the same effects.

    The frequentist replicates keep every level's identity, which a parametric bootstrap that draws new level
    effects cannot: level j's effect is drawn from N(b̂_j, s_j²), its conditional mode and conditional SD at the
    ML/REML fit (lme4's ``ranef(condVar = TRUE)``, ``Fit.level_effects``), independently across levels. This is
    the empirical-Bayes answer: the variance components and β are held at their estimates (a shift of β moves
    every level alike and leaves the ranks as they are), and the levels' conditional correlations, small where
    every level is scored on the same items, are left out. Simulating new data around the fitted modes and
    refitting was not chosen: the refitted modes are shrunk a second time, towards the already shrunk modes, so
    their spread measures the estimator's noise around the modes rather than the uncertainty about the levels'
    effects, and the rank intervals come out too narrow. The coverage of the true ranks by the intervals of
    these draws is checked by simulation (tests/test_rank.py).
    """
    frame = model.frame
    group = next(g for g in frame.groups if g.name == factor)
    top = check_top(top, group.n_levels, factor)
    fit = model.fit()
    effects, replicates = conditional_draws(fit, factor, prob, n_boot, _stream(sampling.seed, 1))
    estimate = effects["estimate"].to_numpy(float)
    bayes = _posterior(model, sampling, prior)
    draws, labels = bayes.level_effect_draws(factor)
    position = {str(label): k for k, label in enumerate(labels)}
    posterior = draws[:, [position[str(level)] for level in effects["level"]]]
    return LevelValues(
        labels=effects["level"].astype(str).to_numpy(), top=top, estimate=estimate,
        low=effects["low"].to_numpy(float), high=effects["high"].to_numpy(float), replicates=replicates,
        posterior=posterior, method=f"{'ML (Laplace)' if model.family.binary else fit.engine_fit.method.upper()}; "
                                   "conditional modes and SDs",
        converged=bool(fit.engine_fit.converged), unconverged=0, bayes=bayes,
        notes=[f"{factor} is a grouping factor: its levels are ranked by their random intercepts; the frequentist "
               f"columns are {n_boot} draws of every level's effect from its conditional distribution at the fit "
               "(mode and conditional SD), not refits"])


def conditional_draws(fit, factor: str, prob: float, n: int, rng: np.random.Generator):
    """The random intercepts of ``factor``'s levels at ``fit`` (an ``api.Fit``: ``level_effects``' rows of the
    "(Intercept)" term) and ``n`` draws (rows) of every level's effect (columns) from N(mode, conditional SD²)."""
    effects = fit.level_effects(factor, prob)
    effects = effects[effects["term"] == "(Intercept)"].reset_index(drop=True)
    if effects.empty:
        raise BayesreproError(f"--factor '{factor}' has no random intercept in --formula {fit.engine_fit.formula!r}: "
                              f"its levels are ranked by their intercepts, add (1|{factor})")
    if effects["sd"].isna().any():
        raise BayesreproError(f"--factor '{factor}': the fit has no conditional SDs of its levels "
                              f"({'; '.join(effects.attrs.get('notes', [])) or 'moment estimates'}), so their ranks "
                              "have no frequentist uncertainty; rank a smaller design or --factor a fixed effect")
    estimate, sd = effects["estimate"].to_numpy(float), effects["sd"].to_numpy(float)
    return effects, estimate + sd * rng.standard_normal((n, len(estimate)))


def _posterior(model, sampling, prior):
    """The model's posterior (``bayes.fit_bayes``), φ's object the model's or the factor with most levels (φ is
    not reported here, so the default's refusal of an unclear object does not apply)."""
    from .bayes import fit_bayes

    frame, family = model.frame, model.family
    return fit_bayes(frame, object=model.object or max(frame.groups, key=lambda g: g.n_levels).name,
                     family=family.name, link=family.link if family.binary else None, prior=prior, sampling=sampling)


def leader_notes(ranking: LevelRanking) -> list[str]:
    """One sentence where the bootstrap and the posterior put different levels first."""
    leaders = ranking.leaders()
    if leaders["bootstrap"] == leaders["bayesian"]:
        return []
    rows = ranking.table.set_index("level")
    boot, post = leaders["bootstrap"], leaders["bayesian"]
    return [f"the engines disagree about the leader: {boot} is best in {rows.loc[boot, 'boot_p_best']:.0%} of the "
            f"bootstrap replicates ({post}: {rows.loc[post, 'boot_p_best']:.0%}), but the posterior puts the highest "
            f"probability of being best on {post} ({rows.loc[post, 'p_best']:.2f}; {boot}: "
            f"{rows.loc[boot, 'p_best']:.2f})"]


def _point_ranks(values: np.ndarray) -> np.ndarray:
    """Ranks of the point estimates, 1 the largest (ties share the better rank)."""
    return pd.Series(values).rank(ascending=False, method="min").astype(int).to_numpy()


def _stream(seed, stream: int) -> np.random.Generator:
    """An independent random stream of ``seed`` for each use, so that changing one leaves the others."""
    return np.random.default_rng(None if seed is None else [int(seed), stream])
