"""Reliability of binary scores on the latent and on the observation scale."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal, norm

from bayesrepro.errors import BayesreproError
from bayesrepro.reliability import RESIDUAL, d_study, latent_variances, phi, phi_observed

COMPONENTS = {"item": 1.5, "prompt": 0.2, "system:seed": 0.05}


def test_latent_residual_is_that_of_the_link():
    assert latent_variances(COMPONENTS, "logit")[RESIDUAL] == pytest.approx(np.pi**2 / 3)
    assert latent_variances(COMPONENTS, "probit")[RESIDUAL] == 1.0
    assert phi(latent_variances(COMPONENTS), "item") == pytest.approx(1.5 / (1.75 + np.pi**2 / 3))


def test_latent_d_study_averages_the_latent_residual_over_every_facet():
    study = d_study(latent_variances(COMPONENTS), "item", {"prompt": 4, "seed": 5})
    # system:seed is averaged over 5 seeds, the residual (involving every facet) over 4 × 5 runs
    error = 0.2 / 4 + 0.05 / 5 + (np.pi**2 / 3) / 20
    assert study["phi"] == pytest.approx(1.5 / (1.5 + error))


def test_latent_components_take_posterior_draws():
    draws = {"item": np.array([1.0, 2.0]), "prompt": np.array([0.1, 0.3])}
    np.testing.assert_allclose(phi(latent_variances(draws, "probit"), "item"), [1.0 / 2.1, 2.0 / 3.3])
    with pytest.raises(BayesreproError, match="no 'Residual' of their own"):
        latent_variances({"item": 1.0, RESIDUAL: 1.0})


@pytest.mark.parametrize("eta", [0.0, 0.9, -1.7])
def test_observed_phi_of_a_probit_model_is_the_tetrachoric_relation(eta):
    # two scores share the object's effect: their latent correlation is σ²_o / (1 + σ²_total)
    total = sum(COMPONENTS.values())
    a, rho = eta / np.sqrt(1 + total), COMPONENTS["item"] / (1 + total)
    both = multivariate_normal(mean=[0, 0], cov=[[1, rho], [rho, 1]]).cdf([a, a])
    p = norm.cdf(a)
    assert phi_observed(COMPONENTS, "item", "probit", eta) == pytest.approx((both - p * p) / (p * (1 - p)), rel=1e-6)


def test_observed_phi_of_a_logit_model_matches_simulated_scores():
    rng = np.random.default_rng(5)
    objects, pairs = 200_000, 2
    others = sum(v for k, v in COMPONENTS.items() if k != "item")
    b = rng.normal(0, np.sqrt(COMPONENTS["item"]), objects)[:, None]
    eta = 0.4 + b + rng.normal(0, np.sqrt(others), (objects, pairs))
    scores = rng.random((objects, pairs)) < 1 / (1 + np.exp(-eta))
    simulated = np.corrcoef(scores[:, 0], scores[:, 1])[0, 1]
    # the Monte Carlo SE of a correlation near 0.25 from 2e5 pairs is about 0.002
    assert phi_observed(COMPONENTS, "item", "logit", 0.4) == pytest.approx(simulated, abs=0.008)


def test_observed_phi_takes_draws_and_weighs_the_fixed_cells():
    draws = {"item": np.array([1.0, 2.0]), "prompt": np.array([0.1, 0.3])}
    both = phi_observed(draws, "item", "logit", eta=np.array([0.0, 1.0]), weights=[1, 3])
    for k in range(2):
        single = {name: value[k] for name, value in draws.items()}
        assert both[k] == pytest.approx(phi_observed(single, "item", "logit", [0.0, 1.0], [1, 3]))
    # a pooled ratio, not a mean of the cells' φ
    equal = phi_observed({"item": 1.0}, "item", "logit", [0.0, 0.0], [1, 3])
    assert equal == pytest.approx(phi_observed({"item": 1.0}, "item", "logit", 0.0))
