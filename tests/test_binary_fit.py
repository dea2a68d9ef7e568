"""fit_bayes on 0/1 scores: the binary fast path by default, labelled latent-scale and observation-scale
results, the probit link, and the same posterior as Bambi's own model of the formula.

Equivalence criterion as for the Gaussian fast path (test_bayes_equivalence): for every SD, for
latent φ and for observation-scale φ, the 5 %, 50 % and 95 % quantiles of the two runs differ by
at most 4 × the combined Monte-Carlo standard error. Cases: balanced grids (logit and probit),
aggregated binomial counts (lme4's cbpp) and an unbalanced grid with missing cells.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrepro.bayes import fit_bayes
from bayesrepro.bayes.binary_layout import binary_layout
from bayesrepro.bayes.diagnostics import quantile_agreement
from bayesrepro.design import build_model_frame
from bayesrepro.frequentist.glmm import fit_glmm
from bayesrepro.reliability import phi_observed
from bayesrepro.simulate import binary_grid

DATA = Path(__file__).parent / "data"

SEEDS_FORMULA = "correct ~ system + (1|item) + (1|seed)"
GRID_FORMULA = "correct ~ system + (1|item) + (1|system:seed) + (1|prompt)"


def seeds_data(items=50, seeds=4, random_state=1):
    """Two systems, ``seeds`` seeds each (labelled apart), one prompt."""
    data = binary_grid(items=items, systems={"A": 0.0, "B": 0.4}, seeds=seeds, prompts=1, seed_sd=0.4,
                       random_state=random_state)
    data["seed"] = data["system"].astype(str) + data["seed"].astype(str)
    return data


# 1,000 draws a chain: with 500, nutpie 0.16.0 (the lower bound) left the seed SD's tail ESS at 340 with this seed
FIT_SETTINGS = dict(seed=3, draws=1000, tune=500)


@pytest.fixture(scope="module")
def fit():
    return fit_bayes(SEEDS_FORMULA, seeds_data(), **FIT_SETTINGS)


def test_zero_one_scores_take_the_binary_fast_path_by_default(fit):
    assert (fit.backend, fit.family, fit.scale) == ("fast", "bernoulli", "latent")
    post = fit.idata.posterior
    np.testing.assert_allclose(post["variance"].sel(component="Residual"), np.pi**2 / 3)
    variance = post["variance"]
    np.testing.assert_allclose(post["phi"], variance.sel(component="item") / variance.sum("component"))
    np.testing.assert_allclose(variance.sel(component="seed"), post["1|seed_sigma"] ** 2)
    assert post["1|seed"].shape[-1] == 8 and post["fixed"].shape[-1] == 2
    assert fit.diagnostics.converged, fit.diagnostics.line()
    assert list(fit.diagnostics.table.index) == ["1|item_sigma", "1|seed_sigma", "phi"]
    as_json = fit.to_dict()
    assert as_json["scale"] == "latent" and as_json["family"] == "bernoulli"
    assert "latent scale" in str(fit) and any("pi^2/3" in note for note in fit.notes)
    assert list(fit.prior_table["prior"]) == [
        "Normal(mu=0, sigma=1.5)", "Normal(mu=0, sigma=1)", "HalfNormal(sigma=2.55)", "HalfNormal(sigma=2.55)"]


def test_observation_scale_phi_is_phi_observed_of_every_draw(fit):
    """φ on the observation scale, per draw: ``reliability.phi_observed`` of the draw's latent components, with
    the draw's fixed coefficients giving the linear predictor of every fixed-design row (weighted by its trials)."""
    post = fit.idata.posterior
    cells = fit.frame.binomial()
    weights = np.bincount(cells.fixed_cell, weights=cells.trials)
    for chain, draw in [(0, 0), (1, 17), (3, 499)]:
        variance = post["variance"].isel(chain=chain, draw=draw)
        components = {name: float(variance.sel(component=name)) for name in ("item", "seed")}
        eta = cells.X_fixed @ post["fixed"].isel(chain=chain, draw=draw).values
        expected = phi_observed(components, "item", "logit", eta, weights)
        assert float(post["phi_observed"].isel(chain=chain, draw=draw)) == pytest.approx(expected, rel=1e-12)
    observed, latent = fit.phi(observed=True), fit.phi()
    assert (observed["scale"], latent["scale"]) == ("observed", "latent")
    assert 0 < observed["median"] < latent["median"]
    as_json = fit.to_dict()
    assert as_json["phi_observed"]["scale"] == "observed" and as_json["phi"]["scale"] == "latent"
    assert as_json["phi_observed"]["median"] == pytest.approx(observed["median"])
    assert "observation scale" in str(fit)


def test_probit_link_fits_the_probit_model():
    """The probit posterior is that of the probit model: its components sit at the probit ML fit's, not at the
    logit one's (about 1.6² times larger), and its latent residual is 1."""
    data = seeds_data(items=200, random_state=4)
    probit = fit_bayes(SEEDS_FORMULA, data, link="probit", seed=3, draws=500, tune=500)
    assert probit.diagnostics.converged, probit.diagnostics.line()
    post = probit.idata.posterior
    np.testing.assert_allclose(post["variance"].sel(component="Residual"), 1.0)
    assert any("latent (probit) scale" in note for note in probit.notes)
    ml = {link: fit_glmm(SEEDS_FORMULA, data, link=link) for link in ("logit", "probit")}
    item_sd = float(np.median(post["1|item_sigma"]))
    # 200 items: the posterior of the item SD has a relative SD of about 6 %
    assert item_sd == pytest.approx(np.sqrt(ml["probit"].variances["item"]), rel=0.15)
    assert item_sd < 0.75 * np.sqrt(ml["logit"].variances["item"])
    system = float(np.median(post["fixed"].sel(fixed_effect="system[B]")))
    assert system == pytest.approx(ml["probit"].beta[1], abs=2 * ml["probit"].se[1])
    assert float(np.median(post["phi_observed"])) == pytest.approx(ml["probit"].phi_observed("item"), abs=0.05)


def test_same_seed_gives_the_same_draws(fit):
    again = fit_bayes(SEEDS_FORMULA, seeds_data(), **FIT_SETTINGS)
    np.testing.assert_array_equal(again.idata.posterior["phi"], fit.idata.posterior["phi"])


def _agree(formula, data, draws, bambi_noncentered=True, link=None):
    """Both posteriors converged, and every SD, latent φ and observation-scale φ within 4 × MCSE."""
    common = dict(draws=draws, tune=draws, chains=4, allow_unconverged=True, effects=False, link=link)
    fast = fit_bayes(formula, data, backend="fast", seed=6, **common)
    bambi = fit_bayes(formula, data, backend="bambi", seed=5, bambi_noncentered=bambi_noncentered, **common)
    assert fast.diagnostics.converged, fast.diagnostics.line()
    assert bambi.diagnostics.r_hat_max <= 1.01 and bambi.diagnostics.ess_bulk_min >= 400, bambi.diagnostics.line()
    names = list(fast.diagnostics.table.index) + ["phi_observed"]
    table = quantile_agreement(bambi.idata, fast.idata, names, k=4.0)
    assert table["agree"].all(), table.to_string()
    return table


def test_fast_path_matches_bambi_on_a_small_binary_grid():
    _agree(SEEDS_FORMULA, seeds_data(), draws=500)


@pytest.mark.slow
@pytest.mark.parametrize("random_state", [2, 3])
def test_fast_path_matches_bambi_with_nested_seeds_and_prompts(random_state):
    data = binary_grid(items=40, systems={"A": 0.0, "B": 0.4}, seeds=4, prompts=4, seed_sd=0.4, prompt_sd=0.4,
                       random_state=random_state)
    _agree(GRID_FORMULA, data, draws=1000, bambi_noncentered=False)  # 32 rows per item: centred mixes


@pytest.mark.slow
def test_fast_path_matches_bambi_with_the_probit_link():
    _agree(SEEDS_FORMULA, seeds_data(), draws=1000, link="probit")


@pytest.mark.slow
def test_fast_path_matches_bambi_on_aggregated_binomial_counts():
    """lme4's cbpp: p(incidence, size), 56 herd-periods of 2 to 34 cattle, 15 herds; one grouping factor,
    so every herd is integrated out and only the fixed effects and the herd SD are sampled."""
    cbpp = pd.read_csv(DATA / "cbpp.csv.gz", dtype={"herd": str, "period": str})
    _agree("p(incidence, size) ~ period + (1|herd)", cbpp, draws=1000)


def unbalanced_grid(random_state=5):
    """A binary grid with a quarter of its rows missing at random and one prompt never given to a third of
    the items: many profiles, missing cells."""
    data = binary_grid(items=60, systems={"A": 0.0, "B": 0.4}, seeds=3, prompts=3, seed_sd=0.4, prompt_sd=0.4,
                       random_state=random_state)
    rng = np.random.default_rng(random_state)
    keep = rng.random(len(data)) > 0.25
    keep &= ~((data["prompt"] == "p3") & (data["item"].cat.codes % 3 == 0))
    return data[keep].reset_index(drop=True)


@pytest.mark.slow
def test_fast_path_matches_bambi_on_unbalanced_data():
    data = unbalanced_grid()
    frame = build_model_frame(GRID_FORMULA, data)
    cells = frame.binomial()
    layout = binary_layout(cells.successes, cells.trials, cells.fixed_cell, cells.codes,
                           [len(levels) for levels in cells.levels])
    assert layout.n_profiles > 20
    _agree(GRID_FORMULA, data, draws=1000, bambi_noncentered=False)
