"""`compare` on binary models with random slopes: the GLRT and contrasts against glmer
(tests/reference/glmer_compare_slopes.R and its JSON), the slope-aware parametric bootstrap, the command's JSON;
the bootstrap against known truth (slow)."""

import json
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import chi2

import bayesrepro as br
from bayesrepro.api.display import prose_for_reader
from bayesrepro.compare_binary import binary_comparison
from bayesrepro.data import read_table
from bayesrepro.errors import ConvergenceWarning
from bayesrepro.frequentist.binary_bootstrap import binary_bootstrap_lrt
from bayesrepro.frequentist.binary_slope_bootstrap import binary_slope_bootstrap
from bayesrepro.frequentist.covariance_structure import TERM_VARIANCE_NOTE
from bayesrepro.frequentist.glmm import fit_glmm_frame
from bayesrepro.frequentist.glrt import BINARY_SLOPES_REASON, nested_frames
from bayesrepro.simulate import binary_system_slopes

HERE = Path(__file__).parent
REFERENCE = HERE / "reference" / "glmer_compare_slopes.json"
DATA = HERE / "data" / "binary_system_slopes.csv.gz"
FORMULA = "y ~ system + (1 + system | subject) + (1 | item)"
# glmer's parity target for binary slope models (issue 22): 2e-3 relative
RELATIVE = 2e-3


def _reference() -> dict:
    return json.loads(REFERENCE.read_text())


@pytest.fixture(scope="module")
def reference_comparison():
    model = br.Model(FORMULA, read_table(DATA))
    return binary_comparison(model.frame, model.family, "system", None, None)


def test_glrt_of_a_factor_with_its_own_random_slope_matches_glmer(reference_comparison):
    """H0 drops the fixed system terms and keeps (1 + system | subject), as anova(m0, m1) of the R script."""
    reference, test = _reference(), reference_comparison.test
    assert test.h0.formula == "y ~ 1 + (1 + system|subject) + (1|item)"
    assert test.df == reference["df"] and test.reason == BINARY_SLOPES_REASON
    assert test.chi2 == pytest.approx(reference["chisq"], rel=RELATIVE)
    assert [test.h0.loglik, test.h1.loglik] == pytest.approx([reference["loglik0"], reference["loglik1"]], rel=1e-6)


def test_contrasts_match_glmer(reference_comparison):
    ours = reference_comparison.contrasts.set_index("contrast")
    for row in _reference()["contrasts"]:
        mine = ours.loc[row["contrast"]]
        assert [mine["estimate"], mine["std_error"], mine["p"]] == pytest.approx(
            [row["estimate"], row["std_error"], row["p"]], rel=RELATIVE)
        assert mine["reference"] == "Wald z"


def _small_fit(seed=3):
    model = br.Model(FORMULA, binary_system_slopes(subjects=6, items=10, random_state=seed))
    return model.frame, fit_glmm_frame(model.frame, model.family)


def test_bootstrap_replicates_have_the_fits_components_and_phi():
    frame, fit = _small_fit()
    boot, unconverged, observed = binary_slope_bootstrap(fit, frame, 2, np.random.default_rng(7), "item")
    assert list(boot.columns) == list(fit.components) and len(boot) == 2 and unconverged <= 2
    assert (boot["Residual"] == fit.residual_variance).all()
    assert (boot[["subject", "item"]] >= 0).all().all() and boot["subject"].std() > 0
    assert observed.shape == (2,) and ((observed >= 0) & (observed < 1)).all()
    again, _, observed_again = binary_slope_bootstrap(fit, frame, 2, np.random.default_rng(7), "item")
    assert again.equals(boot) and np.array_equal(observed_again, observed)
    _, _, none = binary_slope_bootstrap(fit, frame, 1, np.random.default_rng(7))
    assert none is None


def test_bootstrap_reference_of_a_slope_glrt_refits_both_models():
    data = binary_system_slopes(subjects=6, items=10, random_state=4)
    frame0, frame1 = nested_frames("y ~ 1 + (1 + system | subject) + (1 | item)", FORMULA, data)
    family = br.Model(FORMULA, data).family
    fit0, fit1 = (fit_glmm_frame(frame, family) for frame in (frame0, frame1))
    simulated = binary_bootstrap_lrt(frame0, frame1, fit0, fit1, 2, seed=1)
    assert simulated.statistic == pytest.approx(2 * (fit1.loglik - fit0.loglik))
    assert simulated.sample.shape == (2,) and (simulated.sample >= 0).all() and simulated.sample.max() > 0


SHORT = dict(n_boot=100, draws=200, tune=200, chains=2, allow_unconverged=True)
SHORT_FLAGS = ["--bootstrap", "100", "--draws", "200", "--tune", "200", "--chains", "2", "--allow-unconverged"]


@pytest.mark.slow
def test_compare_end_to_end_and_the_command_json(tmp_path, capsys):
    """12 subjects x 2 systems x 20 items: both engines side by side, the posterior contrast next to the Wald one;
    the command's --json equals to_dict()."""
    import bayesrepro.cli as cli

    data = tmp_path / "scores.csv"
    binary_system_slopes(subjects=12, items=20, random_state=11).to_csv(data, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # the short run's sampler need not converge
        compared = br.Model(FORMULA, data, object="item").compare(**SHORT)
    side = compared.side
    assert side.method == "ML (Laplace)" and len(side.bootstrap) == 100 and TERM_VARIANCE_NOTE in side.notes
    estimates = side.estimates.set_index(["quantity", "component"])
    for key in (("variance", "subject"), ("variance", "item"), ("phi", "item"), ("phi_observed", "item")):
        row = estimates.loc[key]
        assert row["boot_low"] <= row["reml"] <= row["boot_high"] and row["low"] <= row["median"] <= row["high"]
    contrast = side.contrasts.iloc[0]
    assert abs(contrast["post_median"] - contrast["estimate"]) < contrast["std_error"]
    code = cli.main(["compare", str(data), "--formula", FORMULA, "--object", "item", *SHORT_FLAGS, "--json"])
    assert code in (0, 3)
    # the command's notes name its options; to_dict, read from Python, names the keyword arguments
    assert prose_for_reader(json.loads(capsys.readouterr().out)) == json.loads(json.dumps(compared.to_dict()))


@pytest.mark.slow
def test_bootstrap_intervals_cover_the_true_term_variances():
    """Five data sets of 10 subjects x 2 systems x 16 items from known truth, 40 replicates each: the 90 %
    bootstrap interval of each term variance (subject: mean of z'Σz over the rows, 1 + (2·0.3·0.6 + 0.36)/2 = 1.36;
    item: 0.64) holds the truth in at least four of the five."""
    truth = {"subject": 1.0 + (2 * 0.3 * 0.6 + 0.36) / 2, "item": 0.64}
    covered = {name: 0 for name in truth}
    for seed in range(5):
        model = br.Model(FORMULA, binary_system_slopes(subjects=10, items=16, random_state=100 + seed))
        boot, _, _ = binary_slope_bootstrap(fit_glmm_frame(model.frame, model.family), model.frame, 40, np.random.default_rng(seed))
        for name, value in truth.items():
            low, high = np.quantile(boot[name], [0.05, 0.95])
            covered[name] += low <= value <= high
    assert min(covered.values()) >= 4, covered


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript is not installed")
def test_reference_script_reproduces_the_stored_values(tmp_path):
    out = tmp_path / "glmer_compare_slopes.json"
    subprocess.run(["Rscript", str(HERE / "reference" / "glmer_compare_slopes.R"), str(out), str(tmp_path)],
                   check=True, capture_output=True)
    fresh, stored = json.loads(out.read_text()), _reference()
    assert read_table(tmp_path / stored["data"]).equals(read_table(DATA))
    assert fresh["chisq"] == pytest.approx(stored["chisq"], abs=1e-6)
    assert [row["std_error"] for row in fresh["contrasts"]] == pytest.approx(
        [row["std_error"] for row in stored["contrasts"]], rel=1e-5)


@pytest.mark.slow
def test_glrt_command_calibrates_a_binary_slope_test_by_the_bootstrap(tmp_path):
    """20 refits of both models under H0's Laplace fit: the command reports the simulated reference."""
    data = tmp_path / "scores.csv"
    binary_system_slopes(subjects=6, items=10, systems={"a": 0.0, "b": 0.0}, random_state=5).to_csv(data, index=False)
    run = subprocess.run([sys.executable, "-m", "bayesrepro", "glrt", str(data), "--h0",
                          "y ~ 1 + (1 + system | subject) + (1 | item)", "--h1", FORMULA, "--reference", "bootstrap",
                          "--bootstrap-samples", "20", "--seed", "3", "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["method"] == "bootstrap" and payload["reason"] == "requested"
    assert 1 / 21 <= payload["p"] <= 1 and payload["p_asymptotic"] == pytest.approx(chi2.sf(payload["chi2"], 1))
