"""The binary fast path's compiled density: the integral over the items against adaptive quadrature,
the whole log-likelihood against one integral per item, the gradient against finite differences."""

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.special import expit

from bayesrepro.bayes.binary_density import MAX_GRID, dominant_marginal, profile_grid

from bayesrepro.bayes.binary_layout import binary_layout
from bayesrepro.bayes.binary_model import build_binary_model
from bayesrepro.bayes.binary_priors import binary_priors
from bayesrepro.design import build_model_frame


def log_integral(eta, trials, successes, sigma):
    """log ∫ exp(s u − Σ n log(1 + e^{η+u})) N(u; 0, σ²) du by adaptive quadrature around the peak."""

    def log_f(u):
        return successes * u - np.sum(trials * np.logaddexp(0.0, eta + u)) - 0.5 * (u / sigma) ** 2

    grid = np.linspace(-12 * sigma - 10, 12 * sigma + 10, 4001)
    values = np.array([log_f(u) for u in grid])
    peak, top = grid[np.argmax(values)], values.max()
    area, _ = integrate.quad(lambda u: np.exp(log_f(u) - top), grid[0], grid[-1], points=[peak], limit=2000,
                             epsabs=0, epsrel=1e-13)
    return np.log(area) + top - np.log(sigma * np.sqrt(2 * np.pi))


def one_profile(eta, trials, successes, counts):
    n = len(eta)
    return dict(eta=eta, profile_start=np.array([0, n]), profile_config=np.arange(n), profile_trials=trials,
                pair_start=np.array([0, len(successes)]), pair_successes=successes, pair_count=counts)


def marginal(eta, log_sigma, arrays):
    gradient = np.zeros(len(eta))
    value, d_log_sigma = dominant_marginal(
        eta, log_sigma, arrays["profile_start"], arrays["profile_config"], arrays["profile_trials"],
        arrays["pair_start"], arrays["pair_successes"], arrays["pair_count"], gradient)
    return value, d_log_sigma, gradient


@pytest.mark.parametrize("trials_per_config, n_configs", [(1, 60), (5, 12), (40, 3)])
@pytest.mark.parametrize("sigma", [0.05, 0.3, 1.5, 4.0])
def test_each_integral_matches_adaptive_quadrature(trials_per_config, n_configs, sigma):
    rng = np.random.default_rng(n_configs)
    eta = rng.normal(0.5, 0.8, n_configs)
    trials = np.full(n_configs, float(trials_per_config))
    total = int(trials.sum())
    for s in sorted({0, 1, 2, total // 3, total // 2, total - 1, total}):
        arrays = one_profile(eta, trials, np.array([float(s)]), np.ones(1))
        value, _, _ = marginal(eta, np.log(sigma), arrays)
        # the reference is itself good to about 1e-12; the extremes s = 0 and s = n are the skewed cases
        assert value == pytest.approx(log_integral(eta, trials, s, sigma), abs=1e-9), (s, sigma)


def test_gradient_of_the_integral_matches_finite_differences():
    rng = np.random.default_rng(3)
    eta = rng.normal(0.3, 1.0, 20)
    trials = rng.integers(1, 4, 20).astype(float)
    successes = np.arange(0, trials.sum() + 1)
    arrays = one_profile(eta, trials, successes, rng.integers(1, 30, len(successes)).astype(float))
    value, d_log_sigma, gradient = marginal(eta, 0.2, arrays)
    step = 1e-5
    for j in range(len(eta)):
        shift = np.zeros_like(eta)
        shift[j] = step
        numeric = (marginal(eta + shift, 0.2, arrays)[0] - marginal(eta - shift, 0.2, arrays)[0]) / (2 * step)
        assert gradient[j] == pytest.approx(numeric, rel=1e-6, abs=1e-6)
    numeric = (marginal(eta, 0.2 + step, arrays)[0] - marginal(eta, 0.2 - step, arrays)[0]) / (2 * step)
    assert d_log_sigma == pytest.approx(numeric, rel=1e-6)


def test_points_where_no_grid_can_be_laid_have_zero_density():
    eta = np.zeros(60)
    arrays = one_profile(eta, np.ones(60), np.array([0.0, 60.0]), np.ones(2))
    assert marginal(eta, np.log(1e6), arrays)[0] == -np.inf
    assert marginal(np.full(60, np.nan), 0.0, arrays)[0] == -np.inf
    # the cut lies where the HalfNormal(2.5) prior has no mass to speak of (see MAX_GRID)
    grid = profile_grid(0, np.log(200.0), eta, arrays["profile_start"], arrays["profile_config"],
                        arrays["profile_trials"], arrays["pair_start"], arrays["pair_successes"])
    assert grid[2] <= MAX_GRID


def unbalanced_scores(seed=0, items=25):
    """Binary scores of a crossed design with rows missing at random and a numeric covariate: several profiles."""
    rng = np.random.default_rng(seed)
    grid = pd.MultiIndex.from_product([range(items), ["A", "B"], range(3), range(2)],
                                      names=["item", "system", "seed", "prompt"]).to_frame(index=False)
    grid = grid[rng.random(len(grid)) > 0.15].reset_index(drop=True)
    grid["length"] = rng.normal(size=items)[grid["item"]]
    eta = (0.3 + 0.4 * (grid["system"] == "B") + 0.5 * grid["length"] + rng.normal(0, 1.2, items)[grid["item"]]
           + rng.normal(0, 0.3, 6)[grid["seed"] + 3 * (grid["system"] == "B")] + rng.normal(0, 0.4, 2)[grid["prompt"]])
    grid["correct"] = (rng.random(len(grid)) < expit(eta)).astype(int)
    for column in ("item", "seed", "prompt"):
        grid[column] = grid[column].astype(str)
    return grid


FORMULA = "correct ~ system + length + (1|item) + (1|system:seed) + (1|prompt)"


@pytest.fixture(scope="module")
def unbalanced():
    frame = build_model_frame(FORMULA, unbalanced_scores())
    cells = frame.binomial()
    layout = binary_layout(cells.successes, cells.trials, cells.fixed_cell, cells.codes, [len(l) for l in cells.levels])
    model = build_binary_model(layout, cells.X_fixed, binary_priors(frame), frame.group_names, cells.levels)
    return frame, cells, layout, model


def test_missing_rows_give_several_profiles_and_the_counts_add_up(unbalanced):
    frame, cells, layout, _ = unbalanced
    assert layout.n_profiles > 1
    assert layout.pair_count.sum() == frame.groups[0].n_levels
    assert layout.config_successes.sum() == frame.y.sum()
    totals = pd.Series(frame.y).groupby(frame.groups[0].codes).sum().to_numpy()
    np.testing.assert_array_equal(layout.pair_successes[layout.level_pair], totals)


def test_log_likelihood_equals_one_integral_per_item(unbalanced):
    """Σ_k Y_k η_k + Σ_pairs count log I equals Σ_items log ∫ Π_rows p(y | η + u) N(u; 0, σ²) du."""
    frame, cells, layout, _ = unbalanced
    rng = np.random.default_rng(11)
    eta = rng.normal(0.2, 0.7, layout.n_configs)
    sigma = 1.3
    gradient = np.zeros(layout.n_configs)
    value, _ = dominant_marginal(eta, np.log(sigma), layout.profile_start, layout.profile_config,
                                 layout.profile_trials, layout.pair_start, layout.pair_successes, layout.pair_count,
                                 gradient)
    ours = layout.config_successes @ eta + value
    config_of_cell = {}
    for k in range(layout.n_configs):
        key = (layout.config_fixed[k], *layout.config_codes[:, k])
        config_of_cell[key] = k
    reference = 0.0
    for item in range(len(cells.levels[0])):
        rows = np.flatnonzero(cells.codes[0] == item)
        configs = [config_of_cell[(cells.fixed_cell[r], *(cells.codes[g][r] for g in layout.sampled))] for r in rows]
        y, n = cells.successes[rows], cells.trials[rows]
        reference += y @ eta[configs] + log_integral(eta[configs], n, y.sum(), sigma)
    assert ours == pytest.approx(reference, rel=1e-11)


def test_density_gradient_matches_finite_differences(unbalanced):
    *_, model = unbalanced
    density = model.density
    rng = np.random.default_rng(5)
    x = density.initial_point + rng.uniform(-0.3, 0.3, density.n_dim)
    value, gradient = density.value_and_gradient(x)
    assert np.isfinite(value)
    step = 1e-5
    numeric = np.array([
        (density.value_and_gradient(x + step * e)[0] - density.value_and_gradient(x - step * e)[0]) / (2 * step)
        for e in np.eye(density.n_dim)
    ])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-5)
