"""References of the GLRT between covariance structures of random-slope models: the boundary mixture's size by
simulation, the parametric bootstrap on the rows, and the references refused for them."""

import numpy as np
import pandas as pd
import pytest
from scipy.special import chdtrc

from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.glrt import glrt, nested_frames
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.frequentist.slope_bootstrap import row_bootstrap_lrt

INTERCEPT = "y ~ x + (1|g)"
SLOPE = "y ~ x + (1 + x|g)"


def _sleep_like(rng, groups=18, days=10, intercept_sd=37.0, slope_sd=0.0, residual_sd=31.0):
    """A sleepstudy-like design: ``groups`` subjects measured on ``days`` days, random intercepts (and slopes)."""
    g = np.repeat(np.arange(groups), days)
    x = np.tile(np.arange(days, dtype=float), groups)
    y = (250.0 + 10.0 * x + rng.normal(0, intercept_sd, groups)[g] + rng.normal(0, slope_sd, groups)[g] * x
         + rng.normal(0, residual_sd, len(g)))
    return pd.DataFrame({"g": [f"s{k:02d}" for k in g], "x": x, "y": y})


def test_row_bootstrap_refits_both_models_under_h0():
    rows = _sleep_like(np.random.default_rng(3), groups=8, days=6, slope_sd=4.0)
    frame0, frame1 = nested_frames(INTERCEPT, SLOPE, rows)
    fit0, fit1 = fit_model_frame(frame0, "ml"), fit_model_frame(frame1, "ml")
    simulated = row_bootstrap_lrt(frame0, frame1, fit0, fit1, samples=4, seed=5)
    assert len(simulated.sample) == 4 and np.all(simulated.sample >= 0)
    assert simulated.statistic == pytest.approx(fit0.criterion - fit1.criterion)
    assert simulated.p == pytest.approx((simulated.exceed + 1) / 5)


@pytest.mark.slow
def test_glrt_reads_a_slope_test_against_the_bootstrap():
    rows = _sleep_like(np.random.default_rng(3), groups=8, days=6, slope_sd=4.0)
    test = glrt(INTERCEPT, SLOPE, rows, reference="bootstrap", bootstrap_samples=20, seed=5)
    assert test.method == "bootstrap" and test.details["samples"] == 20
    assert test.p == pytest.approx((test.details["exceed"] + 1) / 21)
    assert test.asymptotic_reference == "0.5*chi2(1) + 0.5*chi2(2)"
    assert test.asymptotic_p == pytest.approx(0.5 * chdtrc(1, test.chi2) + 0.5 * chdtrc(2, test.chi2))


@pytest.mark.slow
def test_bootstrap_of_a_fixed_effect_between_slope_models_is_reproducible():
    rows = _sleep_like(np.random.default_rng(4), groups=8, days=6, slope_sd=4.0)
    first, again = (glrt("y ~ 1 + (1 + x|g)", SLOPE, rows, reference="bootstrap", bootstrap_samples=20, seed=1)
                    for _ in range(2))
    assert first.method == "bootstrap" and first.asymptotic_reference == "chi2(1)"
    assert first.p == again.p and first.details["exceed"] == again.details["exceed"]


def test_small_sample_f_tests_are_refused_between_covariance_structures():
    rows = _sleep_like(np.random.default_rng(5), groups=8, days=6)
    with pytest.raises(BayesreproError, match=r"^--reference kenward-roger tests fixed effects of models with the "
                                              r"same random-effect terms, but H0 and H1 differ in theirs"):
        glrt(INTERCEPT, SLOPE, rows, reference="kenward-roger")


@pytest.mark.slow
def test_boundary_mixture_keeps_its_size_for_an_added_slope():
    """200 sleepstudy-like data sets under H0 (random intercepts only): the 5 % test of the 50:50 chi2(1):chi2(2)
    mixture rejects 2-9 % of them (binomial SD of 5 % in 200: 1.5 %)."""
    rng = np.random.default_rng(20261125)
    p = np.array([glrt(INTERCEPT, SLOPE, _sleep_like(rng)).p for _ in range(200)])
    rate = float(np.mean(p < 0.05))
    print(f"rejection rate of the mixture's 5 % test under H0: {rate:.3f}")
    assert 0.02 <= rate <= 0.09
