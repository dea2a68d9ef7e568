"""The papers' significance analyses on kreutzer_ter (thesis Table 2.2 and the authors' notebook)."""

import numpy as np
import pandas as pd
import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.analyses import (
    averaged_comparison,
    compare_conditional,
    compare_levels,
    variance_component_test,
)
from bayesrepro.frequentist.contrasts import holm
from bayesrepro.properties import length_class


def test_averaging_replications_loses_the_power_the_item_effect_gives(ter):
    result = averaged_comparison(ter, "ter", "system", "sentence_id")
    assert result.p == pytest.approx(0.517, abs=0.0005)
    assert result.residual_sd == pytest.approx(0.2576, abs=5e-5)
    assert result.lmm_residual_sd == pytest.approx(0.0591, abs=5e-5)
    assert result.lmm.p < 1e-7


def test_system_contrasts_and_effect_size(ter):
    comparison = compare_levels("ter ~ system + (1|sentence_id)", ter, "system")
    contrasts = comparison.contrasts.set_index("contrast")
    # effect size as the authors define it: contrast / residual SD of H1 (Baseline − Marking ≈ 0.21)
    assert contrasts.loc["Baseline - Marking", "effect_size"] == pytest.approx(0.21, abs=0.005)
    # the means are the fitted cell means of a model with one fixed factor: they
    # must equal intercept + coefficient, and the contrast their difference
    means = comparison.means.set_index("system")["estimate"]
    assert contrasts.loc["Baseline - Marking", "estimate"] == pytest.approx(means["Baseline"] - means["Marking"])
    beta = dict(zip(comparison.test.h1.fixed_names, comparison.test.h1.beta))
    assert means["Marking"] == pytest.approx(beta["Intercept"] + beta["system[Marking]"])


def test_conditional_comparison_within_length_classes(ter):
    data = ter.assign(len=length_class(ter["src_length"]))
    comparison = compare_conditional("ter ~ system*len + (1|sentence_id)", data, "system", "len")
    assert comparison.test.chi2 == pytest.approx(32.43, abs=0.005)
    assert set(comparison.contrasts["len"]) == {"short", "typical", "very long"}
    assert len(comparison.contrasts) == 9


def test_numeric_property_gives_slopes_per_system(ter):
    comparison = compare_conditional("ter ~ system*src_length + (1|sentence_id)", ter, "system", "src_length")
    slopes = comparison.slopes.set_index("system")["estimate"]
    beta = dict(zip(comparison.test.h1.fixed_names, comparison.test.h1.beta))
    assert slopes["Baseline"] == pytest.approx(beta["src_length"])
    assert slopes["PostEdit"] == pytest.approx(beta["src_length"] + beta["system[PostEdit]:src_length"])


def test_comparison_needs_the_interaction(ter):
    with pytest.raises(BayesreproError, match="no interaction of 'system' and 'src_length'"):
        compare_conditional("ter ~ system + src_length + (1|sentence_id)", ter, "system", "src_length")


def test_variance_component_test_reports_its_reference(ter):
    formula = "ter ~ system + (1|sentence_id) + (1|system:replication)"
    mixture = variance_component_test(formula, "system:replication", ter, reference="chi2")
    assert mixture.reference == "0.5*chi2(0) + 0.5*chi2(1)"
    assert mixture.df == 1
    # seven replications: few levels carry the component, so the default reads the exact RLRT; the
    # replication variance is estimated at 0, so the statistic is 0 and p = 1
    exact = variance_component_test(formula, "system:replication", ter, seed=1)
    assert exact.method == "exact-rlrt" and "system:replication" in exact.reason
    assert exact.details["statistic"] == 0
    assert exact.p == 1.0 and exact.asymptotic_p == 1.0
    with pytest.raises(BayesreproError, match="'seed' is not a random intercept"):
        variance_component_test("ter ~ system + (1|sentence_id)", "seed", ter)


def test_holm_matches_its_definition():
    p = np.array([0.01, 0.04, 0.03, 0.005])
    # sorted: 0.005*4, 0.01*3, 0.03*2, 0.04*1 → 0.02, 0.03, 0.06, max(0.06, 0.04)
    np.testing.assert_allclose(holm(p), [0.03, 0.06, 0.06, 0.02])


def test_boundary_mixture_p_value_is_half_the_chi2_one():
    """Under H0 with one variance component at zero, about half the statistics are 0."""
    rng = np.random.default_rng(7)
    zero = []
    for _ in range(40):
        frame = pd.DataFrame({"item": np.repeat(np.arange(30), 4), "seed": np.tile(np.arange(4), 30)})
        frame["y"] = rng.normal(size=30).repeat(4) + rng.normal(scale=0.5, size=len(frame))
        result = variance_component_test("y ~ 1 + (1|item) + (1|seed)", "seed", frame, reference="chi2")
        zero.append(result.chi2 == 0.0)
        assert result.p == pytest.approx(1.0 if result.chi2 == 0 else 0.5 * __import__("scipy").stats.chi2.sf(result.chi2, 1))
    # P(statistic = 0) = 1/2 under H0; with 40 draws a share outside 0.2–0.8 has probability < 0.2 %
    assert 0.2 <= np.mean(zero) <= 0.8
