"""0/1 scores of a crowd design (items × raters, crossed, sparse): crossed factors beyond the cell engine's
coupling are fitted by the sparse Laplace fit of the slope models, to the same optimum as the cell engine."""

import numpy as np
import pytest

import bayesrepro as br
from bayesrepro.frequentist import cell_products
from bayesrepro.simulate import simulate_crowd

FORMULA = "score ~ 1 + (1|item) + (1|rater)"


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
