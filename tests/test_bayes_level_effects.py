"""Level effects and predictions of the Bayesian engine: exact conditionals, block-wise summaries, Bambi, errors.

References: the dense Gaussian conditional of the effects given the variances (the BLUP and its covariance), the
exact one-dimensional conditional of a binary item's effect by quadrature, ArviZ-equal diagnostics (the scalar
``convergence`` functions), and Bambi's own posterior of the same model.
"""

import numpy as np
import pandas as pd
import pytest
from scipy.special import expit, log_expit

import bayesrepro as br
from bayesrepro.bayes import fit_bayes
from bayesrepro.bayes.convergence import ess_bulk, ess_bulk_columns, r_hat, r_hat_columns
from bayesrepro.bayes.effects import draw_effects
from bayesrepro.bayes.marginal import marginal_stats
from bayesrepro.bayes.priors import default_priors
from bayesrepro.datasets import load_dataset
from bayesrepro.design import build_model_frame
from bayesrepro.errors import BayesreproError
from conftest import gaussian_cases

TER = "ter ~ system + (1|sentence_id)"


def test_column_diagnostics_equal_the_scalar_ones():
    rng = np.random.default_rng(0)
    for shape in [(4, 200, 12), (2, 9, 5), (3, 11, 4)]:
        x = rng.standard_normal(shape)
        x[..., 1] = np.cumsum(x[..., 1], axis=1)            # a random walk: R-hat far above 1, tiny ESS
        x[..., 2] += np.arange(shape[0])[:, None]           # chains that disagree
        x[..., 3] = 2.0                                     # constant: R-hat NaN, ESS the number of draws
        if shape[2] > 4:
            x[..., 4] = np.round(x[..., 4], 1)              # ties: average ranks
        np.testing.assert_allclose(r_hat_columns(x), [r_hat(x[..., j]) for j in range(shape[2])], rtol=1e-12)
        np.testing.assert_allclose(ess_bulk_columns(x), [ess_bulk(x[..., j]) for j in range(shape[2])], rtol=1e-10)


@pytest.mark.parametrize("case", range(3))
def test_item_effects_do_not_depend_on_how_they_are_split_into_blocks(case):
    formula, data = gaussian_cases()[case]
    frame = build_model_frame(formula, data)
    priors = default_priors(frame)
    stats = marginal_stats(frame, priors)
    sd = {g.name: 0.05 * (k + 1) for k, g in enumerate(frame.groups)} | {"Residual": 0.1}
    n = 50
    effects = draw_effects(stats, priors.fixed_sigma**2, np.full(n, sd["Residual"]),
                           {k: np.full(n, v) for k, v in sd.items()}, np.random.default_rng(0))
    whole = effects.dominant.draw()
    for block_values in (16 * n, 48 * n):          # one and three runs of 16 items per block
        pieced = np.full_like(whole, np.nan)
        for items, values in effects.dominant.blocks(block_values):
            assert values.shape == (n, len(items)) and len(items) <= block_values // n
            pieced[:, items] = values
        np.testing.assert_allclose(pieced, whole, rtol=1e-10, atol=1e-12)


def _binary_items(link):
    """Twelve items scored in three configurations (1 or 2 trials each), with known η and σ."""
    from bayesrepro.bayes.binary_layout import binary_layout

    rng = np.random.default_rng(4)
    items = np.repeat(np.arange(12), 3)
    config = np.tile(np.arange(3), 12)
    trials = np.where(items % 2 == 0, 1.0, 2.0)
    successes = rng.binomial(trials.astype(int), 0.6).astype(float)
    layout = binary_layout(successes, trials, config, [items, config], [12, 3], link)
    return layout, items, config, trials, successes


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_binary_item_draws_follow_their_exact_conditional(link):
    from scipy.stats import norm

    from bayesrepro.bayes.binary_density import LINK_CODES, dominant_effect_draws

    layout, items, config, trials, successes = _binary_items(link)
    eta_config = np.array([-0.4, 0.3, 1.0])
    sigma, n = 1.3, 20_000
    eta = np.tile(eta_config[layout.config_codes[0]], (n, 1))   # configurations: (fixed cell, sampled level)
    pair_profile = np.repeat(np.arange(layout.n_profiles), np.diff(layout.pair_start)).astype(np.int64)
    order = np.argsort(layout.level_pair, kind="stable")
    draws = dominant_effect_draws(
        LINK_CODES[link], eta, np.full(n, np.log(sigma)), layout.profile_start, layout.profile_config,
        layout.profile_trials, layout.profile_low, layout.profile_high, layout.pair_start, layout.pair_successes,
        layout.pattern_start, layout.pattern_entry, layout.pattern_successes, pair_profile,
        np.ascontiguousarray(layout.level_pair[order]), 11)
    grid = np.linspace(-10, 10, 20_001)
    for column, item in enumerate(order):
        rows = items == item
        t = eta_config[config[rows]][None, :] + grid[:, None]
        log_mu, log_not_mu = (log_expit(t), log_expit(-t)) if link == "logit" else (norm.logcdf(t), norm.logsf(t))
        log_density = (-0.5 * grid**2 / sigma**2
                       + (successes[rows] * log_mu + (trials[rows] - successes[rows]) * log_not_mu).sum(1))
        weight = np.exp(log_density - log_density.max())
        weight /= weight.sum()
        mean = weight @ grid
        sd = np.sqrt(weight @ (grid - mean) ** 2)
        # 5 Monte-Carlo standard errors of a mean and of an SD from n independent draws
        assert abs(draws[:, column].mean() - mean) < 5 * sd / np.sqrt(n), item
        assert abs(draws[:, column].std() - sd) < 5 * sd / np.sqrt(2 * n), item


class _FixedDraws:
    """A stand-in for ``draws.Draws`` holding one posterior point repeated n times."""

    def __init__(self, values: dict, n: int):
        self.arrays = {name: np.broadcast_to(np.asarray(v, dtype=float), (1, n, *np.shape(v))).copy()
                       for name, v in values.items()}
        self.blocks = {}
        self.shape = (1, n)

    def __getitem__(self, name):
        return self.arrays[name]

    def add_level_blocks(self, name, blocks, dims, coords):
        self.blocks[name] = blocks


def test_collapsed_slope_effects_follow_the_gaussian_conditional():
    from bayesrepro.bayes.collapsed_effects import add_conditional_effects
    from bayesrepro.bayes.slope_density import effect_variable
    from bayesrepro.bayes.term_model import term_layouts
    from bayesrepro.design import model_frame, parse_formula

    rng = np.random.default_rng(2)
    g, h = np.repeat(np.arange(6), 8), np.tile(np.arange(4), 12)
    x = rng.normal(size=48)
    y = 1.0 + 0.5 * x + rng.normal(0, 0.6, 6)[g] + rng.normal(0, 0.4, 6)[g] * x + rng.normal(0, 0.3, 4)[h] \
        + rng.normal(0, 0.5, 48)
    data = pd.DataFrame({"y": y, "x": x, "g": [f"g{k}" for k in g], "h": [f"h{k}" for k in h]})
    frame = model_frame(parse_formula("y ~ x + (1 + x | g) + (1 | h)", slopes=True), data)
    terms = term_layouts(frame)
    beta, sigma, sd_g, corr, sd_h, n = np.array([0.9, 0.4]), 0.5, np.array([0.6, 0.4]), 0.3, np.array([0.3]), 20_000
    draws = _FixedDraws({"fixed": beta, "sigma": sigma, "sd|g": sd_g, "corr|g": [corr], "sd|h": sd_h}, n)
    add_conditional_effects(draws, frame, terms, seed=3)
    # dense reference: b ~ N(0, Σ_b) a priori, b | rest ~ N(C Z'r / σ², C), C = (Z'Z / σ² + Σ_b⁻¹)⁻¹
    cov_g = np.diag(sd_g) @ np.array([[1, corr], [corr, 1]]) @ np.diag(sd_g)
    Z = np.hstack([np.einsum("ni,nl->nli", terms[0].matrix, np.eye(6)[terms[0].codes]).reshape(48, 12),
                   np.eye(4)[terms[1].codes]])
    prior = np.zeros((16, 16))
    prior[:12, :12] = np.kron(np.eye(6), cov_g)
    prior[12:, 12:] = np.eye(4) * sd_h[0] ** 2
    C = np.linalg.inv(Z.T @ Z / sigma**2 + np.linalg.inv(prior))
    mean = C @ Z.T @ (y - np.asarray(frame.X) @ beta) / sigma**2
    sds = np.sqrt(np.diag(C))
    for t, (term, offset) in enumerate(zip(terms, (0, 12))):
        got = np.full((n, len(term.levels), term.nc), np.nan)
        for levels, values in draws.blocks[effect_variable(term.group)]():
            got[:, levels] = values[0]
        got = got.reshape(n, -1)
        width = got.shape[1]
        assert np.all(np.abs(got.mean(0) - mean[offset:offset + width]) < 5 * sds[offset:offset + width] / np.sqrt(n))
        assert np.all(np.abs(got.std(0) - sds[offset:offset + width]) < 5 * sds[offset:offset + width] / np.sqrt(2 * n))


@pytest.fixture(scope="module")
def ter_posteriors():
    data = load_dataset("kreutzer_ter")
    data = data[data["sentence_id"].isin(data["sentence_id"].cat.categories[:60])]
    common = dict(draws=500, tune=500, chains=4, allow_unconverged=True, target_accept=0.9)
    bambi = fit_bayes(TER, data, backend="bambi", seed=5, bambi_noncentered=False, **common)
    fast = fit_bayes(TER, data, backend="fast", seed=6, **common)
    return data, bambi, fast


def test_fast_level_effects_match_bambis_posterior(ter_posteriors):
    _, bambi, fast = ter_posteriors
    ours, theirs = fast.level_effects(prob=0.9), bambi.level_effects(prob=0.9)
    assert list(ours["level"]) == list(theirs["level"]) and len(ours) == 60
    assert (ours["term"] == "(Intercept)").all() and (ours["group"] == "sentence_id").all()
    # the median's Monte-Carlo SE is about 1.25 SD / √ESS; an SD's about SD / √(2 ESS); 4.5 combined SEs over
    # 60 levels leave a chance below 0.05 % that an honest difference fails
    mcse = np.hypot(1.25 * ours["sd"] / np.sqrt(ours["ess_bulk"]), 1.25 * theirs["sd"] / np.sqrt(theirs["ess_bulk"]))
    assert np.all(np.abs(ours["estimate"] - theirs["estimate"]) < 4.5 * mcse)
    sd_mcse = ours["sd"] * np.sqrt(1 / (2 * ours["ess_bulk"]) + 1 / (2 * theirs["ess_bulk"]))
    assert np.all(np.abs(ours["sd"] - theirs["sd"]) < 4.5 * sd_mcse)
    assert (ours["r_hat"] < 1.02).all() and (ours["ess_bulk"] > 400).all()
    assert np.all(ours["low"] < ours["estimate"]) and np.all(ours["estimate"] < ours["high"])


def test_level_effect_draws_are_the_summarised_draws(ter_posteriors):
    _, _, fast = ter_posteriors
    values, labels = fast.level_effect_draws("sentence_id")
    table = fast.level_effects("sentence_id", prob=0.8)
    assert values.shape == (2000, 60) and labels == list(table["level"])
    np.testing.assert_allclose(np.median(values, axis=0), table["estimate"])
    np.testing.assert_allclose(np.quantile(values, 0.1, axis=0), table["low"])


def test_predictions_add_the_drawn_effects_and_new_levels_their_population(ter_posteriors):
    data, _, fast = ter_posteriors
    mean = fast.draws["fixed"].reshape(-1, 3) @ fast.frame.design_rows(data.reset_index(drop=True)).T
    values, _ = fast.level_effect_draws("sentence_id")
    index = {label: k for k, label in enumerate(fast.level_effects()["level"])}
    mean += values[:, [index[str(v)] for v in data["sentence_id"]]]
    from bayesrepro.bayes.prediction import predictive_draws

    np.testing.assert_allclose(predictive_draws(fast, None, "mean"), mean, rtol=1e-10, atol=1e-12)
    new = data.iloc[:400].assign(sentence_id="unseen sentence")
    draws = predictive_draws(fast, new, "mean", seed=1)
    # one population draw per new level and posterior draw, shared by its rows: the spread of the rows' means
    # across draws is that of the fixed part plus σ_item²
    fixed = fast.draws["fixed"].reshape(-1, 3) @ fast.frame.design_rows(new.reset_index(drop=True)).T
    np.testing.assert_allclose(draws - draws[:, :1], fixed - fixed[:, :1], atol=1e-12)
    expected = np.var(fixed[:, 0]) + np.mean(fast.draws["1|sentence_id_sigma"] ** 2)
    assert np.var(draws[:, 0]) == pytest.approx(expected, rel=0.15)   # 2,000 draws: the variance's SE is 3 %
    response = predictive_draws(fast, None, "response", max_draws=100)
    assert response.shape == (100, len(data))


@pytest.fixture(scope="module")
def small_posterior():
    rng = np.random.default_rng(7)
    item, system = np.repeat(np.arange(30), 4), np.tile(np.arange(4), 30)
    data = pd.DataFrame({"item": [f"i{k}" for k in item], "system": [f"s{k}" for k in system]})
    data["correct"] = (rng.random(120) < expit(rng.normal(0, 1, 30)[item] + 0.3 * system)).astype(int)
    data["score"] = rng.normal(0, 1, 30)[item] + 0.2 * system + rng.normal(0, 0.5, 120)
    return data, br.Model("score ~ system + (1|item)", data).sample(draws=200, tune=200, chains=2, seed=1,
                                                                    allow_unconverged=True)


def test_bad_arguments_are_refused_in_one_line(small_posterior):
    data, posterior = small_posterior
    with pytest.raises(BayesreproError, match="^group='rater' is not a grouping factor") as error:
        posterior.level_effects(group="rater")
    assert "\n" not in str(error.value)
    with pytest.raises(BayesreproError, match="column 'system' has level 's9', unseen in the fit"):
        posterior.predict(data.assign(system="s9"))
    with pytest.raises(BayesreproError, match="lack column 'item'"):
        posterior.predict(data.drop(columns="item"))
    with pytest.raises(BayesreproError, match="term='x' is not a term"):
        posterior.level_effect_draws("item", term="x")


def test_binary_fast_path_gives_every_factors_levels(small_posterior):
    data, _ = small_posterior
    posterior = br.Model("correct ~ 1 + (1|item) + (1|system)", data).sample(draws=200, tune=200, chains=2, seed=1,
                                                                             allow_unconverged=True)
    table = posterior.level_effects(prob=0.9)
    assert list(table.groupby("group", sort=False).size().items()) == [("item", 30), ("system", 4)]
    # the integrated items' effects: an item's latent effect rises with its successes, up to noise within a tie
    items = table[table["group"] == "item"].set_index("level")["estimate"]
    successes = data.groupby("item")["correct"].sum()
    assert np.corrcoef(items[successes.index], successes)[0, 1] > 0.9
    probabilities = posterior.predict(data)
    assert probabilities["median"].between(0, 1).all() and len(probabilities) == len(data)
    outcomes = posterior.predictive_draws(data, max_draws=50)
    assert outcomes.shape == (50, len(data)) and set(np.unique(outcomes)) <= {0.0, 1.0}


def test_slope_predictions_add_both_columns_and_draw_new_levels_from_the_population():
    from bayesrepro.bayes.prediction import predictive_draws
    from bayesrepro.bayes.term_layout import term_covariances

    rng = np.random.default_rng(5)
    g = np.repeat(np.arange(8), 10)
    x = rng.normal(size=80)
    y = 1 + 0.5 * x + rng.normal(0, 0.7, 8)[g] + rng.normal(0, 0.4, 8)[g] * x + rng.normal(0, 0.5, 80)
    data = pd.DataFrame({"y": y, "x": x, "g": [f"g{k}" for k in g]})
    posterior = br.Model("y ~ x + (1 + x | g)", data).sample(draws=300, tune=300, chains=2, seed=2,
                                                             allow_unconverged=True)
    fit = posterior.bayes
    intercepts, labels = posterior.level_effect_draws("g")
    slopes, _ = posterior.level_effect_draws("g", term="x")
    codes = [labels.index(v) for v in data["g"]]
    fixed = fit.draws["fixed"].reshape(-1, 2)
    expected = fixed[:, :1] + fixed[:, 1:] * x + intercepts[:, codes] + slopes[:, codes] * x
    np.testing.assert_allclose(predictive_draws(fit, None, "mean"), expected, rtol=1e-10, atol=1e-12)
    # a new level: per draw, x'β plus z'b with b ~ N(0, Σ) of that draw, so the rows' variance across draws is
    # var(x'β) + E[z'Σz], z = (1, x)
    new = pd.DataFrame({"x": [-1.5, 0.0, 2.0], "g": "new"})
    draws = predictive_draws(fit, new, "mean", seed=3)
    covariance = term_covariances(fit.draws, fit.terms[0]).reshape(-1, 2, 2)
    z = np.column_stack([np.ones(3), new["x"]])
    # no covariance term: b is drawn independently of β given the SDs and correlation
    spread = np.var(fixed @ z.T, axis=0) + np.einsum("ri,dij,rj->dr", z, covariance, z).mean(0)
    np.testing.assert_allclose(np.var(draws, axis=0), spread, rtol=0.2)   # 600 draws: the variances' SE is ~6 %
