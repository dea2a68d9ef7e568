"""The binary fast path's priors are Bambi's own defaults for Bernoulli models, term by term, under the logit
and the probit link alike (Bambi's PriorScaler treats the two links the same)."""

import numpy as np
import pandas as pd
import pytest

from bayesrepro.bayes.bambi_model import build_bambi_model
from bayesrepro.bayes.binary_priors import binary_priors
from bayesrepro.design import build_model_frame


@pytest.fixture(scope="module")
def scores():
    rng = np.random.default_rng(0)
    n = 600
    return pd.DataFrame({
        "item": rng.integers(0, 40, n).astype(str),
        "seed": rng.integers(0, 3, n).astype(str),
        "system": rng.choice(list("ABC"), n, p=[0.5, 0.3, 0.2]),
        "shots": rng.choice(["0", "5"], n),
        "length": rng.gamma(3.0, 2.0, n),
        "difficulty": rng.normal(0.4, 1.7, n),
        "correct": rng.integers(0, 2, n),
    })


@pytest.mark.parametrize("formula", [
    "correct ~ 1 + (1|item)",
    "correct ~ system + (1|item) + (1|seed)",
    "correct ~ system * length + shots:system + (1|item)",
    "correct ~ 0 + system + difficulty + (1|item) + (1|system:seed)",
    "correct ~ length * difficulty + (1|item)",
])
@pytest.mark.parametrize("link", ["logit", "probit"])
def test_priors_are_bambis(scores, formula, link):
    frame = build_model_frame(formula, scores)
    ours = binary_priors(frame)
    model = build_bambi_model(frame, "bernoulli", link=link)
    assert model.family.link["p"].name == link
    component = model.components["p"]
    for name, term in component.common_terms.items():
        columns = frame.fixed_term_columns[name]
        np.testing.assert_allclose(ours.fixed_sigma[columns], np.atleast_1d(term.prior.args["sigma"]), rtol=1e-12)
        np.testing.assert_allclose(ours.fixed_mu[columns], np.atleast_1d(term.prior.args["mu"]), atol=0)
    if component.intercept_term is not None:
        assert ours.fixed_sigma[ours.intercept_index] == float(component.intercept_term.prior.args["sigma"])
        assert ours.fixed_mu[ours.intercept_index] == float(component.intercept_term.prior.args["mu"])
    else:
        assert ours.intercept_index is None and not ours.x_means.any()
    for name, term in component.group_specific_terms.items():
        hyper = term.prior.args["sigma"]
        assert hyper.name == "HalfNormal"
        assert ours.group_sigma[name.split("|", 1)[1]] == pytest.approx(float(hyper.args["sigma"]), rel=1e-12)


def test_centring_uses_the_row_means(scores):
    frame = build_model_frame("correct ~ system + length + (1|item)", scores)
    priors = binary_priors(frame)
    np.testing.assert_allclose(priors.x_means[frame.fixed_term_columns["length"]], scores["length"].mean())
    np.testing.assert_allclose(priors.x_means[frame.fixed_term_columns["system"]],
                               [np.mean(scores["system"] == "B"), np.mean(scores["system"] == "C")])
