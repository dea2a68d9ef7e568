"""Default priors: the same numbers Bambi's own automatic scaling chooses (Bambi is the reference)."""

import numpy as np
import pytest

from bayesrepro.bayes.bambi_model import build_bambi_model
from bayesrepro.bayes.priors import default_priors, priors_from_bambi
from bayesrepro.datasets import load_dataset
from bayesrepro.errors import BayesreproError
from bayesrepro.design import build_model_frame


@pytest.mark.parametrize(
    "name, formula",
    [
        ("kreutzer_ter", "ter ~ system + (1|sentence_id)"),
        ("kreutzer_ter", "ter ~ system + src_length + (1|sentence_id) + (1|replication)"),
        ("kreutzer_annotation", "score ~ 1 + (1|sentence) + (1|rater) + (1|sentence:rater)"),
    ],
)
def test_default_priors_match_bambis_automatic_priors(name, formula):
    frame = build_model_frame(formula, load_dataset(name))
    ours = default_priors(frame, "bambi")
    bambis = priors_from_bambi(build_bambi_model(frame, "gaussian", None), frame)
    np.testing.assert_allclose(ours.fixed_mu, bambis.fixed_mu, rtol=1e-12)
    np.testing.assert_allclose(ours.fixed_sigma, bambis.fixed_sigma, rtol=1e-12)
    assert ours.group_sigma == pytest.approx(bambis.group_sigma, rel=1e-12)
    assert (ours.residual_nu, ours.residual_sigma) == pytest.approx((bambis.residual_nu, bambis.residual_sigma))


def test_priors_are_shown_and_overridable():
    frame = build_model_frame("ter ~ system + (1|sentence_id)", load_dataset("kreutzer_ter"))
    spec = default_priors(frame).with_overrides({"sentence_id": 0.5, "Residual": 0.1})
    table = spec.table().set_index("parameter")["prior"]
    assert table["sd[sentence_id]"] == "HalfNormal(sigma=0.5)"
    assert table["sd[Residual]"] == "HalfStudentT(nu=4, sigma=0.1)"
    assert spec.scaled(2.0).group_sigma["sentence_id"] == pytest.approx(1.0)
    with pytest.raises(BayesreproError, match="unknown parameter 'seed'"):
        spec.with_overrides({"seed": 1.0})
    with pytest.raises(BayesreproError, match="positive"):
        spec.with_overrides({"sentence_id": -1})


def test_r2d2_prior_states_the_prior_of_phi():
    frame = build_model_frame("score ~ 1 + (1|sentence) + (1|rater)", load_dataset("kreutzer_annotation"))
    table = default_priors(frame, "r2d2", concentration=0.5).table().set_index("parameter")["prior"]
    # three components (sentence, rater, Residual): one share is Beta(α, 2α)
    assert table["share of one component"] == "Beta(0.5, 1)"


def test_scaled_default_puts_95_percent_of_each_sd_below_the_sd_of_the_scores():
    from scipy.stats import halfnorm

    frame = build_model_frame("ter ~ system + (1|sentence_id) + (1|replication)", load_dataset("kreutzer_ter"))
    spec = default_priors(frame)
    assert spec.family == "scaled"
    for scale in spec.group_sigma.values():
        assert halfnorm.cdf(np.std(frame.y), scale=scale) == pytest.approx(0.95, abs=1e-6)
    assert "HalfNormal" in spec.table().set_index("parameter")["prior"]["sd[replication]"]


@pytest.mark.parametrize("family", ["scaled", "r2d2"])
def test_prior_check_draws_each_sd_from_its_prior(family):
    from scipy import stats

    from bayesrepro.bayes.sensitivity import prior_sd_draws

    frame = build_model_frame("score ~ 1 + (1|sentence) + (1|rater)", load_dataset("kreutzer_annotation"))
    spec = default_priors(frame, family, concentration=1.5)
    names = ["sentence", "rater", "Residual"]
    draws = prior_sd_draws(spec, names, 20_000, np.random.default_rng(0))
    if family == "scaled":
        expected = {name: stats.halfnorm(scale=spec.group_sigma[name]).cdf for name in names[:2]}
        expected["Residual"] = lambda x: 2 * stats.t(spec.residual_nu, scale=spec.residual_sigma).cdf(x) - 1
    else:  # σ_k² / τ² = ω_k ~ Beta(α, (K − 1) α), so the total of the variances is τ²
        total = np.sqrt(sum(draws[n] ** 2 for n in names))
        share = draws["sentence"] ** 2 / total**2
        assert stats.kstest(share, stats.beta(1.5, 3.0).cdf).pvalue > 0.001
        expected = {"total": lambda x: 2 * stats.t(spec.total_nu, scale=spec.total_sigma).cdf(x) - 1}
        draws = {"total": total}
    for name, cdf in expected.items():
        # a fixed seed; a wrong scale or family gives p-values far below 1e-3 with 20,000 draws
        assert stats.kstest(draws[name], cdf).pvalue > 0.001, name
