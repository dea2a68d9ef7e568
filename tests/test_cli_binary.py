"""The command line on 0/1 scores: one --family everywhere, vca's JSON schema kept, baselines beside the GLMM."""

import json
from types import SimpleNamespace

import pytest

from bayesrepro.cli import main
from bayesrepro.simulate import binary_grid

FORMULA = "correct ~ system + (1|item) + (1|system:seed) + (1|prompt)"


@pytest.fixture(scope="module")
def grid_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("binary") / "grid.csv"
    binary_grid(items=120, seeds=3, prompts=3, random_state=21).to_csv(path, index=False)
    return str(path)


@pytest.fixture
def bayesrepro(capsys):
    """The command in this process: its exit status, stdout and stderr."""
    def run(*args):
        status = main(list(args))
        captured = capsys.readouterr()
        return SimpleNamespace(returncode=status, stdout=captured.out, stderr=captured.err)
    return run


def test_vca_fits_zero_one_scores_as_bernoulli_and_keeps_its_json_schema(grid_file, bayesrepro):
    run = bayesrepro("vca", grid_file, "--formula", FORMULA, "--json")
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert {"method", "n_obs", "components", "phi", "object", "loglik", "reml_criterion", "converged",
            "boundary", "notes"} <= set(payload)
    assert (payload["family"], payload["link"], payload["scale"], payload["method"]) == ("bernoulli", "logit", "latent", "ml")
    components = {c["name"]: c["variance"] for c in payload["components"]}
    assert list(components) == ["item", "system:seed", "prompt", "Residual"]
    assert components["Residual"] == pytest.approx(3.289868, abs=1e-6)   # π²/3
    assert payload["phi"] == pytest.approx(components["item"] / sum(components.values()))
    assert 0 < payload["phi_observed"] < payload["phi"]
    assert sum("0/1: fitted as a Bernoulli model" in note for note in payload["notes"]) == 1


@pytest.mark.slow   # two Bernoulli posteriors of 1,000 draws: about 70 s
def test_phi_gives_the_posterior_on_both_scales_and_the_probit_link(grid_file, bayesrepro):
    runs = {link: bayesrepro("phi", grid_file, "--formula", "correct ~ system + (1|item) + (1|system:seed)",
                             "--link", link, "--draws", "500", "--tune", "500", "--seed", "1", "--json")
            for link in ("logit", "probit")}
    for link, run in runs.items():
        assert run.returncode == 0, run.stderr
        payload = json.loads(run.stdout)
        assert (payload["phi"]["scale"], payload["phi_observed"]["scale"]) == ("latent", "observed")
        assert 0 < payload["phi_observed"]["median"] < payload["phi"]["median"]
        residual = next(c["median"] for c in payload["components"] if c["name"] == "Residual")
        assert residual == pytest.approx(3.289868 if link == "logit" else 1.0, abs=1e-6)
        assert any(f"latent ({link}) scale" in note for note in payload["notes"])


def test_gaussian_family_on_zero_one_scores_only_when_asked(grid_file, bayesrepro):
    run = bayesrepro("vca", grid_file, "--formula", FORMULA, "--family", "gaussian", "--json")
    payload = json.loads(run.stdout)
    assert (payload["family"], payload["scale"], payload["method"]) == ("gaussian", "observed", "reml")
    assert not [note for note in payload["notes"] if "0/1" in note]   # no family note; phi's object is noted


def test_glrt_tests_nested_bernoulli_models(grid_file, bayesrepro):
    run = bayesrepro("glrt", grid_file, "--h0", "correct ~ 1 + (1|item) + (1|system:seed)",
                     "--h1", "correct ~ system + (1|item) + (1|system:seed)", "--family", "bernoulli", "--json")
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["family"] == "bernoulli" and payload["df"] == 2
    assert payload["chi2"] == pytest.approx(2 * (payload["loglik_h1"] - payload["loglik_h0"]))


def test_baselines_sit_beside_the_glmm(grid_file, bayesrepro):
    run = bayesrepro("baselines", grid_file, "--score", "correct", "--item", "item", "--system", "system",
                     "--formula", FORMULA, "--json")
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert [row["system"] for row in payload["baselines"]["systems"]] == ["A", "B", "C"]
    assert [row["contrast"] for row in payload["glmm"]["contrasts"]] == ["A - B", "A - C", "B - C"]
    text = bayesrepro("baselines", grid_file, "--score", "correct", "--item", "item", "--system", "system",
                      "--formula", FORMULA).stdout
    assert "Wilson" in text and "odds_ratio" in text and "GLRT" in text


@pytest.mark.parametrize("args, message", [
    (("vca", "{file}", "--formula", FORMULA, "--method", "reml"), "--method reml applies to Gaussian scores"),
    (("vca", "{file}", "--formula", FORMULA, "--family", "gaussian", "--link", "probit"), "--link probit applies to 0/1"),
    (("vca", "{file}", "--formula", FORMULA, "--nagq", "5"), "integrates over one grouping factor"),
    (("baselines", "{file}", "--score", "seed", "--item", "item", "--system", "system"), "must hold 0/1 scores"),
    (("baselines", "{file}", "--score", "correct", "--item", "item", "--system", "system", "--formula",
      "correct ~ 1 + (1|item)"), "'system' is not a fixed effect"),
])
def test_bad_binary_options_fail_in_one_line(grid_file, bayesrepro, args, message):
    run = bayesrepro(*(a.format(file=grid_file) for a in args))
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], run.stderr
