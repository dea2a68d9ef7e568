"""``Fit.predict`` and ``Fit.simulate`` without R: the fixed part equals Xβ, fitted values add the conditional
modes, unseen levels predict their population value, simulations reproduce the fitted variances."""

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.errors import BayesreproError


def leaderboard(seed=0, systems=30, items=40, binary=False):
    rng = np.random.default_rng(seed)
    grid = pd.DataFrame([(s, i) for s in range(systems) for i in range(items)], columns=["system", "item"])
    eta = 0.4 + rng.normal(0, 0.6, systems)[grid.system] + rng.normal(0, 0.8, items)[grid.item]
    grid["mode"] = np.where(grid.index % 2, "a", "b")
    eta = eta + 0.3 * (grid["mode"] == "b")
    grid["acc"] = rng.binomial(1, 1 / (1 + np.exp(-eta))) if binary else eta + rng.normal(0, 0.5, len(grid))
    grid["system"] = "s" + grid.system.astype(str)
    grid["item"] = "i" + grid.item.astype(str)
    return grid


@pytest.fixture(scope="module")
def gaussian_fit():
    data = leaderboard()
    return data, br.Model("acc ~ mode + (1|system) + (1|item)", data).fit()


def test_fixed_part_is_x_beta(gaussian_fit):
    data, fit = gaussian_fit
    beta = fit.fixed_effects["estimate"]
    expected = beta["Intercept"] + beta["mode[b]"] * (data["mode"] == "b")
    assert np.allclose(fit.predict(random_effects=False), expected, rtol=0, atol=1e-12)
    assert np.allclose(fit.predict(data.iloc[:7], random_effects=False), expected[:7], rtol=0, atol=1e-12)


def test_fitted_values_add_each_rows_modes(gaussian_fit):
    data, fit = gaussian_fit
    effects = fit.level_effects().set_index(["group", "level"])["estimate"]
    expected = (fit.predict(random_effects=False) + effects.loc["system"].loc[data.system].to_numpy()
                + effects.loc["item"].loc[data.item].to_numpy())
    assert np.allclose(fit.predict(), expected, rtol=0, atol=1e-10)
    shuffled = data.sample(frac=1.0, random_state=1)
    assert np.allclose(fit.predict(shuffled), expected[shuffled.index], rtol=0, atol=1e-10)


def test_unseen_levels_predict_population_values(gaussian_fit):
    data, fit = gaussian_fit
    new = pd.DataFrame({"mode": ["a", "b"], "system": ["s0", "never seen"], "item": ["also new", "i3"]})
    effects = fit.level_effects().set_index(["group", "level"])["estimate"]
    fixed = fit.predict(new, random_effects=False)
    assert fit.predict(new) == pytest.approx(fixed + [effects[("system", "s0")], effects[("item", "i3")]], abs=1e-12)


def test_bad_new_data_refused_in_one_line(gaussian_fit):
    _, fit = gaussian_fit
    with pytest.raises(BayesreproError, match="no column 'item'"):
        fit.predict(pd.DataFrame({"mode": ["a"], "system": ["s0"]}))
    fit.predict(pd.DataFrame({"mode": ["a"]}), random_effects=False)   # the fixed part needs no grouping column
    with pytest.raises(BayesreproError, match="column 'mode' holds 'c'"):
        fit.predict(pd.DataFrame({"mode": ["c"], "system": ["s0"], "item": ["i0"]}))


def test_simulated_variance_matches_the_fitted_total():
    data = leaderboard(seed=3, systems=60, items=60)
    fit = br.Model("acc ~ 1 + (1|system) + (1|item)", data, object="system").fit()
    draws = fit.simulate(400, seed=7)
    assert draws.shape == (len(data), 400)
    total = sum(fit.variances.values())
    # the variance of one score over draws of the whole model (new system, item and residual each draw)
    per_row = draws.var(axis=1, ddof=1)
    assert per_row.mean() == pytest.approx(total, rel=0.05)
    # the covariance of two scores sharing a system and no item is the system's variance
    same_system = data.index[data.system == "s0"][:2]
    covariance = np.cov(draws[same_system[0]], draws[same_system[1]])[0, 1]
    assert covariance == pytest.approx(fit.variances["system"], abs=0.25 * total)
    assert np.array_equal(draws, fit.simulate(400, seed=7))


def test_binary_predictions_are_probabilities_and_simulations_bernoulli():
    data = leaderboard(seed=5, binary=True)
    fit = br.Model("acc ~ mode + (1|system) + (1|item)", data).fit()
    fitted = fit.predict()
    assert np.all((fitted > 0) & (fitted < 1))
    beta = fit.fixed_effects["estimate"]
    eta = beta["Intercept"] + beta["mode[b]"] * (data["mode"] == "b")
    assert fit.predict(random_effects=False) == pytest.approx(1 / (1 + np.exp(-eta)), abs=1e-12)
    draws = fit.simulate(3, seed=1)
    assert draws.shape == (len(data), 3) and set(np.unique(draws)) <= {0.0, 1.0}


def test_rows_needed_from_grouped_sums(tmp_path):
    pytest.importorskip("duckdb")
    path = tmp_path / "scores.csv"
    leaderboard(seed=2).to_csv(path, index=False)
    fit = br.Model("acc ~ mode + (1|system) + (1|item)", str(path), engine="duckdb").fit()
    with pytest.raises(BayesreproError, match='engine="memory"'):
        fit.predict()
    with pytest.raises(BayesreproError, match='engine="memory"'):
        fit.simulate()
    memory = br.Model("acc ~ mode + (1|system) + (1|item)", str(path), engine="memory").fit()
    new = pd.DataFrame({"mode": ["a", "b"], "system": ["s1", "s2"], "item": ["i1", "x"]})
    assert fit.predict(new) == pytest.approx(memory.predict(new), rel=1e-6)
    from_sums, from_rows = fit.level_effects(), memory.level_effects()
    assert from_sums.estimate.to_numpy() == pytest.approx(from_rows.estimate.to_numpy(), abs=1e-6)
    assert from_sums.sd.to_numpy() == pytest.approx(from_rows.sd.to_numpy(), rel=1e-6)


def test_binomial_counts_simulate_successes_out_of_their_trials():
    rng = np.random.default_rng(6)
    data = pd.DataFrame({"system": np.repeat([f"s{k}" for k in range(12)], 6), "n": rng.integers(5, 30, 72)})
    data["k"] = rng.binomial(data.n, 1 / (1 + np.exp(-rng.normal(0, 1, 12)[np.repeat(np.arange(12), 6)])))
    fit = br.Model("p(k, n) ~ 1 + (1|system)", data).fit()
    draws = fit.simulate(50, seed=2)
    assert np.all((draws >= 0) & (draws <= data.n.to_numpy()[:, None])) and np.all(draws == np.round(draws))
    # over many draws of the model, the mean success rate is the population mean of the inverse logit
    fitted = fit.predict()
    assert np.all((fitted > 0) & (fitted < 1))
    assert draws.sum(axis=0).mean() / data.n.sum() == pytest.approx(
        np.mean(1 / (1 + np.exp(-(fit.fixed_effects.estimate.iloc[0]
                                   + np.sqrt(fit.variances["system"]) * rng.standard_normal(200_000))))), abs=0.05)
