"""The binary fast path's compiled density, logit and probit: the integral over the items against adaptive
quadrature, the whole log-likelihood against one integral per item, the gradient against finite differences."""

import numpy as np
import pandas as pd
import pytest
from scipy import integrate
from scipy.special import erfcx, expit, log_ndtr

from bayesrepro.bayes.binary_density import (LOGIT, MAX_GRID, dominant_marginal, dominant_marginal_probit,
                                             probit_terms, profile_grid)

from bayesrepro.bayes.binary_layout import binary_layout
from bayesrepro.bayes.binary_model import build_binary_model
from bayesrepro.bayes.binary_priors import binary_priors
from bayesrepro.design import build_model_frame


def log_integral(eta, trials, successes, sigma):
    """log ∫ exp(s u − Σ n log(1 + e^{η+u})) N(u; 0, σ²) du by adaptive quadrature around the peak."""

    def log_f(u):
        return successes * u - np.sum(trials * np.logaddexp(0.0, eta + u)) - 0.5 * (u / sigma) ** 2

    return _log_quadrature(log_f, sigma)


def log_integral_probit(eta, trials, successes, sigma):
    """log ∫ Π_j Φ(η_j + u)^y_j Φ(−η_j − u)^(n_j − y_j) N(u; 0, σ²) du by adaptive quadrature around the peak."""

    def log_f(u):
        return np.sum(successes * log_ndtr(eta + u) + (trials - successes) * log_ndtr(-eta - u)) - 0.5 * (u / sigma) ** 2

    return _log_quadrature(log_f, sigma)


def _log_quadrature(log_f, sigma):
    """log ∫ exp(log_f(u)) du − log(σ√(2π)), by adaptive quadrature around the peak of a fine grid."""
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


def probit_marginal(eta, log_sigma, trials, patterns, counts):
    """Probit: one profile, one pair per row of ``patterns`` (successes per configuration)."""
    hits = [np.flatnonzero(pattern > 0) for pattern in patterns]
    gradient = np.zeros(len(eta))
    value, d_log_sigma = dominant_marginal_probit(
        eta, log_sigma, np.array([0, len(eta)]), np.arange(len(eta)), trials, patterns.min(axis=0),
        patterns.max(axis=0), np.array([0, len(patterns)]), np.cumsum([0] + [len(h) for h in hits]),
        np.concatenate(hits).astype(np.int64), np.concatenate([p[h] for p, h in zip(patterns, hits)]), counts,
        gradient)
    return value, d_log_sigma, gradient


@pytest.mark.parametrize("t", [-1e4, -60.0, -37.5, -37.0, -36.5, -8.0, -1.0, 0.0, 0.5, 8.0, 37.0, 60.0, 1e4])
def test_probit_terms_are_accurate_in_both_tails(t):
    log_mu, log_not_mu, ratio, not_ratio = probit_terms(t)
    assert log_mu == pytest.approx(log_ndtr(t), rel=1e-13, abs=1e-300)
    assert log_not_mu == pytest.approx(log_ndtr(-t), rel=1e-13, abs=1e-300)
    # φ(t)/Φ(t) = √(2/π) / erfcx(−t/√2) (0 where φ(t) underflows and Φ(t) is 1)
    assert ratio == pytest.approx(np.sqrt(2 / np.pi) / erfcx(-t / np.sqrt(2)), rel=1e-13)
    assert not_ratio == pytest.approx(np.sqrt(2 / np.pi) / erfcx(t / np.sqrt(2)), rel=1e-13)


@pytest.mark.parametrize("trials_per_config, n_configs", [(1, 60), (5, 12), (40, 3)])
@pytest.mark.parametrize("sigma", [0.05, 0.3, 1.5, 4.0])
def test_each_probit_integral_matches_adaptive_quadrature(trials_per_config, n_configs, sigma):
    rng = np.random.default_rng(n_configs)
    eta = rng.normal(0.5, 0.8, n_configs)
    trials = np.full(n_configs, float(trials_per_config))
    patterns = np.vstack([np.zeros(n_configs), trials, rng.integers(0, trials_per_config + 1, (4, n_configs))])
    patterns[2, 0] = trials_per_config  # one success where none else has one, one miss in a full row
    patterns[3] = trials
    patterns[3, -1] = 0
    for k, pattern in enumerate(patterns):
        value, _, _ = probit_marginal(eta, np.log(sigma), trials, patterns[k : k + 1], np.ones(1))
        # each pattern alone, so the grid is that pattern's own; below, all on one shared grid
        assert value == pytest.approx(log_integral_probit(eta, trials, pattern, sigma), abs=1e-9), (k, sigma)
    shared, _, _ = probit_marginal(eta, np.log(sigma), trials, patterns, np.arange(1.0, len(patterns) + 1))
    reference = sum((k + 1) * log_integral_probit(eta, trials, pattern, sigma) for k, pattern in enumerate(patterns))
    assert shared == pytest.approx(reference, abs=1e-8)


def test_gradient_of_the_probit_integral_matches_finite_differences():
    rng = np.random.default_rng(4)
    eta = rng.normal(0.3, 1.0, 20)
    trials = rng.integers(1, 4, 20).astype(float)
    patterns = np.vstack([rng.binomial(trials.astype(int), 0.6) for _ in range(15)]).astype(float)
    counts = rng.integers(1, 30, len(patterns)).astype(float)
    value, d_log_sigma, gradient = probit_marginal(eta, 0.2, trials, patterns, counts)
    step = 1e-5
    for j in range(len(eta)):
        shift = np.zeros_like(eta)
        shift[j] = step
        numeric = (probit_marginal(eta + shift, 0.2, trials, patterns, counts)[0]
                   - probit_marginal(eta - shift, 0.2, trials, patterns, counts)[0]) / (2 * step)
        assert gradient[j] == pytest.approx(numeric, rel=1e-6, abs=1e-6)
    numeric = (probit_marginal(eta, 0.2 + step, trials, patterns, counts)[0]
               - probit_marginal(eta, 0.2 - step, trials, patterns, counts)[0]) / (2 * step)
    assert d_log_sigma == pytest.approx(numeric, rel=1e-6)


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
    grid = profile_grid(LOGIT, 0, np.log(200.0), eta, arrays["profile_start"], arrays["profile_config"],
                        arrays["profile_trials"], arrays["pair_start"], arrays["pair_successes"], np.zeros(0),
                        np.zeros(0))
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


@pytest.fixture(scope="module", params=["logit", "probit"])
def unbalanced(request):
    frame = build_model_frame(FORMULA, unbalanced_scores())
    cells = frame.binomial()
    layout = binary_layout(cells.successes, cells.trials, cells.fixed_cell, cells.codes, [len(l) for l in cells.levels],
                           request.param)
    model = build_binary_model(layout, cells.X_fixed, binary_priors(frame), frame.group_names, cells.levels)
    return frame, cells, layout, model


def test_missing_rows_give_several_profiles_and_the_counts_add_up(unbalanced):
    frame, cells, layout, _ = unbalanced
    assert layout.n_profiles > 1
    assert layout.pair_count.sum() == frame.groups[0].n_levels
    assert layout.config_successes.sum() == frame.y.sum()
    totals = pd.Series(frame.y).groupby(frame.groups[0].codes).sum().to_numpy()
    np.testing.assert_array_equal(layout.pair_successes[layout.level_pair], totals)


def _item_cells(cells, layout):
    """Each item's configurations, successes and trials, from the cells directly."""
    config_of_cell = {(layout.config_fixed[k], *layout.config_codes[:, k]): k for k in range(layout.n_configs)}
    for item in range(len(cells.levels[0])):
        rows = np.flatnonzero(cells.codes[0] == item)
        configs = [config_of_cell[(cells.fixed_cell[r], *(cells.codes[g][r] for g in layout.sampled))] for r in rows]
        yield item, np.array(configs), cells.successes[rows], cells.trials[rows]


def test_probit_patterns_hold_every_items_successes():
    frame = build_model_frame(FORMULA, unbalanced_scores())
    cells = frame.binomial()
    layout = binary_layout(cells.successes, cells.trials, cells.fixed_cell, cells.codes, [len(l) for l in cells.levels],
                           "probit")
    assert layout.pair_count.sum() == frame.groups[0].n_levels
    for item, configs, y, n in _item_cells(cells, layout):
        k = layout.level_pair[item]
        profile = np.searchsorted(layout.pair_start, k, side="right") - 1
        entries = np.arange(layout.profile_start[profile], layout.profile_start[profile + 1])
        stored = np.zeros(layout.profile_start[-1])
        span = slice(layout.pattern_start[k], layout.pattern_start[k + 1])
        stored[layout.pattern_entry[span]] = layout.pattern_successes[span]
        by_config = dict(zip(layout.profile_config[entries], stored[entries]))
        assert [by_config[c] for c in configs] == list(y)
        assert np.all(layout.profile_low[entries] <= stored[entries])
        assert np.all(stored[entries] <= layout.profile_high[entries])


def test_log_likelihood_equals_one_integral_per_item(unbalanced):
    """The density's log-likelihood equals Σ_items log ∫ Π_rows p(y | η + u) N(u; 0, σ²) du (logit: Σ_k Y_k η_k +
    Σ_pairs count log I_s; probit: Σ_pairs count log I)."""
    frame, cells, layout, _ = unbalanced
    rng = np.random.default_rng(11)
    eta = rng.normal(0.2, 0.7, layout.n_configs)
    sigma = 1.3
    gradient = np.zeros(layout.n_configs)
    if layout.link == "logit":
        value, _ = dominant_marginal(eta, np.log(sigma), layout.profile_start, layout.profile_config,
                                     layout.profile_trials, layout.pair_start, layout.pair_successes,
                                     layout.pair_count, gradient)
        ours = layout.config_successes @ eta + value
    else:
        ours, _ = dominant_marginal_probit(
            eta, np.log(sigma), layout.profile_start, layout.profile_config, layout.profile_trials,
            layout.profile_low, layout.profile_high, layout.pair_start, layout.pattern_start, layout.pattern_entry,
            layout.pattern_successes, layout.pair_count, gradient)
    reference = 0.0
    for _, configs, y, n in _item_cells(cells, layout):
        if layout.link == "logit":
            reference += y @ eta[configs] + log_integral(eta[configs], n, y.sum(), sigma)
        else:
            reference += log_integral_probit(eta[configs], n, y, sigma)
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


def test_probit_density_is_not_the_logit_one():
    """At the same point the two links' log-likelihoods differ, each by its own link's formula."""
    frame = build_model_frame(FORMULA, unbalanced_scores())
    cells = frame.binomial()
    sizes = [len(l) for l in cells.levels]
    models = {link: build_binary_model(binary_layout(cells.successes, cells.trials, cells.fixed_cell, cells.codes,
                                                     sizes, link),
                                       cells.X_fixed, binary_priors(frame), frame.group_names, cells.levels)
              for link in ("logit", "probit")}
    p, n_groups = len(frame.fixed_names), len(frame.group_names)
    x = np.zeros(models["logit"].density.n_dim)
    x[:p] = np.linspace(0.9, -0.6, p)        # fixed coefficients of the centred design
    x[p : p + n_groups] = np.log(1e-4)       # every σ tiny: the likelihood is that of η = Xβ alone
    values = {link: model.density.value_and_gradient(x)[0] for link, model in models.items()}
    assert abs(values["logit"] - values["probit"]) > 1.0
    # the priors are the same; the difference is that of the two links' log-likelihoods at η = Xβ
    X = np.asarray(cells.X_fixed)[cells.fixed_cell] - binary_priors(frame).x_means
    eta = X @ x[:p]
    y, n = cells.successes, cells.trials
    logit = np.sum(y * eta - n * np.logaddexp(0.0, eta))
    probit = np.sum(y * log_ndtr(eta) + (n - y) * log_ndtr(-eta))
    assert values["probit"] - values["logit"] == pytest.approx(probit - logit, abs=1e-3)
