"""Agreement with lme4 on public datasets shipped with lme4 and on the papers' data.

The reference numbers were produced by tests/reference/lme4_public.R and
lme4_papers.R (R 4.2.2, lme4 1.1-31, Matrix 1.5-3; versions recorded in the
JSON files). Tolerances: variance components within 0.1 % relative (or 1e-6
of the total where a component is at the boundary); fixed effects within
1e-4 standard errors; and the criterion at our optimum no worse than lme4's
at its own (beyond 1e-6: both are converged optimisations of the same function).
"""

import json
from pathlib import Path

import pandas as pd
import pytest

from bayesrepro.frequentist.lmm import fit_lmm

HERE = Path(__file__).parent
PUBLIC = json.loads((HERE / "reference" / "lme4_public.json").read_text())
FAST_MODELS = ["dyestuff", "penicillin", "pastes"]
LARGE_MODELS = ["insteval", "insteval_sd"]  # 15–30 s each: marked slow


def load(dataset):
    return pd.read_csv(HERE.parent / PUBLIC["datasets"][dataset]["file"], dtype=str).pipe(_numeric_response, dataset)


def _numeric_response(frame, dataset):
    response = PUBLIC["datasets"][dataset]["columns"][-1]
    frame[response] = pd.to_numeric(frame[response])
    return frame


def check_against_lme4(name, method):
    reference = PUBLIC["models"][name][method]
    fit = fit_lmm(reference["formula"], load(PUBLIC["models"][name]["dataset"]), method=method.lower())
    assert fit.converged, fit.message
    total = sum(reference["variances"].values())
    for component, variance in reference["variances"].items():
        assert fit.variances[component] == pytest.approx(variance, rel=1e-3, abs=1e-6 * total), component
    lme4_criterion = reference["reml_criterion"] if method == "REML" else reference["deviance"]
    assert fit.criterion <= lme4_criterion + 1e-6
    lme4_beta = list(reference["fixed_effects"].values())
    lme4_se = list(reference["std_errors"].values())
    for ours, theirs, se in zip(fit.beta, lme4_beta, lme4_se):
        assert ours == pytest.approx(theirs, abs=1e-4 * se)
    for ours, theirs in zip(fit.se, lme4_se):
        assert ours == pytest.approx(theirs, rel=1e-3)


@pytest.mark.parametrize("method", ["REML", "ML"])
@pytest.mark.parametrize("name", FAST_MODELS)
def test_small_public_datasets(name, method):
    check_against_lme4(name, method)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["REML", "ML"])
@pytest.mark.parametrize("name", LARGE_MODELS)
def test_two_large_crossed_factors(name, method):
    """InstEval: 2,972 students × 1,128 lecturers, 73,421 ratings."""
    check_against_lme4(name, method)
