import numpy as np
import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.reliability import (
    consistency_across,
    d_study,
    koo_li_label,
    koo_li_probabilities,
    phi,
    vca_table,
)

G_STUDY = {"sentence": 0.05, "rater": 0.01, "occasion": 0.002, "sentence:rater": 0.02,
           "sentence:occasion": 0.004, "rater:occasion": 0.001, "Residual": 0.012}


def test_vca_table_percent_sums_to_100_and_phi_is_the_share():
    table = vca_table(G_STUDY, object="sentence")
    assert table["percent"].sum() == pytest.approx(100)
    assert phi(G_STUDY, "sentence") == pytest.approx(0.05 / 0.099)


def test_phi_accepts_posterior_draws():
    draws = {"item": np.array([1.0, 2.0]), "Residual": np.array([1.0, 2.0])}
    np.testing.assert_allclose(phi(draws, "item"), [0.5, 0.5])


@pytest.mark.parametrize("value, label", [(0.3, "poor"), (0.5, "moderate"), (0.8, "good"), (0.95, "excellent"), (1.0, "excellent")])
def test_koo_li_labels(value, label):
    assert koo_li_label(value) == label


def test_koo_li_probabilities_sum_to_one():
    probabilities = koo_li_probabilities(np.array([0.1, 0.6, 0.8, 0.95]))
    assert probabilities == {"poor": 0.25, "moderate": 0.25, "good": 0.25, "excellent": 0.25}


def test_d_study_with_one_level_of_each_facet_is_phi():
    study = d_study(G_STUDY, "sentence", {})
    assert study["phi"] == pytest.approx(phi(G_STUDY, "sentence"))


def test_d_study_follows_brennans_formulas():
    study = d_study(G_STUDY, "sentence", {"rater": 4, "occasion": 2})
    relative = 0.02 / 4 + 0.004 / 2 + 0.012 / 8
    absolute = 0.01 / 4 + 0.002 / 2 + 0.001 / 8 + relative
    assert study["e_rho2"] == pytest.approx(0.05 / (0.05 + relative))
    assert study["phi"] == pytest.approx(0.05 / (0.05 + absolute))


def test_d_study_reliability_rises_with_more_raters():
    values = [d_study(G_STUDY, "sentence", {"rater": n})["phi"] for n in (1, 2, 5, 50)]
    assert np.all(np.diff(values) > 0)
    assert values[-1] < 1.0


def test_consistency_across_occasions_and_raters():
    assert consistency_across(G_STUDY, "occasion") == pytest.approx((0.05 + 0.01 + 0.02) / 0.099)
    assert consistency_across(G_STUDY, "rater") == pytest.approx((0.05 + 0.002 + 0.004) / 0.099)


def test_unknown_object_or_facet_is_one_line():
    with pytest.raises(BayesreproError, match="object of measurement 'item' is not a variance component"):
        phi(G_STUDY, "item")
    with pytest.raises(BayesreproError, match="D-study facet"):
        d_study(G_STUDY, "sentence", {"seed": 3})
