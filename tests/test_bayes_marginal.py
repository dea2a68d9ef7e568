"""The fast path's algebra against closed forms: dense Gaussian densities and conditionals."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from bayesrepro.bayes.effects import draw_effects
from bayesrepro.bayes.marginal import marginal_loglik_np, marginal_loglik_pt, marginal_stats
from bayesrepro.bayes.priors import default_priors
from bayesrepro.design import build_model_frame
from conftest import gaussian_cases



def _dense(frame, priors, sd):
    Xc = frame.X - priors.x_means
    V = sd["Residual"] ** 2 * np.eye(len(frame.y)) + Xc @ np.diag(priors.fixed_sigma**2) @ Xc.T
    for g in frame.groups:
        Z = np.eye(g.n_levels)[g.codes]
        V += sd[g.name] ** 2 * Z @ Z.T
    return Xc, V


@pytest.mark.parametrize("case", range(3))
def test_marginal_loglik_equals_dense_gaussian_density(case):
    formula, data = gaussian_cases()[case]
    frame = build_model_frame(formula, data)
    priors = default_priors(frame)
    stats = marginal_stats(frame, priors)
    rng = np.random.default_rng(case)
    for k in range(3):
        sd = {g.name: rng.uniform(0.001, 0.4) for g in frame.groups} | {"Residual": rng.uniform(0.05, 0.3)}
        Xc, V = _dense(frame, priors, sd)
        reference = multivariate_normal(Xc @ priors.fixed_mu, V).logpdf(frame.y)
        fast = marginal_loglik_np(stats, priors.fixed_sigma**2, sd["Residual"], sd[stats.dominant], [sd[n] for n in stats.rest])
        # both sides are exact float64 evaluations of the same density
        assert fast == pytest.approx(reference, rel=1e-9, abs=1e-7)
        if k == 0:  # the PyTensor graph sampled by NUTS (compiling it once is enough)
            graph = marginal_loglik_pt(
                stats, priors.fixed_sigma**2, sd["Residual"], sd[stats.dominant], [sd[n] for n in stats.rest]
            ).eval()
            assert graph == pytest.approx(reference, rel=1e-9, abs=1e-7)


def _conditional(case, sd, n, seed=0):
    """Effect draws of the fast path at fixed SDs, and the joint Gaussian conditional of every effect, densely."""
    formula, data = gaussian_cases()[case]
    frame = build_model_frame(formula, data)
    priors = default_priors(frame)
    stats = marginal_stats(frame, priors)
    draws = draw_effects(
        stats, priors.fixed_sigma**2, np.full(n, sd["Residual"]), {k: np.full(n, v) for k, v in sd.items()},
        np.random.default_rng(seed),
    )
    Xc, _ = _dense(frame, priors, sd)
    W = np.hstack([Xc] + [np.eye(g.n_levels)[g.codes] for g in frame.groups])
    lam = np.concatenate([priors.fixed_sigma**2] + [np.full(g.n_levels, sd[g.name] ** 2) for g in frame.groups])
    m = np.concatenate([priors.fixed_mu, np.zeros(W.shape[1] - len(priors.fixed_mu))])
    cov = np.linalg.inv(np.diag(1 / lam) + W.T @ W / sd["Residual"] ** 2)
    mean = m + cov @ W.T @ (frame.y - W @ m) / sd["Residual"] ** 2
    return frame, stats, draws, W, mean, cov


def _levels(frame, stats, draws):
    return {g.name: draws.dominant.draw() if g.name == stats.dominant else draws.levels[g.name] for g in frame.groups}


def test_effect_draws_follow_the_exact_gaussian_conditional():
    frame = build_model_frame(*gaussian_cases()[0])
    sd = {g.name: 0.03 * (k + 1) for k, g in enumerate(frame.groups)} | {"Residual": 0.1}
    n = 8_000
    frame, stats, draws, W, mean, cov = _conditional(0, sd, n)
    levels = _levels(frame, stats, draws)
    offset = W.shape[1] - sum(g.n_levels for g in frame.groups)
    for g in frame.groups:
        block = slice(offset, offset + g.n_levels)
        offset += g.n_levels
        sds = np.sqrt(np.diag(cov)[block])
        # 5 Monte-Carlo standard errors of a mean / of an SD from n draws
        assert np.all(np.abs(levels[g.name].mean(0) - mean[block]) < 5 * sds / np.sqrt(n))
        assert np.all(np.abs(levels[g.name].std(0) - sds) < 5 * sds / np.sqrt(2 * n))
    # the intercept of the uncentred design: the design has only an intercept column
    assert abs(draws.fixed[:, 0].mean() - mean[0]) < 5 * np.sqrt(cov[0, 0] / n)


# the G-study (fewer items than columns: z drawn as it is), one factor of 60 items with 9 rows each (z through its
# projections), and the unbalanced design (items of 1-9 rows: both kinds of group)
@pytest.mark.parametrize("case", range(3))
def test_finite_population_variances_have_the_law_of_the_realised_effects(case):
    frame = build_model_frame(*gaussian_cases()[case])
    sd = {g.name: 0.05 * (k + 1) for k, g in enumerate(frame.groups)} | {"Residual": 0.1}
    n = 6_000
    frame, stats, draws, W, mean, cov = _conditional(case, sd, n)
    # the reference: every effect drawn jointly from the dense conditional, the realised variances computed from them
    theta = mean + np.random.default_rng(1).standard_normal((n, len(mean))) @ np.linalg.cholesky(cov).T
    residuals = frame.y - theta @ W.T
    offset = W.shape[1] - sum(g.n_levels for g in frame.groups)
    reference = {}
    for g in frame.groups:
        reference[g.name] = np.var(theta[:, offset : offset + g.n_levels], axis=1, ddof=1)
        offset += g.n_levels
    reference["Residual"] = np.var(residuals, axis=1, ddof=1)
    for name, values in reference.items():
        fast = draws.variances[name]
        # two independent samples of n draws: their means and SDs within 5 combined Monte-Carlo standard errors
        spread = np.hypot(values.std(), fast.std())
        assert abs(fast.mean() - values.mean()) < 5 * spread / np.sqrt(n), name
        assert abs(fast.std() - values.std()) < 5 * spread / np.sqrt(2 * n), name


@pytest.mark.parametrize("case", range(3))
def test_item_effects_drawn_when_read_reproduce_the_finite_population_variances(case):
    frame = build_model_frame(*gaussian_cases()[case])
    sd = {g.name: 0.05 * (k + 1) for k, g in enumerate(frame.groups)} | {"Residual": 0.1}
    frame, stats, draws, W, mean, cov = _conditional(case, sd, 200)
    levels = _levels(frame, stats, draws)
    np.testing.assert_array_equal(levels[stats.dominant], draws.dominant.draw())  # the same effects at every read
    residuals = frame.y - draws.fixed @ frame.X.T - sum(levels[g.name][:, g.codes] for g in frame.groups)
    # the sums behind the variances and the effects are two float64 evaluations of the same draws
    np.testing.assert_allclose(np.var(levels[stats.dominant], axis=1, ddof=1), draws.variances[stats.dominant],
                               rtol=1e-8)
    np.testing.assert_allclose(np.var(residuals, axis=1, ddof=1), draws.variances["Residual"], rtol=1e-8)
