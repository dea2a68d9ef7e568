"""Hostile inputs to random-slope models: each is fitted right (against lme4, tests/reference/lme4_slope_inputs.R
and its JSON) or refused in one line naming the column, term or argument."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bayesrepro as br
from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame, parse_formula
from bayesrepro.design.random_design import random_design
from bayesrepro.frequentist.covariance_structure import varcorr_rows

HERE = Path(__file__).parent
SLEEP = HERE / "data" / "sleepstudy.csv.gz"
REFERENCE = json.loads((HERE / "reference" / "lme4_slope_inputs.json").read_text())
CRITERION_ABSOLUTE = 1e-3   # lme4 prints its REML criterion to 1e-3 and stops its optimiser near there


@pytest.fixture(scope="module")
def sleep():
    data = read_table(SLEEP)
    data["parity"] = np.where(data["Days"] % 2 == 0, "even", "odd")
    data["half"] = np.where(data["Days"] < 5, "early", "late")
    data["subject_number"] = data["Subject"].astype(float)
    data["cohort"] = np.where(data["subject_number"] % 2 == 0, "A", "B")   # constant within each subject
    return data


def _refused(formula, data, match, **options):
    with pytest.raises(br.BayesreproError, match=match) as error:
        br.Model(formula, data, **options).fit()
    assert "\n" not in str(error.value)


def test_infinite_slope_values_are_refused_by_column(sleep):
    data = sleep.assign(hours=sleep["Days"] * 24.0)
    data.loc[3, "hours"] = np.inf
    _refused("Reaction ~ Days + (hours|Subject)", data, r"slope column 'hours' .* 1 infinite value")


@pytest.mark.parametrize("slope", ["parity", "0 + parity"])
def test_a_categorical_slope_with_one_level_in_the_rows_is_refused(sleep, slope):
    _refused(f"Reaction ~ Days + ({slope}|Subject)", sleep, r"categorical slope column 'parity' .* single level 'even'",
             where="parity == 'even'")


@pytest.mark.parametrize("factor", [1e-9, 1e9])
def test_slopes_far_from_unit_scale_are_refused_with_the_rescaling(sleep, factor):
    data = sleep.assign(x=sleep["Days"] * factor)
    _refused("Reaction ~ x + (x|Subject)", data, r"slope 'x' of random-effect term '\(1 \+ x\|Subject\)'.*rescale")


def test_slopes_within_the_accepted_scales_give_one_phi(sleep):
    reference = br.Model("Reaction ~ Days + (Days|Subject)", sleep).fit().phi
    for factor in (1e-3, 1e3):
        data = sleep.assign(x=sleep["Days"] * factor)
        assert br.Model("Reaction ~ x + (x|Subject)", data).fit().phi == pytest.approx(reference, rel=1e-5)


@pytest.mark.parametrize("slope", ["subject_number", "cohort"])
def test_between_level_slopes_are_refused(sleep, slope):
    _refused(f"Reaction ~ Days + (1 + {slope}|Subject)", sleep, r"does not vary within any level of 'Subject'")


def test_a_slope_of_its_own_grouping_column_is_refused(sleep):
    _refused("Reaction ~ Days + (Subject|Subject)", sleep, r"slope of its own grouping column 'Subject'")
    _refused("Reaction ~ Days + (0 + Days|Days:Subject)", sleep, r"slope of its own grouping column 'Days'")


@pytest.mark.parametrize("slope", ["Reaction", "0 + log(Reaction)"])
def test_a_slope_of_the_score_is_refused(sleep, slope):
    _refused(f"Reaction ~ Days + ({slope}|Subject)", sleep, r"has a slope of the score 'Reaction' itself")


@pytest.mark.parametrize("formula", ["Reaction ~ Days + ((1|Subject)|half)", "Reaction ~ Days + (1|Subject|half)"])
def test_nested_bars_are_refused(sleep, formula):
    _refused(formula, sleep, r"nests a bar in a bar")


def test_more_random_effects_than_rows_are_refused(sleep):
    data = sleep.assign(day_text=sleep["Days"].astype(str))   # a text column: one slope column per day but one
    _refused("Reaction ~ Days + (day_text|Subject)", data,
             r"18 levels × 10 columns \(Intercept, day_text\[1\], .*\) = 180 random effects for 180")


@pytest.mark.parametrize("formula", ["Reaction ~ Days + (1|Subject) + (Days|Subject)",
                                     "Reaction ~ Days + (parity||Subject)"])
def test_terms_repeating_an_effect_on_one_factor_are_refused(sleep, formula):
    _refused(formula, sleep, r"on 'Subject' repeat an effect")
    with pytest.raises(br.BayesreproError, match="repeat an effect"):
        br.Model(formula, sleep).glrt("Reaction ~ Days + (1|Subject)")


def test_phi_of_independent_terms_sums_the_factor_as_lme4_estimates_it(sleep):
    case = REFERENCE["uncorrelated"]
    fit = br.Model(case["formula"], sleep).fit()
    assert fit.to_dict()["reml_criterion"] == pytest.approx(case["reml"], abs=CRITERION_ABSOLUTE)
    subject = case["intercept_variance"] + case["mean_days_squared"] * case["slope_variance"]
    assert fit.phi == pytest.approx(subject / (subject + case["residual_variance"]), rel=1e-3)


def test_a_singular_interaction_slope_fits_as_lme4(sleep):
    case = REFERENCE["interaction"]
    result = br.Model(case["formula"], sleep).fit().to_dict()
    assert result["reml_criterion"] <= case["reml"] + CRITERION_ABSOLUTE
    assert case["singular"] and result["boundary"] == ["Subject"]


def test_correlations_of_a_rank_one_term_are_within_one(sleep):
    # a perfectly correlated intercept and slope: σ² t t' divided by its SDs rounds to 1 + 2e-16 at this σ²
    frame = build_model_frame(parse_formula("Reaction ~ Days + (Days|Subject)", slopes=True), sleep)
    design = random_design(frame.spec, frame.data)
    rows = varcorr_rows(design, np.array([2.4848307555231206, -0.5448051817850326, 0.0]), 550.0440939853864)
    assert [row["sdcor"] for row in rows if row["var2"] is not None] == [-1.0]


def test_command_refuses_in_one_line_with_exit_status_2():
    run = subprocess.run([sys.executable, "-m", "bayesrepro", "vca", str(SLEEP), "--formula",
                          "Reaction ~ Days + (1|Subject) + (Days|Subject)"], capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0 and "repeat an effect" in run.stderr


def test_a_slope_factor_without_replication_is_refused_by_its_term(sleep):
    _refused("Reaction ~ Days + (Days|single)", sleep.assign(single="all"), r"remove \(1 \+ Days\|single\)")
    first_rows = sleep.groupby("Subject").head(1)
    _refused("Reaction ~ Days + (Days|Subject)", first_rows, r"18 levels for 18 observations.*\(1 \+ Days\|Subject\)")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="needs R with lme4 and jsonlite")
def test_the_stored_lme4_references_are_what_lme4_gives(tmp_path):
    out = tmp_path / "lme4_slope_inputs.json"
    subprocess.run(["Rscript", str(HERE / "reference" / "lme4_slope_inputs.R"), str(out)], check=True,
                   cwd=HERE.parent, capture_output=True, timeout=600)
    fresh = json.loads(out.read_text())
    for case in ("uncorrelated", "interaction"):
        assert fresh[case]["reml"] == pytest.approx(REFERENCE[case]["reml"], abs=CRITERION_ABSOLUTE)
