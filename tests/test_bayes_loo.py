"""Leave-one-item-out log-likelihood: each item's value is its exact marginal Gaussian density."""

import numpy as np
import pytest
from scipy.stats import multivariate_normal

from bayesrepro.bayes import fit_bayes
from bayesrepro.bayes.loo import add_item_loglik, compare_models
from bayesrepro.datasets import load_dataset


@pytest.fixture(scope="module")
def fits():
    data = load_dataset("kreutzer_ter")
    data = data[data["sentence_id"].isin(data["sentence_id"].cat.categories[:40])]
    kwargs = dict(draws=200, tune=300, chains=2, cores=1, seed=3, allow_unconverged=True)
    return (fit_bayes("ter ~ system + (1|sentence_id) + (1|replication)", data, **kwargs),
            fit_bayes("ter ~ 1 + (1|sentence_id) + (1|replication)", data, **kwargs))


def test_item_loglik_is_the_items_marginal_density(fits):
    fit = fits[0]
    add_item_loglik(fit)
    post = fit.idata.posterior.isel(chain=0, draw=7)
    frame = fit.frame
    item = frame.groups[0]
    assert item.name == "sentence_id"
    replication = frame.groups[1]
    mean = frame.X @ post["fixed"].values + post["1|replication"].values[replication.codes]
    s2, va = float(post["sigma"]) ** 2, float(post["1|sentence_id_sigma"]) ** 2
    loglik = fit.idata.log_likelihood["item"].isel(chain=0, draw=7).values
    for level in (0, 5, 39):
        rows = item.codes == level
        n = rows.sum()
        reference = multivariate_normal(mean[rows], s2 * np.eye(n) + va * np.ones((n, n))).logpdf(frame.y[rows])
        assert loglik[level] == pytest.approx(reference, rel=1e-9)


def test_compare_models_runs_psis_loo_over_items(fits):
    table = compare_models({"system": fits[0], "intercept": fits[1]})
    assert set(table.index) == {"system", "intercept"}
    assert np.isfinite(table["elpd_loo"]).all()
