"""Residuals and model checks: quantile residuals' exactness, the Monte-Carlo tests, ``Fit.check``/``ModelCheck``
and ``bayesrepro check`` (the calibration over many data sets is studies/model_check_calibration.py)."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kstest, rankdata

import bayesrepro as br
from bayesrepro.cli import main
from bayesrepro.errors import BayesreproError
from bayesrepro.model_checks import tests
from bayesrepro.model_checks.residuals import (deviance_residuals, pearson_residuals, quantile_residuals,
                                               simulated_quantile_residuals)
from bayesrepro.simulate import repeated_measures


class Fixed:
    """A generator whose uniform draws are all ``value``: the ranks without their randomization."""

    def __init__(self, value):
        self.value = value

    def uniform(self, size):
        return np.full(size, self.value)

    def random(self, size, dtype=float):
        return np.full(size, self.value, dtype=dtype)


@pytest.mark.parametrize("binary", [False, True])
def test_quantile_residuals_of_exchangeable_scores_are_uniform(binary):
    rng = np.random.default_rng(1)
    mean = rng.normal(0, 2, 4000)
    draw = (lambda: (rng.random((4000, 100)) < 1 / (1 + np.exp(-mean[:, None]))).astype(float)) if binary else \
        (lambda: mean[:, None] + rng.standard_normal((4000, 100)))
    observed, simulated = draw()[:, 0], draw()[:, :99]
    residuals = quantile_residuals(observed, simulated, rng)
    assert kstest(residuals, "uniform").pvalue > 0.01
    # a 0 among simulated 0/1 scores ranks below every 1: its residual lies below the share of zeros
    if binary:
        zeros = (simulated == 0).sum(axis=1)
        assert np.all(residuals[observed == 0] <= (zeros[observed == 0] + 1) / 100)


@pytest.mark.parametrize("kind", ["ties", "continuous"])
def test_simulated_residuals_rank_each_data_set_among_the_others(kind):
    rng = np.random.default_rng(2)
    simulated = rng.integers(0, 3, (60, 25)).astype(float) if kind == "ties" else rng.normal(size=(60, 25))
    below = rankdata(simulated, method="min", axis=1) - 1
    at_most = rankdata(simulated, method="max", axis=1)
    np.testing.assert_allclose(simulated_quantile_residuals(simulated, Fixed(0.0)), below / 25, atol=1e-6)
    np.testing.assert_allclose(simulated_quantile_residuals(simulated, Fixed(1.0)), at_most / 25, atol=1e-6)
    np.testing.assert_allclose(quantile_residuals(simulated[:, 0], simulated[:, 1:], Fixed(0.0)),
                               (rankdata(simulated, method="min", axis=1)[:, 0] - 1) / 25)
    if kind == "continuous":    # Gaussian simulations skip the search for ties, which they do not have
        np.testing.assert_array_equal(simulated_quantile_residuals(simulated, Fixed(0.5), ties=False),
                                      simulated_quantile_residuals(simulated, Fixed(0.5)))


def test_loo_pit_of_a_normal_mean_is_the_exact_leave_one_out_pit():
    """y_i ~ N(θ, 1), flat prior: θ | y ~ N(ȳ, 1/n), and y_i's leave-one-out predictive is N(ȳ_−i, 1 + 1/(n − 1)).
    PSIS from 8,000 exact posterior draws recovers every PIT within 0.02 (its Monte-Carlo SD is below 0.005)."""
    from scipy.stats import norm

    from bayesrepro.model_checks.loo_pit import psis_pit

    rng = np.random.default_rng(3)
    y = rng.normal(0.4, 1.0, 30)
    n = len(y)
    theta = rng.normal(y.mean(), 1 / np.sqrt(n), 8000)
    others = (y.sum() - y) / (n - 1)
    exact = norm.cdf((y - others) / np.sqrt(1 + 1 / (n - 1)))
    values, pareto_k = psis_pit(y, np.repeat(theta[:, None], n, axis=1), np.ones(8000), None, 1.0, rng)
    np.testing.assert_allclose(values, exact, atol=0.02)
    assert np.all(pareto_k < 0.5)


def test_randomized_loo_pit_of_a_bernoulli_rate_is_the_exact_one():
    """0/1 scores, θ ~ Beta(1, 1): the leave-one-out P(y_i = 1) is (1 + Σ_−i y)/(n + 1); the randomized PIT is
    U·(1 − p) for a 0 and 1 − p + U·p for a 1 (Czado, Gneiting & Held 2009), U the same uniform draws."""
    from bayesrepro.model_checks.loo_pit import psis_pit

    rng = np.random.default_rng(4)
    y = (rng.random(40) < 0.3).astype(float)
    n = len(y)
    theta = rng.beta(1 + y.sum(), 1 + n - y.sum(), 8000)
    p = (1 + y.sum() - y) / (n + 1)
    u = np.random.default_rng(9).uniform(size=n)
    exact = np.where(y == 1, 1 - p + u * p, u * (1 - p))
    values, _ = psis_pit(y, np.repeat(theta[:, None], n, axis=1), None, None, 1.0, np.random.default_rng(9))
    np.testing.assert_allclose(values, exact, atol=0.02)


def test_loo_pit_test_reads_kolmogorovs_distribution():
    rng = np.random.default_rng(5)
    values = rng.random(2000)
    uniform = tests.loo_pit_test(values, False, 0)
    reference = kstest(values, "uniform", method="exact")
    assert not uniform.flagged
    assert uniform.statistic == pytest.approx(reference.statistic) and uniform.p == pytest.approx(reference.pvalue,
                                                                                                   rel=1e-3)
    squeezed = tests.loo_pit_test(0.25 + 0.5 * rng.random(2000), False, 3)
    assert squeezed.flagged and "closer to the model's mean" in squeezed.sentence and "3 of the 2000 values" in squeezed.sentence


def test_ks_distance_is_kolmogorovs_and_holm_is_holms():
    values = np.random.default_rng(3).random((50, 3)) ** 1.3
    expected = [kstest(column, "uniform").statistic for column in values.T]
    np.testing.assert_allclose(tests.ks_distances(np.sort(values, axis=0)), expected)
    found = [tests.CheckTest(str(k), None, 0.0, p, ("", "")) for k, p in enumerate([0.01, 0.04, 0.03, 0.5])]
    # Holm: sorted p times (m − rank), running maximum, capped at 1
    assert [t.p_adjusted for t in tests.holm(found)] == pytest.approx([0.04, 0.09, 0.09, 0.5])


def test_binomial_pearson_and_deviance_residuals_of_counts():
    y, n, mu = np.array([0.0, 3.0, 5.0]), np.array([5.0, 5.0, 5.0]), np.array([0.2, 0.5, 0.9])
    np.testing.assert_allclose(pearson_residuals(y, mu, True, n), np.sqrt(n) * (y / n - mu) / np.sqrt(mu * (1 - mu)))
    unit = 2 * np.array([5 * np.log(1 / 0.8), 3 * np.log(0.6 / 0.5) + 2 * np.log(0.4 / 0.5), 5 * np.log(1 / 0.9)])
    np.testing.assert_allclose(deviance_residuals(y, mu, True, n), np.sign(y / n - mu) * np.sqrt(unit))


def leaderboard(seed=0, slope_sd=0.0, binary=False, items=40):
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(items), 6)
    system = np.tile(np.repeat([0, 1], 3), items)
    eta = 0.5 * system + rng.normal(0, 1, items)[item] + rng.normal(0, slope_sd, items)[item] * system
    y = (rng.random(len(eta)) < 1 / (1 + np.exp(-eta))).astype(float) if binary else eta + rng.normal(0, 0.7, len(eta))
    return pd.DataFrame({"y": y, "item": np.char.add("i", item.astype(str)), "system": np.where(system, "b", "a")})


def test_the_check_flags_a_missing_slope_and_passes_the_model_with_it():
    data = repeated_measures(random_state=4)
    without = br.Model("y ~ day + (1|subject)", data).fit().check(seed=1)
    structure = without.tests.set_index("test").loc["within-level structure"]
    assert without.flagged and structure["flagged"] and structure["p"] < 0.01
    with_slope = br.Model("y ~ day + (day|subject)", data).fit().check(seed=1)
    assert not with_slope.flagged


def test_the_check_flags_binary_scores_fitted_as_gaussian():
    data = leaderboard(5, binary=True)
    check = br.Model("y ~ system + (1|item)", data, family="gaussian").fit().check(seed=2)
    assert check.tests.set_index("test").loc["uniformity", "flagged"]
    assert not br.Model("y ~ system + (1|item)", data).fit().check(seed=2).flagged


def test_fit_residuals_of_every_kind():
    fit = br.Model("y ~ system + (1|item)", leaderboard(6, binary=True)).fit()
    data = leaderboard(6, binary=True)
    fitted = fit.predict()
    np.testing.assert_allclose(fit.residuals(), data["y"] - fitted)
    np.testing.assert_allclose(fit.residuals("pearson"), (data["y"] - fitted) / np.sqrt(fitted * (1 - fitted)))
    quantile = fit.residuals("quantile", seed=3)
    assert np.all((quantile > 0) & (quantile < 1)) and np.array_equal(quantile, fit.residuals("quantile", seed=3))
    gaussian = br.Model("y ~ system + (1|item)", leaderboard(6)).fit()
    np.testing.assert_allclose(gaussian.residuals("deviance"), gaussian.residuals("response"))
    with pytest.raises(BayesreproError, match="kind='x' is unknown"):
        fit.residuals("x")
    with pytest.raises(BayesreproError, match="simulations= must be a whole number from 19"):
        fit.check(simulations=5)


def test_a_check_is_its_json_its_text_and_escaped_html(tmp_path, capsys):
    data = leaderboard(7)
    data.loc[data["item"] == "i3", "y"] += 8.0       # one item far out in the tail
    data["item"] = data["item"].replace("i3", "<script>alert(1)</script>")
    path = tmp_path / "board.csv"
    data.to_csv(path, index=False)
    check = br.Model("y ~ system + (1|item)", str(path)).fit().check(seed=0, simulations=99)
    outlying = check.tests.set_index("test").loc["outlying levels"]
    assert outlying["flagged"] and "<script>alert(1)</script> (z = +" in outlying["finding"]
    assert "<script>" not in check._repr_html_() and "&lt;script&gt;" in check._repr_html_()
    assert "outlying levels" in check.summary()
    assert set(check.figures()) == {"residuals against fitted", "quantile residuals Q-Q", "level effects Q-Q: item"}
    assert len(check.plot().axes) == 4           # three panels and a hidden fourth
    figure = tmp_path / "check.png"
    assert main(["check", str(path), "--formula", "y ~ system + (1|item)", "--simulations", "99", "--json",
                 "--out", str(figure)]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(check.to_dict()))
    assert figure.stat().st_size > 0


@pytest.mark.parametrize("arguments, option", [(["--simulations", "5"], "--simulations"),
                                               (["--out", "check.txt"], "--out"),
                                               (["--engine", "duckdb", "--progress"], "--engine")])
def test_bad_options_are_refused_in_one_line(tmp_path, capsys, arguments, option):
    path = tmp_path / "board.csv"
    leaderboard(8).to_csv(path, index=False)
    assert main(["check", str(path), "--formula", "y ~ system + (1|item)", *arguments]) == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1 and option in error


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::bayesrepro.errors.ConvergenceWarning")
def test_the_posterior_check_reads_posterior_predictive_data_sets():
    data = leaderboard(9).assign(item=lambda d: "<b>" + d["item"] + "</b>")    # labels that are markup
    posterior = br.Model("y ~ system + (1|item)", data).sample(draws=200, tune=300, chains=2, allow_unconverged=True)
    check = posterior.check(seed=0, simulations=99)
    assert check.engine == "posterior" and check.simulations == 99
    assert not check.flagged
    assert {"posterior predictive: scores", "posterior predictive: mean per level of item", "LOO-PIT"} <= \
        set(check.figures())
    payload = check.to_dict()
    assert payload["tests"][0]["test"] == "uniformity"
    loo = next(t for t in payload["tests"] if t["test"] == "LOO-PIT uniformity")
    assert loo["reference"] == "Kolmogorov" and not loo["randomized"] and not loo["flagged"]
    assert "LOO-PIT" in [f["figure"] for f in payload["figures"]] and "LOO-PIT uniformity" in check.summary()
    assert check.residuals["loo_pit"].between(0, 1).all()
    shown = check._repr_html_()
    assert "<td>LOO-PIT uniformity</td>" in shown and "<td>LOO-PIT</td>" in shown and "<b>" not in shown
    # the predictive CDF per draw against ArviZ's count of predictive draws below each score, with the same PSIS
    # weights: they differ by the draws' Monte-Carlo error alone (SD ≤ 0.5/√400 per score)
    import arviz as az
    from scipy.stats import norm

    from bayesrepro.bayes.prediction import predictive_draws

    bayes = posterior.bayes
    mean = predictive_draws(bayes, None, "mean", seed=1)
    sigma = bayes.draws["sigma"].reshape(-1)[:, None]
    log_weights, _ = az.psislw(-norm.logpdf(bayes.frame.y, mean, sigma).T)
    drawn = mean + sigma * np.random.default_rng(2).standard_normal(mean.shape)
    counted = az.loo_pit(y=bayes.frame.y, y_hat=drawn.T, log_weights=np.asarray(log_weights))
    exact = (np.exp(np.asarray(log_weights)) * norm.cdf((bayes.frame.y[:, None] - mean.T) / sigma.T)).sum(axis=1)
    assert np.mean(np.abs(counted - exact)) < 0.03
    assert np.corrcoef(check.residuals["loo_pit"], exact)[0, 1] > 0.98


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::bayesrepro.errors.ConvergenceWarning")
def test_the_loo_pit_of_scores_fitted_as_gaussian_is_flagged_when_they_are_zero_or_one():
    check = br.Model("y ~ system + (1|item)", leaderboard(9, binary=True), family="gaussian").sample(draws=200, tune=300, chains=2,
                                                                              allow_unconverged=True).check(seed=0)
    loo = check.tests.set_index("test").loc["LOO-PIT uniformity"]
    assert loo["flagged"] and "not uniform" in loo["finding"]
