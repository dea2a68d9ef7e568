"""The model check of a posterior: data sets drawn from the posterior predictive, the tests of the frequentist
check read against them, ArviZ's posterior predictive plots, and the LOO-PIT of the observed scores
(``loo_pit``).

Each simulated data set takes one posterior draw of the fixed effects and variance components and draws the
levels' effects afresh from them (the predictive distribution of a replication of the design with new
levels, brms's ``sample_new_levels = "gaussian"``), then the scores. As in the frequentist check, a Gaussian
model's simulated data sets keep the observed scores' projection on the fixed design. Effects drawn afresh
make the observed scores and the simulated ones exchangeable under the model, so the tests keep their level;
the posterior predictive with the observed levels' own effects would make every check conservative.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .. import limits
from ..errors import BayesreproError
from .frequentist import CHECK_SIMULATIONS, drawing
from .loo_pit import PARETO_K_LIMIT, loo_pit
from .run import MIN_LEVELS, Grouping, band_finding, residual_checks
from .tests import holm, loo_pit_test


def predictive_scores(bayes, simulations: int, rng: np.random.Generator) -> np.ndarray:
    """``simulations`` data sets from the posterior predictive with fresh level effects (rows × simulations).

    Parameters
    ----------
    bayes : BayesFit
        The posterior (random intercepts; scores in memory).
    simulations : int
        Data sets, one per posterior draw, the draws evenly spaced over all chains.
    rng : numpy.random.Generator
        The random numbers.

    Returns
    -------
    numpy.ndarray
        The simulated scores (successes for a binomial model).
    """
    from ..frequentist.binary_draws import draw_successes
    from ..links import LINKS

    frame = bayes.frame
    if not frame.has_rows:
        raise BayesreproError("model checks need the rows in memory: use --engine memory")
    if frame.spec.has_slopes:
        raise BayesreproError("the posterior's model check takes random intercepts; check a model with random slopes "
                              "by its REML/ML fit (drop --bayes)")
    draws = bayes.draws
    components = list(draws.coords["component"])
    variances = draws["variance"].reshape(-1, len(components))
    fixed = draws["fixed"].reshape(-1, draws["fixed"].shape[-1])
    if list(draws.coords["fixed_effect"]) != list(frame.fixed_names):
        raise BayesreproError("the posterior's fixed effects are not those of the model frame; refit the posterior")
    chosen = np.linspace(0, len(variances) - 1, simulations).round().astype(int)
    binary = bayes.family != "gaussian"
    if binary:
        latent = float(variances[0, components.index("Residual")])
        link = next(link for link in LINKS.values() if np.isclose(link.latent_residual, latent))
    out = np.empty((frame.n_obs, simulations))
    for j, d in enumerate(chosen):
        eta = frame.X @ fixed[d]
        for group in frame.groups:
            eta = eta + np.sqrt(variances[d, components.index(group.name)]) * rng.standard_normal(group.n_levels)[group.codes]
        if binary:
            out[:, j] = draw_successes(link.inverse(eta), frame.trials, rng)
        else:
            out[:, j] = eta + np.sqrt(variances[d, components.index("Residual")]) * rng.standard_normal(frame.n_obs)
    if not binary:
        basis = np.linalg.qr(frame.X)[0]
        out += basis @ (basis.T @ (frame.y[:, None] - out))
    return out


def check_posterior(posterior, seed, simulations: int):
    """``Posterior.check``: the posterior's model check (see its docstring)."""
    from ..api.model_check import ModelCheck, residual_frame

    bayes = posterior.bayes
    simulations = CHECK_SIMULATIONS.check(simulations)
    seed = None if seed is None else limits.SEED.check(seed)
    frame = bayes.frame
    limits.check_product(frame.n_obs * simulations, limits.MAX_POSTERIOR_VALUES, "simulated values (rows x simulations)",
                         "lower --simulations")
    streams = np.random.SeedSequence(seed).spawn(3)
    simulated = predictive_scores(bayes, simulations, np.random.default_rng(streams[0]))
    groups = [Grouping(g.name, g.codes, g.levels) for g in frame.groups]
    checked = residual_checks(frame.y, simulated, frame.X, groups, np.random.default_rng(streams[1]),
                              discrete=bayes.family != "gaussian")
    try:
        pit = loo_pit(bayes, np.random.default_rng(streams[2]))
    except BayesreproError as error:      # no effect draws, or too many rows for the memory limit: say why
        pit, loo_note = None, f"LOO-PIT is not shown: {error}"
    else:
        unreliable = int(np.sum(pit.pareto_k > PARETO_K_LIMIT))
        checked = replace(checked, tests=holm([*checked.tests, loo_pit_test(pit.values, pit.randomized, unreliable)]))
        loo_note = (f"LOO-PIT from {pit.draws} posterior draws (PSIS weights); "
                    + ("randomized PITs of the discrete scores" if pit.randomized else
                       "the Gaussian predictive CDF weighted per draw"))
    mean = simulated.mean(axis=1)
    observed = frame.y
    panels = [("quantile residuals Q-Q", band_finding(checked.residuals, checked.band),
               drawing("uniform_qq", checked.residuals, checked.band,
                       f"Quantile residuals ({simulations} posterior predictive draws)")),
              ("posterior predictive: scores", ppc_finding(observed, simulated, "scores"),
               drawing("predictive_density", observed, simulated, frame.spec.response, "Posterior predictive check"))]
    for group in frame.groups:
        if group.n_levels < MIN_LEVELS:
            continue
        level_means = _level_means(observed[:, None], group)[:, 0], _level_means(simulated, group)
        panels.append((f"posterior predictive: mean per level of {group.name}",
                       ppc_finding(*level_means, f"means per level of {group.name}"),
                       drawing("predictive_density", *level_means, f"mean {frame.spec.response} per {group.name}",
                               f"Posterior predictive check: {group.name}")))
    residuals = residual_frame(mean, observed - mean, checked.residuals)
    if pit is not None:
        panels.append(("LOO-PIT", loo_pit_finding(pit.values),
                       drawing("loo_pit_ecdf", pit.values, f"LOO-PIT ({pit.draws} posterior draws)")))
        residuals["loo_pit"] = pit.values
    return ModelCheck("posterior", frame.formula, bayes.family, simulations, seed, checked, panels, residuals,
                      checked.notes + [loo_note])


def loo_pit_finding(values: np.ndarray) -> str:
    """What the ECDF plot of the LOO-PIT values shows, in one sentence: the share in each outer tenth."""
    low, high = float(np.mean(values < 0.1)), float(np.mean(values > 0.9))
    return (f"{100 * low:.1f} % of the LOO-PIT values lie below 0.1 and {100 * high:.1f} % above 0.9 (10 % each "
            "expected): " + ("more scores in the tails of their leave-one-out predictive than it expects."
                             if low + high > 0.22 else "fewer scores in the tails than their predictive expects."
                             if low + high < 0.18 else "the predictive's tails hold the share of scores they should."))


def _level_means(values: np.ndarray, group) -> np.ndarray:
    counts = np.bincount(group.codes, minlength=group.n_levels)
    sums = np.stack([np.bincount(group.codes, weights=values[:, j], minlength=group.n_levels)
                     for j in range(values.shape[1])], axis=1)
    return sums / counts[:, None]


def ppc_finding(observed: np.ndarray, simulated: np.ndarray, what: str) -> str:
    """Where the observed values' SD and quartiles fall among the simulated data sets', in one sentence."""
    def summaries(values):
        return np.vstack([np.std(values, axis=0), *np.quantile(values, [0.25, 0.5, 0.75], axis=0)])

    seen, drawn = summaries(observed[:, None])[:, 0], summaries(simulated)
    # mid-ranks: discrete scores tie with many draws
    ranks = [float(np.mean(drawn[k] < seen[k]) + 0.5 * np.mean(drawn[k] == seen[k])) for k in range(4)]
    outside = [name for name, r in zip(("SD", "lower quartile", "median", "upper quartile"), ranks)
               if r < 0.025 or r > 0.975]
    text = (f"Among the posterior predictive draws, the SD of the observed {what} ranks {ranks[0]:.2f} and their "
            f"median {ranks[2]:.2f} (0.5 typical)")
    return text + (f"; outside the draws' central 95 %: {', '.join(outside)}." if outside else
                   "; their SD and quartiles all lie within the draws' central 95 %.")
