"""Satterthwaite, Kenward–Roger and the exact RLRT against lmerTest, pbkrtest and RLRsim.

The reference figures were computed by tests/reference/small_sample.R (R 4.2,
lme4 1.1-31, lmerTest 3.1-3, pbkrtest 0.5.2, RLRsim 3.1-8) and stored in
tests/reference/small_sample.json; the simulated designs it used are
tests/data/small_sample_*.csv.gz. The R fits ran bobyqa to rhoend = 1e-12, so
both engines sit at the same optimum and degrees of freedom, F statistics and
p-values must agree to 1e-4 relative (what the small-sample methods promise to
reproduce; the derivatives lmerTest takes numerically are good to about 1e-7).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame
from bayesrepro.frequentist.ddf import small_sample_inference, t_p_values
from bayesrepro.frequentist.glrt import glrt, nested_frames
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.frequentist.rlrt import rlrt_eigenvalues, rlrt_null_sample
from bayesrepro.properties import length_class

HERE = Path(__file__).parent
REFERENCE = json.loads((HERE / "reference" / "small_sample.json").read_text())
RELATIVE = 1e-4


def _data(name: str, where: str | None):
    path = HERE.parent / name
    frame = read_table(str(path) if path.exists() else name)
    if "src_length" in frame:
        frame["len"] = length_class(frame["src_length"])
    if where:
        count = int(re.fullmatch(r"the first (\d+) sentence ids in sorted order", where).group(1))
        ids = sorted(frame["sentence_id"].astype(str).unique())[:count]
        frame = frame[frame["sentence_id"].astype(str).isin(ids)]
    return frame


def _our_name(r_name: str, variables: list[str]) -> str:
    """lme4's coefficient name (systemMarking:lenvery long) in our coding (system[Marking]:len[very long])."""
    if r_name == "(Intercept)":
        return "Intercept"
    parts = []
    for part in r_name.split(":"):
        variable = max((v for v in variables if part.startswith(v)), key=len)
        level = part[len(variable):]
        parts.append(f"{variable}[{level}]" if level else variable)
    return ":".join(parts)


def _case(key: str):
    case = REFERENCE["fixed"][key]
    frame = build_model_frame(case["formula"], _data(case["data"], case["where"]))
    fit = fit_model_frame(frame, "reml")
    names = [_our_name(n, list(frame.spec.fixed_variables)) for n in case["coefficients"]]
    order = [frame.fixed_names.index(n) for n in names]      # our position of each of R's coefficients

    def ours(vector):
        out = np.zeros(len(order))
        out[order] = vector
        return out

    return case, frame, fit, ours


FIXED = sorted(REFERENCE["fixed"])


@pytest.mark.parametrize("key", FIXED)
def test_same_optimum_as_lme4(key):
    case, _, fit, ours = _case(key)
    assert fit.criterion == pytest.approx(case["reml_criterion"], abs=1e-6 * abs(case["reml_criterion"]) + 1e-7)
    np.testing.assert_allclose(fit.beta, ours(case["beta"]), rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("key", FIXED)
def test_satterthwaite_f_test_equals_lmertest(key):
    case, frame, fit, ours = _case(key)
    L = np.array([ours(row) for row in case["L"]])
    result = small_sample_inference(frame.stats(), fit).f_test(L, "satterthwaite")
    expected = case["satterthwaite"]
    assert result.ndf == expected["ndf"]
    assert result.ddf == pytest.approx(expected["ddf"], rel=RELATIVE)
    assert result.f == pytest.approx(expected["F"], rel=RELATIVE)
    assert result.p == pytest.approx(expected["p"], rel=RELATIVE)


@pytest.mark.parametrize("key", [k for k in FIXED if REFERENCE["fixed"][k]["kenward_roger"]])
def test_kenward_roger_f_test_equals_pbkrtest(key):
    case, frame, fit, ours = _case(key)
    L = np.array([ours(row) for row in case["L"]])
    result = small_sample_inference(frame.stats(), fit).f_test(L, "kenward-roger")
    expected = case["kenward_roger"]
    assert result.ndf == expected["ndf"]
    assert result.ddf == pytest.approx(expected["ddf"], rel=RELATIVE)
    assert result.scaling == pytest.approx(expected["scaling"], rel=RELATIVE)
    assert result.f == pytest.approx(expected["F"], rel=RELATIVE)
    assert result.p == pytest.approx(expected["p"], rel=RELATIVE)


@pytest.mark.parametrize("key", FIXED)
def test_contrast_t_tests_equal_lmertest_and_pbkrtest(key):
    case, frame, fit, ours = _case(key)
    inference = small_sample_inference(frame.stats(), fit)
    for contrast in case["contrasts"]:
        l = ours(contrast["l"])[None, :]
        assert float((l @ fit.beta)[0]) == pytest.approx(contrast["estimate"], rel=1e-6, abs=1e-9)
        for method, key_ in (("satterthwaite", "satterthwaite"), ("kenward-roger", "kenward_roger")):
            expected = contrast[key_]
            if expected is None:
                continue
            se, df = inference.contrasts(l, method)
            assert se[0] == pytest.approx(expected["se"], rel=RELATIVE)
            assert df[0] == pytest.approx(expected["df"], rel=RELATIVE)
            assert t_p_values(l @ fit.beta, se, df)[0] == pytest.approx(expected["p"], rel=RELATIVE)


def test_glrt_reads_the_same_kenward_roger_test_from_the_model_pair():
    """The restriction matrix glrt builds from H0 and H1 gives pbkrtest's KRmodcomp of the selection L."""
    case = REFERENCE["fixed"]["ter250_system_replication"]
    result = glrt(case["formula_h0"], case["formula"], _data(case["data"], case["where"]), reference="kenward-roger")
    assert result.details["ddf"] == pytest.approx(case["kenward_roger"]["ddf"], rel=RELATIVE)
    assert result.details["f"] == pytest.approx(case["kenward_roger"]["F"], rel=RELATIVE)
    assert result.p == pytest.approx(case["kenward_roger"]["p"], rel=RELATIVE)
    satterthwaite = glrt(case["formula_h0"], case["formula"], _data(case["data"], case["where"]),
                         reference="satterthwaite")
    assert satterthwaite.details["ddf"] == pytest.approx(case["satterthwaite"]["ddf"], rel=RELATIVE)


@pytest.mark.parametrize("key", sorted(REFERENCE["rlrt"]))
def test_exact_rlrt_equals_rlrsim(key):
    case = REFERENCE["rlrt"][key]
    data = _data(case["data"], None)
    frame0, frame1 = nested_frames(case["formula_h0"], case["formula"], data)
    mu = rlrt_eigenvalues(frame1.stats(), frame1.group_names.index(case["tested"]))
    np.testing.assert_allclose(mu, case["mu"], rtol=1e-6, atol=1e-10)
    result = glrt(case["formula_h0"], case["formula"], data, reference="exact-rlrt", seed=1)
    statistic = result.details["statistic"]
    assert statistic == pytest.approx(case["statistic"], rel=RELATIVE, abs=1e-6)
    draws = result.details["samples"]
    if statistic == 0:
        # RLRsim compares a statistic of 1e-11 (rounding) with its draws and so estimates P(RLRT > 0);
        # a statistic of exactly zero has p = 1 (every draw reaches it)
        assert result.p == 1.0
        sample = rlrt_null_sample(mu, frame1.n_obs, frame1.n_fixed, draws, np.random.default_rng(1))
        observed = float(np.mean(sample > 0))
    else:
        observed = result.p
    # both are Monte-Carlo estimates: RLRsim's from case["nsim"] draws, ours from `draws`
    se = np.sqrt(case["p"] * (1 - case["p"]) * (1 / case["nsim"] + 1 / draws))
    assert abs(observed - case["p"]) <= 4 * se + 2 / draws
