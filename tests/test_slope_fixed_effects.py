"""Satterthwaite and Kenward–Roger tests of the fixed effects of random-slope models against lmerTest and pbkrtest
(tests/reference/fixed_effects_slopes.R and its JSON)."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bayesrepro as br
from bayesrepro.data import read_table
from bayesrepro.frequentist.ddf import KENWARD_ROGER, SATTERTHWAITE, frame_inference

HERE = Path(__file__).parent
REFERENCE = HERE / "reference" / "fixed_effects_slopes.json"
# lmerTest differentiates numerically (numDeriv): its df carry errors near 1e-6, far inside this
RELATIVE = 1e-3
# the null model of each design's type-III F test of its one fixed term (lmerTest's anova)
NULL_MODELS = {
    "sleep_correlated": "Reaction ~ 1 + (Days | Subject)",
    "sleep_independent": "Reaction ~ 1 + (Days || Subject)",
    "crossed_categorical": "y ~ 1 + (1 + c | subject) + (1 + c | item)",
    "categorical_three_levels": "score ~ 1 + (1 + cond | g)",
    "singular_correlation": "Reaction ~ 1 + (1 + w | Subject)",
    "singular_nested": "y ~ 1 + (1 + c | subject/block)",
}


def _designs():
    return json.loads(REFERENCE.read_text())["designs"]


def _model(design):
    return br.Model(design["formula"], read_table(HERE / "data" / design["data"]),
                    categorical=design["categorical"] or None)


def _vector(value):
    """jsonlite writes a one-element vector as a scalar."""
    return np.atleast_1d(np.asarray(value, dtype=float))


def _close(ours, theirs):
    np.testing.assert_allclose(np.asarray(ours, dtype=float), _vector(theirs), rtol=RELATIVE)


@pytest.mark.parametrize("key", sorted(_designs()))
def test_satterthwaite_t_tests_match_lmertest(key):
    design = _designs()[key]
    table = _model(design).fit().fixed_effects
    expected = design["satterthwaite"]
    for column, name in (("estimate", "estimate"), ("std_error", "std_error"), ("df", "df"), ("t", "t"), ("p", "p")):
        _close(table[column], expected[name])


@pytest.mark.parametrize("key", sorted(_designs()))
def test_kenward_roger_t_tests_match_pbkrtest(key):
    design = _designs()[key]
    model = _model(design)
    fit = model.engine_fit("reml")
    se, df = frame_inference(model.frame, fit).contrasts(np.eye(len(fit.beta)), KENWARD_ROGER)
    expected = design["kenward_roger"]
    _close(se, expected["std_error"])
    _close(df, expected["df"])


@pytest.mark.parametrize("method", [KENWARD_ROGER, SATTERTHWAITE])
@pytest.mark.parametrize("key", sorted(_designs()))
def test_f_tests_of_the_glrt_match_anova(key, method):
    design = _designs()[key]
    test = _model(design).glrt(NULL_MODELS[key], reference=method).to_dict()
    expected = design["anova_" + method.replace("-", "_")]
    assert test["method"] == method and test["ndf"] == int(_vector(expected["ndf"])[0])
    _close([test["f"], test["ddf"], test["p"]], [_vector(expected[name])[0] for name in ("f", "ddf", "p")])


def test_auto_reference_calibrates_a_slope_carried_effect():
    design = _designs()["sleep_correlated"]
    test = _model(design).glrt(NULL_MODELS["sleep_correlated"]).to_dict()
    assert test["method"] == KENWARD_ROGER
    assert "'Subject' (18 levels, with a random slope of the tested effect)" in test["reason"]


def test_vca_json_gives_satterthwaite_df_for_slopes():
    design = _designs()["sleep_correlated"]
    run = subprocess.run([sys.executable, "-m", "bayesrepro", "vca", str(HERE / "data" / design["data"]),
                          "--formula", design["formula"], "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    rows = json.loads(run.stdout)["fixed_effects"]
    _close([row["df"] for row in rows], design["satterthwaite"]["df"])


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed")
def test_reference_script_reproduces_the_stored_values(tmp_path):
    out = tmp_path / "fixed_effects_slopes.json"
    subprocess.run(["Rscript", str(HERE / "reference" / "fixed_effects_slopes.R"), str(out)], check=True,
                   capture_output=True)
    fresh, stored = json.loads(out.read_text())["designs"], _designs()
    for key, design in stored.items():
        for table in ("satterthwaite", "kenward_roger"):
            for column in ("std_error", "df", "t"):
                np.testing.assert_allclose(_vector(fresh[key][table][column]), _vector(design[table][column]),
                                           rtol=1e-6)
