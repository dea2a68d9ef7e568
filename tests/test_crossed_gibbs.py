"""The crossed Gibbs sampler: the fast path's posterior where both run, and its choice by fit_bayes."""

import numpy as np
import pytest

from bayesrepro.bayes import fit_bayes
from bayesrepro.bayes.crossed_gibbs import crossed_data, sample_crossed
from bayesrepro.bayes.diagnostics import diagnose
from bayesrepro.bayes.priors import DEFAULT_PRIOR, default_priors
from bayesrepro.design import model_frame
from bayesrepro.errors import BayesreproError
from bayesrepro.simulate import simulate_crowd

CROWD = "score ~ 1 + (1|item) + (1|rater)"
SDS = ["1|item_sigma", "1|rater_sigma", "sigma"]


def _mcse_of_quantile(values: np.ndarray, q: float) -> float:
    import arviz as az

    return float(az.mcse(values, method="quantile", prob=q))


@pytest.mark.slow
def test_the_gibbs_posterior_is_the_fast_paths_where_both_run():
    """Quantiles 5/50/95 % of every SD agree within 4 joint Monte-Carlo standard errors."""
    table, _ = simulate_crowd(3_000, 1_200, 150, skew=1.0, random_state=7)
    frame = model_frame(CROWD, table)
    priors = default_priors(frame, DEFAULT_PRIOR)
    gibbs = sample_crossed(crossed_data(frame), priors, 2_000, 500, 4, seed=1)
    fast = fit_bayes(frame, backend="fast", draws=2_000, tune=1_000, chains=4, seed=2, effects=False, progress=False)
    for name in SDS:
        for q in (0.05, 0.5, 0.95):
            a, b = gibbs[name], fast.draws[name]
            error = np.hypot(_mcse_of_quantile(a, q), _mcse_of_quantile(b, q))
            assert abs(np.quantile(a, q) - np.quantile(b, q)) <= 4 * error, (name, q)


def test_fit_bayes_takes_the_gibbs_sampler_when_the_fast_paths_block_is_too_large(capsys):
    table, truth = simulate_crowd(6_000, 2_000, 2_500, skew=1.0, random_state=3)
    fit = fit_bayes(CROWD, table, max_memory="64M", draws=300, tune=300, chains=4, seed=5, progress=True,
                    allow_unconverged=True)
    assert fit.backend == "crossed-gibbs"
    assert any(note.startswith("method: crossed Gibbs sampler") and "--max-memory" in note for note in fit.notes)
    assert "bayesrepro: path: crossed Gibbs sampler: the fast path would need" in capsys.readouterr().err
    assert "1|item__level" not in str(fit.draws.names)          # level effects are not kept per draw
    summary = fit.summary(0.95)
    for name, sd in (("item", truth.item_sd), ("rater", truth.rater_sd), ("Residual", truth.residual_sd)):
        assert summary.loc[name, "low"] <= sd ** 2 * 1.3 and summary.loc[name, "high"] >= sd ** 2 / 1.3, name
    assert np.isfinite(fit.diagnostics.r_hat_max)


def test_the_sampler_refuses_fixed_terms_and_r2d2_priors():
    table, _ = simulate_crowd(400, 150, 30, random_state=0)
    table["group"] = np.where(np.arange(len(table)) % 2, "x", "y")
    with pytest.raises(BayesreproError, match="intercept-only"):
        crossed_data(model_frame("score ~ group + (1|item) + (1|rater)", table))
    frame = model_frame(CROWD, table)
    with pytest.raises(BayesreproError, match="half-normal SD priors"):
        sample_crossed(crossed_data(frame), default_priors(frame, "r2d2"), 100, 100, 2, seed=0)


def test_the_chains_are_reproducible_and_converge_on_a_small_crowd():
    table, _ = simulate_crowd(2_000, 800, 100, skew=1.0, random_state=4)
    frame = model_frame(CROWD, table)
    priors = default_priors(frame, DEFAULT_PRIOR)
    first = sample_crossed(crossed_data(frame), priors, 500, 300, 4, seed=9)
    second = sample_crossed(crossed_data(frame), priors, 500, 300, 4, seed=9)
    np.testing.assert_array_equal(first["1|rater_sigma"], second["1|rater_sigma"])
    diagnostics = diagnose(first, SDS)
    assert diagnostics.r_hat_max < 1.02 and diagnostics.ess_bulk_min > 200
