"""Satterthwaite's own route through the dominant factor's diagonal block equals the dense algebra it replaces.

Both compute the same quantities in a different order of floating-point operations; on designs whose
X'V⁻¹X comes from cancellation (a dominant item variance) they part at rounding level, so standard errors,
degrees of freedom and F tests must agree to 1e-8 relative and the variance-parameter information to 1e-10.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from bayesrepro.data import load_dataset
from bayesrepro.design import build_model_frame
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.ddf import (
    KENWARD_ROGER,
    SATTERTHWAITE,
    satterthwaite_derivatives,
    small_sample_inference,
    variance_derivatives,
)
from bayesrepro.frequentist.lmm import fit_model_frame

GRID = ("ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout) + (1|decoder_dropout)"
        " + (1|decoder_dropout_hidden) + (1|delta_scheme)")


def _first_sentences(data, count):
    ids = sorted(data["sentence_id"].astype(str).unique())[:count]
    return data[data["sentence_id"].astype(str).isin(ids)]


def _unbalanced(seed: int = 4):
    rng = np.random.default_rng(seed)
    rows = 600
    frame = {"item": rng.integers(0, 70, rows), "system": rng.choice(["A", "B", "C"], rows),
             "seed": rng.integers(0, 4, rows), "length": rng.uniform(0, 1, rows)}
    frame["score"] = (rng.normal(0, 0.3, 70)[frame["item"]] + rng.normal(0, 0.1, 12)[
        3 * frame["seed"] + np.searchsorted(["A", "B", "C"], frame["system"])]
        + 0.2 * frame["length"] + rng.normal(0, 0.2, rows))
    return pd.DataFrame(frame).astype({"item": str, "seed": str})


DESIGNS = {
    "partial grid, 60 sentences": (GRID, lambda: _first_sentences(load_dataset("kreutzer_marking_partial"), 60)),
    "partial grid, learning rate fixed": (
        "ter ~ learning_rate + (1|sentence_id) + (1|learning_rate:seed) + (1|encoder_dropout)",
        lambda: _first_sentences(load_dataset("kreutzer_marking_partial"), 40)),
    "one factor": ("ter ~ system + (1|sentence_id)", lambda: _first_sentences(load_dataset("kreutzer_ter"), 150)),
    "unbalanced crossed, covariate": ("score ~ system * length + (1|item) + (1|system:seed)", _unbalanced),
}


@pytest.fixture(scope="module", params=sorted(DESIGNS))
def design(request):
    formula, data = DESIGNS[request.param]
    frame = build_model_frame(formula, data())
    return frame.stats(), fit_model_frame(frame, "reml")


def test_satterthwaite_route_equals_the_dense_algebra(design):
    stats, fit = design
    sigma2 = fit.variances["Residual"]
    dense = variance_derivatives(stats, fit.theta, sigma2)
    cheap = satterthwaite_derivatives(stats, fit.theta, sigma2)
    for name in ("information2", "observed_information"):
        np.testing.assert_allclose(getattr(cheap, name), getattr(dense, name), rtol=1e-10,
                                   atol=1e-10 * np.abs(getattr(dense, name)).max())
    np.testing.assert_array_equal(cheap.free, dense.free)
    identity = np.eye(stats.n_fixed)
    se_dense, df_dense = small_sample_inference(stats, fit).contrasts(identity, SATTERTHWAITE)
    cheap_inference = small_sample_inference(stats, fit, (SATTERTHWAITE,))
    se, df = cheap_inference.contrasts(identity, SATTERTHWAITE)
    np.testing.assert_allclose(se, se_dense, rtol=1e-8)
    np.testing.assert_allclose(df, df_dense, rtol=1e-8)
    if stats.n_fixed > 1:
        L = identity[1:]
        dense_f = small_sample_inference(stats, fit).f_test(L, SATTERTHWAITE)
        f = cheap_inference.f_test(L, SATTERTHWAITE)
        assert (f.ndf, f.f, f.ddf, f.p) == pytest.approx((dense_f.ndf, dense_f.f, dense_f.ddf, dense_f.p), rel=1e-8)


def test_satterthwaite_route_refuses_kenward_roger(design):
    stats, fit = design
    with pytest.raises(BayesreproError, match="Satterthwaite alone"):
        small_sample_inference(stats, fit, (SATTERTHWAITE,)).contrasts(np.eye(stats.n_fixed), KENWARD_ROGER)
