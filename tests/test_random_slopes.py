"""Random slopes and correlated random effects against lme4 (tests/reference/lme4_slopes.R and its JSON)."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bayesrepro.design import build_model_frame, parse_formula
from bayesrepro.data import read_table
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.glrt import glrt
from bayesrepro.frequentist.lmm import fit_model_frame

HERE = Path(__file__).parent
REFERENCE = HERE / "reference" / "lme4_slopes.json"
SD_RELATIVE = 1e-3
CORRELATION_ABSOLUTE = 2e-3
LOGLIK_SLACK = 1e-6
CHISQ_ABSOLUTE = 1e-3


def _reference():
    return json.loads(REFERENCE.read_text())


def _frame(dataset: str, formula: str):
    return build_model_frame(parse_formula(formula, slopes=True), read_table(HERE / "data" / f"{dataset}.csv.gz"))


def _name(text):
    """lme4's '(Intercept)', 'condb' and formulae's 'Intercept', 'cond[b]' alike."""
    return None if text is None else re.sub(r"[()\[\]]", "", text)


def _rows(rows, group="grp"):
    """sdcor by (group, var1, var2); lme4 names the nested group of subject/block 'block:subject', we 'subject:block'."""
    return {(":".join(sorted(row[group].split(":"))), _name(row["var1"]), _name(row["var2"])): row["sdcor"]
            for row in rows}


def _check_against(fit, expected):
    ours, theirs = _rows(fit.varcorr(), "group"), _rows(expected["varcorr"])
    assert set(ours) == set(theirs)
    residual = theirs[("Residual", None, None)]
    for key, value in theirs.items():
        if key[2] is None:   # an SD at zero (a singular fit) is compared on the residual's scale
            assert ours[key] == pytest.approx(value, rel=SD_RELATIVE, abs=SD_RELATIVE * residual), key
        elif value is not None:   # lme4 has no correlation (NaN) where both SDs are 0
            assert ours[key] == pytest.approx(value, abs=CORRELATION_ABSOLUTE), key
    assert fit.loglik >= expected["loglik"] - LOGLIK_SLACK
    assert fit.converged
    assert bool(fit.boundary) == expected["singular"]


MODELS = sorted(_reference()["models"])


@pytest.mark.parametrize("method", ["REML", "ML"])
@pytest.mark.parametrize("key", MODELS)
def test_fits_match_lme4(key, method):
    model = _reference()["models"][key]
    fit = fit_model_frame(_frame(model["data"], model["formula"]), method.lower())
    _check_against(fit, model[method])
    fixed = {_name(k): v for k, v in model[method]["fixef"].items()}
    ours = dict(zip(map(_name, fit.fixed_names), fit.beta))
    for name, value in fixed.items():
        assert ours[name] == pytest.approx(value, rel=1e-4, abs=1e-6 * max(1.0, abs(value)))


@pytest.mark.parametrize("key", sorted(_reference()["tests"]))
def test_covariance_structure_glrt_matches_lme4(key):
    case = _reference()["tests"][key]
    rows = read_table(HERE / "data" / f"{case['data']}.csv.gz")
    result = glrt(case["h0"], case["h1"], rows)
    assert result.df == case["df"]
    assert result.chi2 == pytest.approx(case["chisq"], abs=CHISQ_ABSOLUTE)
    assert result.reference == STRUCTURE_REFERENCES[key]


# Stram & Lee's mixture for one added slope with its correlation; χ² for a correlation alone; χ² (conservative)
# for two added slopes
STRUCTURE_REFERENCES = {"sleep_slope": "0.5*chi2(1) + 0.5*chi2(2)", "sleep_correlation": "chi2(1)",
                        "crossed_slopes": "chi2(4)"}


def test_slopes_are_refused_where_no_engine_fits_them():
    with pytest.raises(BayesreproError, match=r"random slope '\(1 \+ x\|g\)'.*not supported here"):
        parse_formula("y ~ x + (x|g)")
    frame = _frame("sleepstudy", "Reaction ~ Days + (Days|Subject)")
    with pytest.raises(BayesreproError, match="supports random intercepts only"):
        frame.stats()


def test_double_bar_expands_as_lme4():
    spec = parse_formula("y ~ x + (1 + x + z || g) + (1|h)", slopes=True)
    assert [t.text for t in spec.random_terms] == ["(1|g)", "(0 + x|g)", "(0 + z|g)", "(1|h)"]
    assert spec.variables == ("y", "x", "z", "g", "h")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed")
def test_reference_script_reproduces_the_stored_values(tmp_path):
    """Re-run the R script into a temporary folder: the same data and the same fits as the stored JSON."""
    stored = _reference()
    out = tmp_path / "lme4_slopes.json"
    subprocess.run(["Rscript", str(HERE / "reference" / "lme4_slopes.R"), str(out), str(tmp_path)], check=True,
                   capture_output=True)
    fresh = json.loads(out.read_text())
    for key, model in stored["models"].items():
        for method in ("REML", "ML"):
            assert fresh["models"][key][method]["loglik"] == pytest.approx(model[method]["loglik"], abs=1e-6)
            sdcor = [_number(row["sdcor"]) for row in model[method]["varcorr"]]
            fresh_sdcor = [_number(row["sdcor"]) for row in fresh["models"][key][method]["varcorr"]]
            assert fresh_sdcor == pytest.approx(sdcor, rel=1e-6, nan_ok=True)


def _number(value):
    """JSON's null (R's NaN, an undefined correlation) as a float NaN."""
    return float("nan") if value is None else value


def _command(*args):
    return subprocess.run([sys.executable, "-m", "bayesrepro", *args], capture_output=True, text=True)


def test_glrt_command_tests_a_correlation_against_chi2():
    case = _reference()["tests"]["sleep_correlation"]
    data = str(HERE / "data" / "sleepstudy.csv.gz")
    run = _command("glrt", data, "--h0", case["h0"], "--h1", case["h1"], "--json")
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["chi2"] == pytest.approx(case["chisq"], abs=CHISQ_ABSOLUTE)
    assert payload["reference"] == "chi2(1)" and "covariances only" in payload["reason"]
    refused = _command("glrt", data, "--h0", case["h0"], "--h1", case["h1"], "--reference", "exact-rlrt")
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [
        "bayesrepro: error: --reference exact-rlrt is not available for models with random slopes: its exact null "
        "distribution holds for one variance component without covariances (Crainiceanu & Ruppert 2004); use "
        "--reference bootstrap"]


def test_terms_outside_the_larger_model_are_not_nested():
    rows = read_table(HERE / "data" / "sleepstudy.csv.gz")
    with pytest.raises(BayesreproError, match=r"H0's random-effect term '\(1 \+ Days\|Subject\)' is not contained"):
        glrt("Reaction ~ Days + (Days|Subject)", "Reaction ~ Days + (Days||Subject)", rows)


def test_plan_refuses_the_power_of_a_slope_model_in_one_line():
    data = str(HERE / "data" / "categorical_slope.csv.gz")
    run = _command("plan", data, "--formula", "score ~ cond + (1 + cond|g)", "--contrast", "cond=b-a",
                   "--vary", "g=20,40")
    assert run.returncode == 2
    assert run.stderr.strip().splitlines() == [
        "bayesrepro: error: random slope '(1 + cond|g)': plan computes the power of a contrast for random "
        "intercepts only; plan phi of the slope model (a D-study: --criterion phi, or no --contrast)"]
