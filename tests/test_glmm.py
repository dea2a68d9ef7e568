"""The binomial GLMM engine: exact gradient, quadrature, GLMs, elimination paths and one-line errors."""

import numpy as np
import pandas as pd
import pytest
import scipy.integrate
import statsmodels.api as sm

import bayesrepro.frequentist.cell_products as cell_products
from bayesrepro.design import build_model_frame
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.glmm import fit_glmm
from bayesrepro.frequentist.laplace import LaplaceDeviance
from bayesrepro.frequentist.quadrature import QuadratureDeviance
from bayesrepro.links import get_link
from bayesrepro.runtime import numerical_work
from bayesrepro.simulate import binary_grid


@pytest.fixture(scope="module")
def grid():
    data = binary_grid(items=80, seeds=3, prompts=3, random_state=7)
    data["length"] = np.random.default_rng(7).normal(size=len(data))
    return data


@pytest.mark.parametrize("link", ["logit", "probit"])
def test_exact_gradient_matches_central_differences(grid, link):
    frame = build_model_frame("correct ~ system + length + (1|item) + (1|system:seed) + (1|item:prompt)", grid)
    model = LaplaceDeviance(frame.binomial(), get_link(link))
    theta, beta = np.array([1.1, 0.3, 0.4]), np.array([0.3, 0.2, 0.4, -0.1])
    with numerical_work():
        point = model.at(theta, beta)
    h = 1e-6

    def central(shift_theta, shift_beta):
        return (model.at(theta + shift_theta, beta + shift_beta, point.u).deviance
                - model.at(theta - shift_theta, beta - shift_beta, point.u).deviance) / (2 * h)

    with numerical_work():
        numeric_theta = [central(h * e, 0 * beta) for e in np.eye(3)]
        numeric_beta = [central(0 * theta, h * e) for e in np.eye(4)]
    # central differences of a criterion near 1e3 are good to about 1e-6 relative
    np.testing.assert_allclose(point.gradient_theta, numeric_theta, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(point.gradient_beta, numeric_beta, rtol=1e-5, atol=1e-4)


def test_quadrature_converges_to_the_integral_and_one_node_is_laplace():
    data = pd.read_csv("tests/data/cbpp.csv.gz", dtype={"herd": str, "period": str})
    frame = build_model_frame("p(incidence, size) ~ period + (1|herd)", data)
    cells = frame.binomial()
    laplace = LaplaceDeviance(cells, get_link("logit"))
    theta, beta = np.array([0.65]), np.array([-1.4, -1.0, -1.1, -1.6])
    params = np.concatenate([theta, beta])
    assert QuadratureDeviance(laplace, 1)(params) == pytest.approx(laplace.at(theta, beta).deviance, abs=1e-9)
    # the likelihood by brute-force integration over each herd's effect
    link = get_link("logit")
    total = cells.log_coefficient
    for level in range(cells.sizes[0]):
        rows = cells.codes[0] == level
        y, n, eta = cells.successes[rows], cells.trials[rows], cells.X[rows] @ beta

        def integrand(u):
            return np.exp(link.loglik_kernel(y, n, eta + theta[0] * u).sum() - 0.5 * u * u) / np.sqrt(2 * np.pi)

        total += np.log(scipy.integrate.quad(integrand, -12, 12, epsabs=0, epsrel=1e-12)[0])
    assert QuadratureDeviance(laplace, 25)(params) == pytest.approx(-2 * total, abs=1e-8)


def test_model_without_random_effects_is_the_glm(grid):
    fit = fit_glmm("correct ~ system + length", grid, family="bernoulli")
    X = sm.add_constant(pd.get_dummies(grid["system"], drop_first=True).astype(float).assign(length=grid["length"]))
    reference = sm.GLM(grid["correct"], X, family=sm.families.Binomial()).fit()
    assert fit.loglik == pytest.approx(reference.llf, abs=1e-8)
    np.testing.assert_allclose(fit.beta, reference.params, rtol=1e-7)
    np.testing.assert_allclose(fit.se, reference.bse, rtol=1e-5)


def test_sparse_coupling_of_two_large_factors_gives_the_dense_answer(grid, monkeypatch):
    formula = "correct ~ system + (1|item) + (1|item:prompt) + (1|system:seed)"
    dense = fit_glmm(formula, grid)
    monkeypatch.setattr(cell_products, "DENSE_COUPLING", 10)
    sparse = fit_glmm(formula, grid)
    assert sparse.loglik == pytest.approx(dense.loglik, abs=1e-8)
    assert sparse.variances == pytest.approx(dense.variances, rel=1e-7)


def test_a_component_without_variance_is_reported_at_the_boundary():
    data = binary_grid(items=150, seeds=3, prompts=2, seed_sd=0.0, prompt_sd=0.0, random_state=3)
    data["batch"] = (data["item"].cat.codes % 4).astype(str)   # a factor that explains nothing
    fit = fit_glmm("correct ~ system + (1|item) + (1|batch)", data)
    assert fit.converged
    if fit.variances["batch"] == 0:
        assert fit.boundary == ["batch"]
    else:
        assert fit.variances["batch"] < 0.01


def test_separated_outcomes_are_refused_in_one_line(grid):
    data = grid.copy()
    data.loc[data["system"] == "C", "correct"] = 1
    with pytest.raises(BayesreproError, match=r"separate the successes .* \(the row of system\[C\]: only successes\)"):
        fit_glmm("correct ~ system + (1|item)", data)


def test_quadrature_needs_a_single_grouping_factor(grid):
    with pytest.raises(BayesreproError, match="one grouping factor and this model has 2"):
        fit_glmm("correct ~ system + (1|item) + (1|prompt)", grid, nagq=5)


def test_gaussian_scores_are_not_fitted_as_binary():
    data = pd.DataFrame({"item": list("aabbcc"), "score": [0.2, 0.4, 0.5, 0.9, 0.1, 0.3]})
    with pytest.raises(BayesreproError, match="modelled as Gaussian; fit it with fit_lmm"):
        fit_glmm("score ~ 1 + (1|item)", data)


def test_observation_and_latent_phi_are_both_reported(grid):
    fit = fit_glmm("correct ~ system + (1|item) + (1|system:seed)", grid)
    latent = fit.variances["item"] / (sum(fit.variances.values()) + np.pi**2 / 3)
    assert fit.phi("item") == pytest.approx(latent)
    assert 0 < fit.phi_observed("item") < fit.phi("item")   # 0/1 scores carry less of the item variance than the latent scale
