"""The crossed Gibbs sampler of 0/1 scores: its Pólya–Gamma draws, its posterior against the binary fast path's
NUTS where both run, and its choice by fit_bayes."""

import numpy as np
import pandas as pd
import pytest

from bayesrepro.bayes import fit as bayes_fit
from bayesrepro.bayes import fit_bayes
from bayesrepro.bayes.binary_priors import binary_priors
from bayesrepro.bayes.crossed_binary_gibbs import sample_crossed_binary
from bayesrepro.bayes.diagnostics import diagnose
from bayesrepro.bayes.polya_gamma import fill_pg, pg_laplace, pg_mean, pg_variance
from bayesrepro.bayes.sampling import SamplingSettings
from bayesrepro.design import model_frame
from bayesrepro.errors import BayesreproError
from bayesrepro.simulate import simulate_crowd

CROWD = "score ~ 1 + (1|item) + (1|rater)"
SDS = ["1|item_sigma", "1|rater_sigma"]
# |z| bound of every comparison of a simulated mean with its exact value: 5 standard errors. About 50 such
# comparisons run; under a correct sampler each exceeds 5 with probability 5.7e-7, so all pass but once in
# 30,000 runs, while with 200,000 draws an error of 1 % in the mean of PG(1, 0) (SD/mean = 0.82) is 5.5 SE.
Z_BOUND = 5.0
DRAWS = 200_000


def _pg_draws(b: int, c: float, seed: int) -> np.ndarray:
    out = np.empty(DRAWS)
    fill_pg(np.full(DRAWS, b), np.full(DRAWS, c), np.random.default_rng(seed), out)
    return out


# c spans both sides of the proposal's switch (z = |c|/2 against 1/t = 1.5625) and of the two forms of its mixture
# weight (z = 40), large |c| and a negative c
@pytest.mark.parametrize("c", [0.0, 0.4, 1.5, 3.1, 3.2, 8.0, 40.0, 79.0, 81.0, -2.5])
def test_polya_gamma_draws_have_the_exact_mean_variance_and_laplace_transform(c):
    draws = _pg_draws(1, c, seed=int(abs(c) * 10) + 1)
    mean, variance = pg_mean(1, c), pg_variance(1, c)
    assert abs(draws.mean() - mean) <= Z_BOUND * np.sqrt(variance / DRAWS)
    # the sample variance's SE from the fourth central moment of the draws themselves
    fourth = np.mean((draws - mean) ** 4)
    assert abs(draws.var() - variance) <= Z_BOUND * np.sqrt((fourth - variance**2) / DRAWS)
    for s in (0.5, 2.0, 10.0):
        values = np.exp(-s * draws)
        assert abs(values.mean() - pg_laplace(1, c, s)) <= Z_BOUND * values.std() / np.sqrt(DRAWS), s


def test_polya_gamma_draws_of_a_whole_b_are_sums():
    draws = _pg_draws(3, 1.2, seed=5)
    assert abs(draws.mean() - pg_mean(3, 1.2)) <= Z_BOUND * np.sqrt(pg_variance(3, 1.2) / DRAWS)
    values = np.exp(-draws)
    assert abs(values.mean() - pg_laplace(3, 1.2, 1.0)) <= Z_BOUND * values.std() / np.sqrt(DRAWS)


def test_the_moment_formulas_are_the_laplace_transforms_derivatives():
    """pg_mean and pg_variance against the first two derivatives of the Laplace transform at 0 (central
    differences, step 1e-4: truncation error about 1e-9 against values of 1e-2)."""
    h = 1e-4
    for c in (0.0, 0.7, 5.0):
        values = [pg_laplace(1, c, s) for s in (-h, 0.0, h)]
        first, second = (values[2] - values[0]) / (2 * h), (values[2] - 2 * values[1] + values[0]) / h**2
        assert -first == pytest.approx(pg_mean(1, c), rel=1e-6)
        assert second - first**2 == pytest.approx(pg_variance(1, c), rel=1e-4)


def _mcse_of_quantile(values: np.ndarray, q: float) -> float:
    import arviz as az

    return float(az.mcse(values, method="quantile", prob=q))


@pytest.fixture(scope="module")
def small_crowd():
    """A few hundred 0/1 scores, items × raters crossed, some (item, rater) pairs scored twice (cells of 2 trials)."""
    table, _ = simulate_crowd(300, 100, 25, skew=1.0, binary=True, random_state=6)
    return table


@pytest.fixture(scope="module")
def scored_grid():
    """40 items × 8 raters, every pair scored once, the first 10 items twice (cells of 2 trials): 400 0/1 scores on
    which the fast path's NUTS takes seconds."""
    rng = np.random.default_rng(4)
    item, rater = np.repeat(np.arange(40), 8), np.tile(np.arange(8), 40)
    item, rater = np.concatenate([item, item[:80]]), np.concatenate([rater, rater[:80]])
    eta = 0.3 + rng.normal(0, 1, 40)[item] + rng.normal(0, 0.5, 8)[rater]
    return pd.DataFrame({"item": item, "rater": rater, "score": (rng.random(len(item)) < 1 / (1 + np.exp(-eta))) * 1})


@pytest.mark.parametrize("link", ["logit", pytest.param("probit", marks=pytest.mark.slow)])
def test_the_gibbs_posterior_is_the_fast_paths_where_both_run(scored_grid, link, monkeypatch):
    """Quantiles 5/50/95 % of the SDs, the intercept and both phis agree within 4 joint Monte-Carlo standard errors
    (15 comparisons: under agreement each fails with probability 6e-5, all pass but once in 1,000 runs)."""
    frame = model_frame(CROWD, scored_grid)
    assert frame.binomial().trials.max() == 2
    monkeypatch.setattr(bayes_fit, "BINARY_GIBBS_LEVELS", 1)
    gibbs = fit_bayes(frame, link=link, draws=1_000, chains=4, seed=1, progress=False)
    assert gibbs.backend == "crossed-gibbs"
    fast = fit_bayes(frame, link=link, backend="fast", draws=1_000, chains=4, seed=2, effects=False, progress=False)
    assert fast.backend == "fast"
    pairs = [(gibbs.draws[name], fast.draws[name]) for name in SDS]
    pairs += [(gibbs.draws["fixed"][..., 0], fast.draws["fixed"][..., 0]), (gibbs.draws["phi"], fast.draws["phi"])]
    pairs.append((gibbs.draws["phi_observed"], fast.draws["phi_observed"]))
    for k, (a, b) in enumerate(pairs):
        for q in (0.05, 0.5, 0.95):
            error = np.hypot(_mcse_of_quantile(a, q), _mcse_of_quantile(b, q))
            assert abs(np.quantile(a, q) - np.quantile(b, q)) <= 4 * error, (k, q)


def test_fit_bayes_announces_the_sampler_and_keeps_the_fast_paths_outputs(small_crowd, monkeypatch, capsys):
    monkeypatch.setattr(bayes_fit, "BINARY_GIBBS_LEVELS", 20)
    fit = fit_bayes(CROWD, small_crowd, draws=200, tune=200, chains=2, seed=3, progress=True, allow_unconverged=True)
    assert fit.backend == "crossed-gibbs"
    err = capsys.readouterr().err
    assert "bayesrepro: path: crossed Gibbs sampler (Polya-Gamma augmentation): the fast path would sample" in err
    assert "bayesrepro: sampling: 800/800 draws" in err
    assert any(note.startswith("method: crossed Gibbs sampler") and "level effects are not kept" in note
               for note in fit.notes)
    assert fit.draws.labels("fixed") == ["Intercept"]
    assert fit.draws.labels("variance") == ["item", "rater", "Residual"]
    np.testing.assert_allclose(fit.draws["variance"][..., 2], np.pi**2 / 3)
    assert "fp_phi" not in fit.draws and "1|rater" not in fit.draws
    out = fit.to_dict()
    assert out["scale"] == "latent" and 0 < out["phi_observed"]["median"] < out["phi"]["median"]
    with pytest.raises(BayesreproError, match="not kept by the crossed Gibbs sampler; refit with --backend fast"):
        fit.level_effects("rater")


def test_an_explicit_backend_or_sampler_keeps_nuts(small_crowd, monkeypatch):
    monkeypatch.setattr(bayes_fit, "BINARY_GIBBS_LEVELS", 1)
    frame = model_frame(CROWD, small_crowd)
    assert bayes_fit._crossed_gibbs_reason(frame, bayes_fit.resolve_family(frame, "auto", None)) is not None
    fit = fit_bayes(frame, sampler="nutpie", draws=100, tune=100, chains=2, seed=1, effects=False, progress=False,
                    allow_unconverged=True)
    assert fit.backend == "fast"


def test_small_designs_and_fixed_terms_stay_on_the_fast_path(small_crowd):
    frame = model_frame(CROWD, small_crowd)
    assert bayes_fit._crossed_gibbs_reason(frame, bayes_fit.resolve_family(frame, "auto", None)) is None
    table = small_crowd.assign(group=np.where(np.arange(len(small_crowd)) % 2, "x", "y"))
    fixed = model_frame("score ~ group + (1|item) + (1|rater)", table)
    assert bayes_fit._crossed_gibbs_reason(fixed, bayes_fit.resolve_family(fixed, "auto", None)) is None


def test_the_sampler_refuses_fixed_terms(small_crowd):
    table = small_crowd.assign(group=np.where(np.arange(len(small_crowd)) % 2, "x", "y"))
    frame = model_frame("score ~ group + (1|item) + (1|rater)", table)
    with pytest.raises(BayesreproError, match="intercept-only"):
        sample_crossed_binary(frame.binomial(), binary_priors(frame), "logit", SamplingSettings(progress=False))


def test_the_chains_are_reproducible_and_converge(small_crowd):
    frame = model_frame(CROWD, small_crowd)
    settings = SamplingSettings(draws=400, tune=100, chains=4, seed=9, progress=False)
    first = sample_crossed_binary(frame.binomial(), binary_priors(frame), "logit", settings)
    second = sample_crossed_binary(frame.binomial(), binary_priors(frame), "logit", settings)
    np.testing.assert_array_equal(first["1|rater_sigma"], second["1|rater_sigma"])
    diagnostics = diagnose(first, SDS)
    assert diagnostics.r_hat_max < 1.02 and diagnostics.ess_bulk_min > 200
