"""Binary GLMMs with random slopes against glmer (tests/reference/glmer_slopes.R and its JSON)."""

import json
import shutil
import subprocess
from pathlib import Path

import pytest

import bayesrepro as br
from bayesrepro.design import parse_formula, resolve_family
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.glmm import fit_glmm_frame
from bayesrepro.frequentist.fit_result import sd_count
from bayesrepro.frequentist.glrt import glrt
from test_random_slopes import CHISQ_ABSOLUTE, CORRELATION_ABSOLUTE, LOGLIK_SLACK, _command, _frame, _name

HERE = Path(__file__).parent
REFERENCE = HERE / "reference" / "glmer_slopes.json"
SD_RELATIVE = 2e-3
FIXED_ABSOLUTE = 2e-3
# Both standard errors come from finite-difference Hessians of the criterion over (θ, β).
SE_RELATIVE = 2e-3
# Fits of VerbAgg's 7,584 rows take tens of seconds each: they run with the slow tests.
QUICK = ("counts_slope", "crossed_independent", "crossed_slope_only")


def _reference():
    return json.loads(REFERENCE.read_text())


def _check_against(fit, expected):
    ours = {(row["group"], _name(row["var1"]), _name(row["var2"])): row["sdcor"] for row in fit.varcorr()}
    theirs = {(row["grp"], _name(row["var1"]), _name(row["var2"])): row["sdcor"] for row in expected["varcorr"]}
    assert set(ours) == set(theirs)
    for key, value in theirs.items():
        if key[2] is None:
            assert ours[key] == pytest.approx(value, rel=SD_RELATIVE), key
        else:
            assert ours[key] == pytest.approx(value, abs=CORRELATION_ABSOLUTE), key
    fixed = dict(zip(map(_name, fit.fixed_names), zip(fit.beta, fit.se)))
    assert set(fixed) == set(map(_name, expected["fixef"]))
    for name, value in expected["fixef"].items():
        assert fixed[_name(name)][0] == pytest.approx(value, abs=FIXED_ABSOLUTE), name
        assert fixed[_name(name)][1] == pytest.approx(expected["std_errors"][name], rel=SE_RELATIVE), name
    assert fit.loglik >= expected["loglik"] - LOGLIK_SLACK
    assert fit.converged
    assert bool(fit.boundary) == expected["singular"]


def _fit(key):
    """The fit of a stored model: 0/1 scores as Bernoulli, p(successes, trials) as binomial."""
    model = _reference()["models"][key]
    frame = _frame(model["data"], model["formula"])
    return fit_glmm_frame(frame, resolve_family(frame, "auto", model["link"])), model


SLOPE_MODELS = sorted(key for key, model in _reference()["models"].items()
                      if parse_formula(model["formula"], slopes=True).has_slopes)


@pytest.mark.parametrize("key", [pytest.param(key, marks=() if key in QUICK else pytest.mark.slow)
                                 for key in SLOPE_MODELS if not _reference()["models"][key]["singular"]])
def test_fits_match_glmer(key):
    fit, model = _fit(key)
    _check_against(fit, model)


@pytest.mark.slow
def test_where_glmer_stops_at_a_singular_fit_ours_is_as_likely():
    """crossed_categorical: glmer ends at a correlation of 1; the criterion is flat there and slightly higher
    inside (a correlation near 0.98), so estimates are not comparable, only the likelihood reached."""
    fit, model = _fit("crossed_categorical")
    assert model["singular"]
    assert fit.loglik >= model["loglik"] - LOGLIK_SLACK
    assert fit.converged


@pytest.mark.parametrize("key", [pytest.param(key, marks=() if key.startswith("crossed") else pytest.mark.slow)
                                 for key in sorted(_reference()["tests"])])
def test_slope_glrt_matches_glmer_anova(key):
    case = _reference()["tests"][key]
    frame1 = _frame(case["data"], case["h1"])
    result = glrt(case["h0"], frame1, reference="chi2", family="bernoulli", link=case["link"])
    assert result.chi2 == pytest.approx(case["chisq"], abs=CHISQ_ABSOLUTE)
    assert result.df == case["df"]
    one_variance_added = sd_count(result.h1) - sd_count(result.h0) == 1   # the null on the boundary (Stram & Lee)
    df = case["df"]
    assert result.reference == (f"0.5*chi2({df - 1}) + 0.5*chi2({df})" if one_variance_added else f"chi2({df})")


def test_model_reports_slope_rows_and_singular_fit():
    """A subject:item intercept the data do not support (the simulation has none) ends at zero: the fit is
    glmer's fit of the model without it, which is singular here."""
    model = _reference()["models"]["crossed_subject_slope"]
    fit = br.Model(model["formula"] + " + (1 | subject:item)", HERE / "data" / "binary_crossed.csv.gz",
                   family="bernoulli", object="item").fit()
    payload = fit.to_dict()
    rows = payload["random_effects"]
    assert [(row["group"], row["var1"], row["var2"]) for row in rows] == [
        ("subject", "Intercept", None), ("subject", "c", None), ("subject", "Intercept", "c"),
        ("item", "Intercept", None), ("subject:item", "Intercept", None)]
    assert [row["sdcor"] for row in rows[:4]] == pytest.approx([row["sdcor"] for row in model["varcorr"]],
                                                               abs=CORRELATION_ABSOLUTE)
    assert rows[4]["sdcor"] < 1e-4
    assert payload["loglik"] >= model["loglik"] - LOGLIK_SLACK
    assert payload["boundary"] == ["subject:item"]
    assert payload["scale"] == "latent" and payload["approximation"] == "Laplace"
    assert "random slopes" in " ".join(payload["notes"])


@pytest.mark.slow
def test_commands_fit_and_test_binary_slopes():
    case = _reference()["tests"]["crossed_subject_slope"]
    data = str(HERE / "data" / "binary_crossed.csv.gz")
    vca = _command("vca", data, "--formula", case["h1"], "--object", "item", "--json")
    assert vca.returncode == 0, vca.stderr
    rows = json.loads(vca.stdout)["random_effects"]
    expected = _reference()["models"]["crossed_subject_slope"]["varcorr"]
    assert [row["sdcor"] for row in rows] == pytest.approx([row["sdcor"] for row in expected], abs=2e-3)
    test = _command("glrt", data, "--h0", case["h0"], "--h1", case["h1"], "--reference", "chi2", "--json")
    assert test.returncode == 0, test.stderr
    assert json.loads(test.stdout)["chi2"] == pytest.approx(case["chisq"], abs=CHISQ_ABSOLUTE)


def test_gaussian_references_are_refused_for_slopes():
    case = _reference()["tests"]["crossed_subject_slope"]
    with pytest.raises(BayesreproError, match="^--reference exact-rlrt is not available for binary models with "
                                              "random slopes; use --reference chi2 or bootstrap$"):
        glrt(case["h0"], case["h1"], HERE / "data" / "binary_crossed.csv.gz", reference="exact-rlrt",
             family="bernoulli")


def test_quadrature_is_refused_for_slopes():
    model = br.Model("y ~ c + (1 + c | subject)", HERE / "data" / "binary_crossed.csv.gz", family="bernoulli")
    with pytest.raises(BayesreproError, match=r"^binary models with random slopes are fitted by the Laplace "
                                              r"approximation only; leave nagq= at 1$"):
        model.fit(nagq=3)


@pytest.mark.ondemand
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed")
def test_reference_script_reproduces_the_stored_values(tmp_path):
    """Re-run the R script into a temporary folder (it reads verbagg.csv.gz there): the same fits as stored, to
    bobyqa's reproducibility across runs (SDs moved by up to 2e-6 relative between two runs on one machine)."""
    shutil.copy(HERE / "data" / "verbagg.csv.gz", tmp_path)
    out = tmp_path / "glmer_slopes.json"
    subprocess.run(["Rscript", str(HERE / "reference" / "glmer_slopes.R"), str(out), str(tmp_path)], check=True,
                   capture_output=True)
    fresh, stored = json.loads(out.read_text()), _reference()
    for key, model in stored["models"].items():
        assert fresh["models"][key]["loglik"] == pytest.approx(model["loglik"], abs=1e-6)
        assert [row["sdcor"] for row in fresh["models"][key]["varcorr"]] == pytest.approx(
            [row["sdcor"] for row in model["varcorr"]], rel=1e-5)
    for key, case in stored["tests"].items():
        assert fresh["tests"][key]["chisq"] == pytest.approx(case["chisq"], abs=1e-6)
