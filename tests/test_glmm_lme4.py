"""Agreement of the binomial GLMM with lme4's glmer on lme4's own binomial data and a simulated grid.

References: tests/reference/lme4_binomial.R (R 4.2.2, lme4 1.1-31, emmeans 1.8.4-1). Every model was
fitted twice: as glmer runs by default, and with penalized IRLS converged tightly (tolPwrss = 1e-12).
glmer's default tolerance leaves its criterion uncertain in about the third decimal (its log-likelihood
up to 6e-3 below the optimum on these data, its standard errors up to 1.3 % off), so estimates are
compared with the tight fits and log-likelihoods with both.

Tolerances: variance components within 2e-3 relative; fixed effects within 1 % of a standard error;
standard errors within 5e-3 relative (lme4's come from a finite-difference Hessian of its criterion,
ours from differences of the exact gradient); our log-likelihood no lower than lme4's beyond 1e-6.
With quadrature (nAGQ > 1) lme4's log-likelihood lacks the saturated model's binomial
log-likelihood; it is added back before comparing.
"""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrepro.design import build_model_frame, resolve_family
from bayesrepro.frequentist.glrt import glrt
from bayesrepro.frequentist.binary_contrasts import binary_contrasts, binary_means
from bayesrepro.frequentist.glmm import fit_glmm, fit_glmm_frame

HERE = Path(__file__).parent
REFERENCE = json.loads((HERE / "reference" / "lme4_binomial.json").read_text())
TEXT = {"herd": str, "period": str, "id": str, "item": str, "Gender": str, "btype": str, "situ": str,
        "system": str, "seed": str, "prompt": str}


def load(dataset: str) -> pd.DataFrame:
    return pd.read_csv(HERE.parent / REFERENCE["datasets"][dataset], dtype=TEXT)


def lme4_loglik(model: dict, which: str) -> float:
    record = model[which]
    return record["loglik"] + (record["saturated_loglik"] if model["nAGQ"] > 1 else 0.0)


@pytest.mark.parametrize("name", sorted(REFERENCE["models"]))
def test_fit_matches_glmer(name):
    model = REFERENCE["models"][name]
    fit = fit_glmm(model["formula"], load(model["dataset"]), link=model["link"], nagq=model["nAGQ"])
    tight = model["tight"]
    assert fit.converged, fit.message
    for component, variance in tight["variances"].items():
        assert fit.variances[component] == pytest.approx(variance, rel=2e-3), component
    for which in ("default", "tight"):
        assert fit.loglik >= lme4_loglik(model, which) - 1e-6, which
    se = np.array(list(tight["std_errors"].values()))
    assert np.all(np.abs(fit.beta - np.array(list(tight["fixed_effects"].values()))) <= 1e-2 * se)
    if not tight["convergence_messages"]:   # lme4 falls back to another covariance when its Hessian is degenerate
        np.testing.assert_allclose(fit.se, se, rtol=5e-3)


@pytest.mark.parametrize("name", sorted(REFERENCE["tests"]))
def test_likelihood_ratio_test_matches_anova(name):
    test = REFERENCE["tests"][name]
    h0, h1 = REFERENCE["models"][test["h0"]], REFERENCE["models"][test["h1"]]
    result = glrt(h0["formula"], h1["formula"], load(h1["dataset"]))
    assert result.family in ("bernoulli", "binomial")
    assert result.df == test["df"]
    assert result.chi2 == pytest.approx(test["chisq_tight"], abs=1e-3)


@pytest.mark.parametrize("name", sorted(REFERENCE["emmeans"]))
def test_contrasts_match_emmeans(name):
    reference = REFERENCE["emmeans"][name]
    model = REFERENCE["models"][reference["model"]]
    frame = build_model_frame(model["formula"], load(model["dataset"]))
    fit = fit_glmm_frame(frame, resolve_family(frame))
    factor = reference["factor"]
    contrasts = binary_contrasts(fit, frame, factor)
    se = np.array(reference["logit_se"])
    assert np.all(np.abs(contrasts["estimate"] - reference["logit_estimate"]) <= 1e-2 * se)
    np.testing.assert_allclose(contrasts["std_error"], se, rtol=5e-3)
    np.testing.assert_allclose(contrasts["odds_ratio"], reference["odds_ratio"], rtol=1e-2 * se.max())
    probability_se = np.array(reference["probability_se"])
    assert np.all(np.abs(contrasts["probability_difference"] - reference["probability_difference"])
                  <= 1e-2 * probability_se)
    np.testing.assert_allclose(contrasts["probability_se"], probability_se, rtol=5e-3)
    np.testing.assert_allclose(contrasts["probability_p"], reference["probability_p"], rtol=2e-2, atol=1e-6)
    means = binary_means(fit, frame, factor)
    assert list(map(str, means[factor])) == reference["levels"]
    np.testing.assert_allclose(means["probability"], reference["probability"], rtol=1e-3)
    np.testing.assert_allclose(means["probability_se"], reference["probability_mean_se"], rtol=5e-3)
