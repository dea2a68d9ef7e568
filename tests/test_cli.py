import json
import re
import subprocess
import sys

import pytest

ANNOTATION = (
    "score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater)"
    " + (1|sentence:occasion) + (1|rater:occasion)"
)


def bayesrepro(*args):
    return subprocess.run([sys.executable, "-m", "bayesrepro", *args], capture_output=True, text=True, timeout=300)


def test_vca_json_schema_and_values():
    run = bayesrepro("vca", "kreutzer_annotation", "--where", "mode == 'Post Edit'", "--formula", ANNOTATION,
                     "--object", "sentence", "--json")
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert {"method", "n_obs", "components", "phi", "object", "loglik", "reml_criterion", "converged"} <= set(payload)
    components = {c["name"]: c for c in payload["components"]}
    assert list(components)[-1] == "Residual"
    assert components["sentence"]["percent"] == pytest.approx(60.4, abs=0.1)
    assert payload["phi"] == pytest.approx(0.604, abs=0.001)
    assert payload["n_obs"] == 150


def test_glrt_json():
    run = bayesrepro("glrt", "kreutzer_ter", "--h0", "ter ~ 1 + (1|sentence_id)", "--h1", "ter ~ system + (1|sentence_id)", "--json")
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["df"] == 2
    assert payload["chi2"] == pytest.approx(34.09, abs=0.005)
    assert payload["chi2"] == pytest.approx(2 * (payload["loglik_h1"] - payload["loglik_h0"]))


@pytest.mark.parametrize(
    "args, message",
    [
        (("vca", "kreutzer_ter", "--formula", "ter ~ 1 + (1|sentense_id)"), "'sentense_id' is not a column of the data; did you mean 'sentence_id'"),
        (("vca", "no_such.csv", "--formula", "y ~ 1 + (1|g)"), "data file 'no_such.csv' does not exist"),
        (("glrt", "kreutzer_ter", "--h0", "ter ~ system + (1|sentence_id)", "--h1", "ter ~ 1 + (1|sentence_id)"), "models are not nested"),
        (("phi", "kreutzer_ter", "--formula", "ter ~ 1 + (src_length|sentence_id)"), "does not vary within any level of 'sentence_id'"),
        (("vca", "kreutzer_ter", "--formula", "system ~ 1 + (1|sentence_id)"), "score column 'system' is not numeric"),
    ],
)
def test_bad_input_is_one_line_on_stderr_with_nonzero_exit(args, message):
    run = bayesrepro(*args)
    assert run.returncode == 2
    assert run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], run.stderr


def test_demo_prints_the_papers_tables():
    run = bayesrepro("demo")
    assert run.returncode == 0, run.stderr
    # the published figures (thesis Table 2.2, Tables 3.1/3.2, lme4 on the full grid) in the printed tables
    chi2 = float(re.search(r"chi2 = ([\d.]+), df = 2", run.stdout).group(1))
    assert chi2 == pytest.approx(34.09, abs=0.005)
    assert re.search(r"p = 0\.517", run.stdout)
    sentence = [float(v) for v in re.findall(r"^\s+sentence\s+([\d.e-]+)", run.stdout, flags=re.M)]
    assert sentence == pytest.approx([0.0030, 0.0479], abs=1e-4)  # Marking, Post Edit
    sentence_id = [float(v) for v in re.findall(r"^\s+sentence_id\s+([\d.e-]+)", run.stdout, flags=re.M)]
    assert sentence_id[1] == pytest.approx(0.1081, abs=1e-4)  # partial grid, full grid, nested model
