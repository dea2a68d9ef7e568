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
    posterior = br.Model("y ~ system + (1|item)", leaderboard(9)).sample(draws=200, tune=300, chains=2,
                                                                           allow_unconverged=True)
    check = posterior.check(seed=0, simulations=99)
    assert check.engine == "posterior" and check.simulations == 99
    assert not check.flagged
    assert {"posterior predictive: scores", "posterior predictive: mean per level of item"} <= set(check.figures())
    assert check.to_dict()["tests"][0]["test"] == "uniformity"
