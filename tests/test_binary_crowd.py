"""0/1 scores of a crowd design (items × raters, crossed, sparse): crossed factors beyond the cell engine's
coupling are fitted by the sparse Laplace fit of the slope models, to the same optimum as the cell engine."""

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import bayesrepro as br
from bayesrepro.frequentist import cell_products
from bayesrepro.simulate import simulate_crowd

FORMULA = "score ~ 1 + (1|item) + (1|rater)"
REPO = Path(__file__).parent.parent


@pytest.fixture(scope="module")
def crowd():
    scores, _ = simulate_crowd(3000, 1000, 300, binary=True, random_state=5)
    return scores


def test_crossed_factors_beyond_the_cell_engine_reach_its_optimum_on_the_sparse_core(crowd, monkeypatch):
    cells = br.Model(FORMULA, crowd, family="bernoulli", object="item").fit()
    monkeypatch.setattr(cell_products, "COUPLING_LIMIT", 1000)   # as if the factors were large
    sparse = br.Model(FORMULA, crowd, family="bernoulli", object="item").fit()
    assert sparse.converged and cells.converged
    assert sparse.to_dict()["loglik"] >= cells.to_dict()["loglik"] - 1e-6
    assert sparse.to_dict()["loglik"] - cells.to_dict()["loglik"] < 1e-4
    sd = lambda fit: np.sqrt(fit.components["variance"].drop("Residual").to_numpy())
    np.testing.assert_allclose(sd(sparse), sd(cells), rtol=2e-3)
    np.testing.assert_allclose(sparse.to_dict()["fixed_effects"][0]["estimate"],
                               cells.to_dict()["fixed_effects"][0]["estimate"], atol=2e-3)


def test_grouped_rows_beyond_the_cell_engine_are_refused_naming_the_way_out(crowd, tmp_path, monkeypatch):
    crowd.to_csv(tmp_path / "crowd.csv", index=False)
    monkeypatch.setattr(cell_products, "COUPLING_LIMIT", 1000)
    with pytest.raises(br.BayesreproError, match=r"beyond the binomial cell engine; the sparse Laplace fit takes "
                                                 r"them from the rows in memory \(engine=.memory.\)$"):
        br.Model(FORMULA, tmp_path / "crowd.csv", family="bernoulli", object="item", engine="duckdb").fit()


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="needs R with lme4")
def test_the_sparse_fit_of_a_skewed_crowd_matches_glmer(tmp_path, monkeypatch):
    """The sparse path (exact gradient, selected inverse after eliminating the items) against glmer's Laplace fit,
    run here by benchmarks/glmer_fit.R on the same CSV."""
    scores, _ = simulate_crowd(6000, 3000, 1200, skew=1.0, binary=True, random_state=8)
    scores.to_csv(tmp_path / "crowd.csv", index=False)
    run = subprocess.run(["Rscript", str(REPO / "benchmarks" / "glmer_fit.R"), str(tmp_path / "crowd.csv"), FORMULA,
                          "item,rater"], capture_output=True, text=True, check=True, timeout=600)
    glmer = json.loads(run.stdout.strip().splitlines()[-1])
    monkeypatch.setattr(cell_products, "COUPLING_LIMIT", 1000)   # the sparse path, as for 8,000 raters
    fit = br.Model(FORMULA, scores, family="bernoulli", object="item").fit().to_dict()
    assert fit["converged"]
    ours = {row["name"]: row["variance"] for row in fit["components"] if row["name"] != "Residual"}
    for name, variance in glmer["variances"].items():
        assert np.sqrt(ours[name]) == pytest.approx(np.sqrt(variance), rel=2e-3), name
    assert fit["fixed_effects"][0]["estimate"] == pytest.approx(glmer["fixed_effects"]["(Intercept)"], abs=2e-3)
    assert fit["loglik"] >= glmer["loglik"] - 1e-6
