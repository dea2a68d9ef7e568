"""REML against closed forms and simulation with known truth."""

import numpy as np
import pandas as pd
import pytest

from bayesrepro.frequentist.lmm import fit_lmm


def balanced_two_way(rng, n_items=40, n_seeds=5, sd_item=1.0, sd_seed=0.5, sd_res=0.3):
    items = np.repeat(np.arange(n_items), n_seeds)
    seeds = np.tile(np.arange(n_seeds), n_items)
    y = rng.normal(scale=sd_item, size=n_items)[items] + rng.normal(scale=sd_seed, size=n_seeds)[seeds]
    y = y + rng.normal(scale=sd_res, size=len(y))
    return pd.DataFrame({"item": items.astype(str), "seed": seeds.astype(str), "y": y})


def test_balanced_crossed_reml_equals_the_anova_estimator():
    """For a balanced two-way crossed design without interaction, REML equals the
    ANOVA (expected mean squares) estimator whenever that is positive."""
    frame = balanced_two_way(np.random.default_rng(1))
    a, b = 40, 5
    table = frame.pivot(index="item", columns="seed", values="y").to_numpy()
    grand = table.mean()
    ms_item = b * ((table.mean(axis=1) - grand) ** 2).sum() / (a - 1)
    ms_seed = a * ((table.mean(axis=0) - grand) ** 2).sum() / (b - 1)
    residual = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + grand
    ms_error = (residual ** 2).sum() / ((a - 1) * (b - 1))
    fit = fit_lmm("y ~ 1 + (1|item) + (1|seed)", frame)
    assert fit.variances["Residual"] == pytest.approx(ms_error, rel=1e-6)
    assert fit.variances["item"] == pytest.approx((ms_item - ms_error) / b, rel=1e-6)
    assert fit.variances["seed"] == pytest.approx((ms_seed - ms_error) / a, rel=1e-6)


def test_ml_fixed_effects_equal_gls_with_the_fitted_covariance():
    rng = np.random.default_rng(2)
    frame = balanced_two_way(rng)
    frame["x"] = rng.normal(size=len(frame))
    frame["y"] += 0.7 * frame["x"]
    fit = fit_lmm("y ~ x + (1|item) + (1|seed)", frame, method="ml")
    item = pd.get_dummies(frame["item"]).to_numpy(float)
    seed = pd.get_dummies(frame["seed"]).to_numpy(float)
    v = fit.variances
    cov = v["item"] * item @ item.T + v["seed"] * seed @ seed.T + v["Residual"] * np.eye(len(frame))
    X = np.column_stack([np.ones(len(frame)), frame["x"]])
    precision = X.T @ np.linalg.solve(cov, X)
    beta = np.linalg.solve(precision, X.T @ np.linalg.solve(cov, frame["y"].to_numpy()))
    np.testing.assert_allclose(fit.beta, beta, rtol=1e-6)
    np.testing.assert_allclose(fit.covariance, np.linalg.inv(precision), rtol=1e-5)
    sign, logdet = np.linalg.slogdet(cov)
    resid = frame["y"].to_numpy() - X @ beta
    loglik = -0.5 * (len(frame) * np.log(2 * np.pi) + logdet + resid @ np.linalg.solve(cov, resid))
    assert fit.loglik == pytest.approx(loglik, abs=1e-6)


@pytest.mark.slow
def test_reml_is_unbiased_in_simulation():
    """Mean REML estimates over 200 simulated designs sit within 3 standard errors of the truth."""
    rng = np.random.default_rng(3)
    truth = {"item": 1.0, "seed": 0.25, "Residual": 0.09}
    estimates = {name: [] for name in truth}
    for _ in range(200):
        fit = fit_lmm("y ~ 1 + (1|item) + (1|seed)", balanced_two_way(rng, n_seeds=8))
        for name in truth:
            estimates[name].append(fit.variances[name])
    for name, value in truth.items():
        draws = np.array(estimates[name])
        assert abs(draws.mean() - value) < 3 * draws.std(ddof=1) / np.sqrt(len(draws)), name
