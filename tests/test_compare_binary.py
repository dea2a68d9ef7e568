"""The side-by-side comparison of 0/1 scores: the binary GLMM by ML next to the posterior, on the latent scale."""

import json
import math

import numpy as np
import pytest

from bayesrepro.compare import compare
from bayesrepro.compare_binary import glmm_bootstrap
from bayesrepro.design import build_model_frame, resolve_family
from bayesrepro.frequentist.glmm import fit_glmm
from bayesrepro.frequentist.glrt import glrt
from bayesrepro.frequentist.binary_contrasts import binary_contrasts
from bayesrepro.simulate import binary_grid

FORMULA = "correct ~ system + (1|item) + (1|system:seed) + (1|prompt)"
H0 = "correct ~ 1 + (1|item) + (1|system:seed) + (1|prompt)"
FAST = dict(draws=400, tune=400, chains=2, seed=2, allow_unconverged=True)   # the Bayesian column is not under test here


@pytest.fixture(scope="module")
def grid():
    return binary_grid(items=120, seeds=3, prompts=3, random_state=8)


@pytest.fixture(scope="module")
def result(grid):
    return compare(FORMULA, grid, "item", n_boot=100, **FAST)


def test_the_frequentist_column_is_the_glmm_fit_on_the_latent_scale(grid, result):
    fit = fit_glmm(FORMULA, grid)
    assert result.method == "ML (Laplace)"
    assert result.variances == pytest.approx(fit.components, rel=1e-12)
    assert result.variances["Residual"] == pytest.approx(math.pi**2 / 3)
    assert result.phi["reml"] == pytest.approx(fit.phi("item"), rel=1e-12)
    posterior = result.estimates.query("quantity == 'variance' and component == 'Residual'").iloc[0]
    assert posterior["median"] == pytest.approx(math.pi**2 / 3)


def test_the_test_and_contrasts_are_the_binary_glrt_and_wald_contrasts(grid, result):
    test = glrt(H0, FORMULA, grid)
    assert result.tests[0]["chi2"] == pytest.approx(test.chi2, rel=1e-8)
    assert result.tests[0]["p"] == pytest.approx(test.p, rel=1e-8)
    frame = build_model_frame(FORMULA, grid)
    wald = binary_contrasts(fit_glmm(FORMULA, grid), frame, "system")
    assert result.contrasts["estimate"].to_numpy() == pytest.approx(wald["estimate"].to_numpy(), rel=1e-10)
    assert (result.contrasts["reference"] == "Wald z").all()
    # the posterior of the same logit-scale contrasts, close to the ML estimates on 120 items
    assert np.abs(result.contrasts["post_median"] - result.contrasts["estimate"]).max() < 2 * wald["std_error"].max()


def test_printed_and_json_forms_name_the_method_and_the_scale(result):
    text = str(result)
    assert "frequentist: ML (Laplace), 95 % parametric-bootstrap intervals (100 replicates)" in text
    assert "REML" not in text
    assert "reference chosen because binary GLMMs are read against chi2 here" in text
    assert any("leave-one-item-out LOO is not computed for binary models" in note for note in result.notes)
    payload = json.loads(result.to_json())
    assert payload["frequentist"]["method"] == "ML (Laplace)"
    assert payload["bayesian"]["family"] == "bernoulli"


def test_glmm_bootstrap_replicates_centre_on_the_fitted_components(grid):
    frame = build_model_frame(FORMULA, grid)
    fit = fit_glmm(frame)
    boot, unconverged, observed = glmm_bootstrap(fit, frame.binomial(), 60, np.random.default_rng(4), "item")
    assert unconverged == 0 and list(boot.columns) == list(fit.components)
    assert observed.shape == (60,) and np.all((0 < observed) & (observed < boot["item"] / boot.sum(axis=1)))
    # 120 items: the SD of an item-variance estimate is about var * sqrt(2/120) = 13 %; the mean of 60 within 3 SE/sqrt(60)
    assert boot["item"].mean() == pytest.approx(fit.variances["item"], rel=3 * 0.13 / math.sqrt(60) + 0.05)
    assert np.allclose(boot["Residual"], math.pi**2 / 3)


def test_gaussian_family_on_zero_one_scores_is_the_linear_probability_model(grid):
    linear = compare(FORMULA, grid, "item", n_boot=100, family="gaussian", loo=False, **FAST)
    assert linear.method == "REML" and linear.bayes.family == "gaussian"
    assert linear.variances["Residual"] < 0.25   # a variance of 0/1 scores, not π²/3


def test_cli_compare_reads_zero_one_scores_as_bernoulli(grid, tmp_path, capsys):
    from bayesrepro.cli import main

    path = tmp_path / "grid.csv"
    grid.to_csv(path, index=False)
    status = main(["compare", str(path), "--formula", FORMULA, "--bootstrap", "100", "--draws", "300", "--tune", "300",
                   "--chains", "2", "--allow-unconverged", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert status in (0, 3) and payload["frequentist"]["method"] == "ML (Laplace)"
    assert main(["compare", str(path), "--formula", FORMULA, "--link", "probit", "--family", "gaussian"]) == 2
    assert "--link probit applies to 0/1" in capsys.readouterr().err
    assert resolve_family(build_model_frame(FORMULA, grid), "auto").binary


def test_report_of_the_binary_grid_spec(grid, tmp_path, capsys):
    from bayesrepro.cli import main

    path, out = tmp_path / "grid.csv", tmp_path / "report.html"
    grid.to_csv(path, index=False)
    status = main(["report", str(path), "--spec", "binary_grid", "--out", str(out), "--bootstrap", "100",
                   "--draws", "300", "--tune", "300", "--chains", "2", "--allow-unconverged"])
    assert status in (0, 3), capsys.readouterr().err   # 3: written, with a warning that sampling did not converge
    page = out.read_text()
    assert "<th>ML (Laplace)</th>" in page and "phi (ML (Laplace))" in page
    assert "odds_ratio" in page and "probability_difference" in page
