"""`compare` on Gaussian random-slope models: the REML contrasts against lmerTest (tests/reference/compare_slopes.R
and its JSON), the plumbing of the bootstrap and the posterior, the command's JSON; coverage of known truth (slow)."""

import collections
import json
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.api.display import prose_for_reader
from bayesrepro.compare import SLOPE_LOO_NOTE, SLOPE_REFERENCE_REASON
from bayesrepro.data import read_table
from bayesrepro.errors import BayesreproError, ConvergenceWarning
from bayesrepro.frequentist.covariance_structure import TERM_VARIANCE_NOTE
from bayesrepro.plan.next_evaluation import SLOPE_PLANNING_REASON

HERE = Path(__file__).parent
DATA = HERE / "data" / "categorical_slope.csv.gz"
REFERENCE = HERE / "reference" / "compare_slopes.json"
FORMULA = "score ~ cond + (1 + cond | g)"
# short runs: the plumbing is checked here, not the posterior's accuracy
SHORT = dict(n_boot=100, draws=200, tune=200, chains=2, allow_unconverged=True)
SHORT_FLAGS = ["--bootstrap", "100", "--draws", "200", "--tune", "200", "--chains", "2", "--allow-unconverged"]


@pytest.fixture(scope="module")
def counted_comparison():
    """The short comparison, and how often each model was fitted by each method."""
    import bayesrepro.frequentist.lmm as lmm

    fits = collections.Counter()
    once = lmm.fit_frame_once

    def counted(frame, method):
        fits[frame.formula, method] += 1
        return once(frame, method)

    with pytest.MonkeyPatch.context() as patch, warnings.catch_warnings():
        patch.setattr(lmm, "fit_frame_once", counted)
        warnings.simplefilter("ignore", ConvergenceWarning)   # the short run's sampler need not converge
        return br.Model(FORMULA, read_table(DATA)).compare(**SHORT), fits


@pytest.fixture(scope="module")
def compared(counted_comparison):
    return counted_comparison[0]


def test_each_model_is_fitted_once(counted_comparison):
    assert counted_comparison[1] == {(FORMULA, "reml"): 1, (FORMULA, "ml"): 1, ("score ~ 1 + (1 + cond|g)", "ml"): 1}


def _assert_matches_lmertest(side, reference):
    ours = side.contrasts.set_index("contrast")
    for row in reference["contrasts"]:
        mine = ours.loc[row["contrast"]]
        assert mine["reference"] == "Satterthwaite t (REML)"
        np.testing.assert_allclose([mine["estimate"], mine["std_error"], mine["p"]],
                                   [row["estimate"], row["std_error"], row["p"]], atol=1e-4)
        # lmerTest's df come from numerical derivatives (numDeriv), good to about 1e-5
        np.testing.assert_allclose(mine["df"], row["df"], rtol=1e-4)
    test = side.tests[0]
    assert test["method"] == "satterthwaite" and test["reason"] == SLOPE_REFERENCE_REASON
    np.testing.assert_allclose([test["f"], test["ddf"], test["p"]],
                               [reference["anova"]["f"], reference["anova"]["ddf"], reference["anova"]["p"]],
                               rtol=1e-4)


def test_reml_contrasts_match_lmertest(compared):
    _assert_matches_lmertest(compared.side, json.loads(REFERENCE.read_text()))


def test_differences_of_slopes_by_a_numeric_property_match_lmertest():
    reference = json.loads(REFERENCE.read_text())["by_numeric"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        side = br.Model(reference["formula"], read_table(DATA)).compare(
            n_boot=100, draws=100, tune=100, chains=2, allow_unconverged=True).side
    assert side.by == "rep" and side.means is not None
    _assert_matches_lmertest(side, reference)


def test_both_engines_fill_every_row_and_say_what_is_left_out(compared):
    side = compared.side
    estimates = side.estimates.set_index(["quantity", "component"])
    assert set(estimates.index) == {(q, c) for q in ("variance", "percent") for c in ("g", "Residual")} | {("phi", "g")}
    assert estimates.notna().all().all()
    assert (estimates["boot_low"] <= estimates["boot_high"]).all() and (estimates["low"] <= estimates["high"]).all()
    assert len(side.bootstrap) == SHORT["n_boot"] and list(side.bootstrap.columns) == ["g", "Residual"]
    assert side.contrasts["post_median"].notna().all() and side.contrasts["p_direction"].between(0.5, 1).all()
    assert SLOPE_LOO_NOTE not in side.notes and TERM_VARIANCE_NOTE in side.notes
    assert np.isfinite(side.tests[0]["loo_elpd_diff"]) and side.tests[0]["loo_se"] > 0
    assert compared.to_dict()["planning"] == {"planned": False, "reason": SLOPE_PLANNING_REASON}


def test_command_json_equals_to_dict(compared, capsys):
    import bayesrepro.cli as cli

    code = cli.main(["compare", str(DATA), "--formula", FORMULA, *SHORT_FLAGS, "--json"])
    assert code in (0, 3)
    # the command's notes name its options; to_dict, read from Python, names the keyword arguments
    assert prose_for_reader(json.loads(capsys.readouterr().out)) == json.loads(json.dumps(compared.to_dict()))


# the truth of the simulated data: each item's intercept and its effects on systems b and c, and the residual SD
COVARIANCE = np.array(((1.0, 0.2, 0.1), (0.2, 0.5, 0.1), (0.1, 0.1, 0.4)))
RESIDUAL_SD = 0.8


def _simulated(seed: int, effects=(0.0, 0.6, -0.4), items=40, replicates=3) -> pd.DataFrame:
    """Treatment-coded system effects with correlated item effects on the intercept and each system's contrast."""
    rng = np.random.default_rng(seed)
    systems = np.array(["a", "b", "c"])
    item = np.repeat(np.arange(items), 3 * replicates)
    system = np.tile(np.repeat(np.arange(3), replicates), items)
    z = np.column_stack([np.ones(len(item)), system == 1, system == 2]).astype(float)
    u = rng.multivariate_normal(np.zeros(3), COVARIANCE, items)[item]
    score = 5.0 + np.asarray(effects)[system] + np.sum(z * u, axis=1) + rng.normal(0, RESIDUAL_SD, len(item))
    return pd.DataFrame({"item": [f"i{k:02d}" for k in item], "system": systems[system], "score": score})


@pytest.mark.slow
def test_intervals_cover_the_known_truth():
    # true term variance by the Johnson definition: mean of z'Σz over the rows (each system a third of them)
    z = np.eye(3)
    z[:, 0] = 1.0
    item_variance = float(np.mean([row @ COVARIANCE @ row for row in z]))
    truth = {"a - b": -0.6, "a - c": 0.4, "b - c": 1.0}
    seeds = range(4)
    covered = {"reml": 0, "posterior": 0, "bootstrap item": 0, "bootstrap residual": 0, "posterior item": 0}
    for seed in seeds:
        side = br.Model("score ~ system + (1 + system | item)", _simulated(seed)).compare(
            seed=seed, n_boot=300, draws=1500, tune=1000, chains=4).side
        contrasts = side.contrasts.set_index("contrast")
        for name, value in truth.items():
            covered["reml"] += contrasts.loc[name, "low"] <= value <= contrasts.loc[name, "high"]
            covered["posterior"] += contrasts.loc[name, "post_low"] <= value <= contrasts.loc[name, "post_high"]
        variances = side.estimates[side.estimates["quantity"] == "variance"].set_index("component")
        covered["bootstrap item"] += variances.loc["item", "boot_low"] <= item_variance <= variances.loc["item", "boot_high"]
        covered["bootstrap residual"] += variances.loc["Residual", "boot_low"] <= RESIDUAL_SD**2 <= variances.loc["Residual", "boot_high"]
        covered["posterior item"] += variances.loc["item", "low"] <= item_variance <= variances.loc["item", "high"]
    # 95 % intervals: in 4 seeds (12 contrasts) at most one miss each is well within chance
    assert covered["reml"] >= 11 and covered["posterior"] >= 11, covered
    assert min(covered[k] for k in ("bootstrap item", "bootstrap residual", "posterior item")) >= 3, covered


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed")
def test_reference_script_reproduces_the_stored_values(tmp_path):
    out = tmp_path / "compare_slopes.json"
    subprocess.run(["Rscript", str(HERE / "reference" / "compare_slopes.R"), str(out)], check=True, capture_output=True)
    fresh, stored = json.loads(out.read_text()), json.loads(REFERENCE.read_text())
    for new, old in ((fresh, stored), (fresh["by_numeric"], stored["by_numeric"])):
        for key in ("estimate", "std_error", "df", "p"):
            np.testing.assert_allclose([row[key] for row in new["contrasts"]], [row[key] for row in old["contrasts"]],
                                       rtol=1e-6)


def test_phi_of_independent_terms_counts_every_term_of_the_object_on_all_three_sides():
    """``(Days || Subject)``: REML φ as the fit's, the bootstrap's and the posterior's intervals around it."""
    data = read_table(HERE / "data" / "sleepstudy.csv.gz")
    data["system"] = np.where(data["Days"] % 2 == 0, "A", "B")
    model = br.Model("Reaction ~ system + Days + (Days||Subject)", data, object="Subject", categorical=["Subject"])
    side = model.compare(factor="system", **SHORT)
    phi = next(row for row in side.to_dict()["estimates"] if row["quantity"] == "phi")
    assert phi["reml"] == pytest.approx(model.fit().phi, rel=1e-9)
    assert phi["boot_low"] < phi["reml"] < phi["boot_high"] and phi["low"] < phi["reml"] < phi["high"]
