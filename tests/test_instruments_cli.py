"""The instruments' subcommands, driven through their own argparse parsers."""

import argparse
import importlib
import json

import pandas as pd
import pytest

from bayesrepro.errors import COMMAND_LINE, BayesreproError
from bayesrepro.instruments.liver_sofa import FEATURES, fit_regression_tree, make_liver_data

COMMANDS = ("bootstrap", "permutation", "budget", "agreement", "circularity")


def run(argv, capsys):
    parser = argparse.ArgumentParser(prog="bayesrepro")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"bayesrepro.cli.{name}").register(subparsers)
    args = parser.parse_args(argv)
    command_line = COMMAND_LINE.set(True)   # as `bayesrepro` runs a command: errors name its options
    try:
        assert args.func(args) == 0
    finally:
        COMMAND_LINE.reset(command_line)
    return capsys.readouterr().out


def run_json(argv, capsys):
    return json.loads(run(argv + ["--json"], capsys))


@pytest.fixture
def two_raters(tmp_path):
    # the 2 x 2 table of the Cohen's kappa example (kappa = 0.4) in long form
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    frame = pd.DataFrame({"unit": list(range(50)) * 2, "who": ["A"] * 50 + ["B"] * 50, "code": a + b})
    path = tmp_path / "ratings.csv"
    frame.to_csv(path, index=False)
    return path


def test_agreement_json(two_raters, capsys):
    out = run_json(["agreement", str(two_raters), "--item", "unit", "--rater", "who", "--score", "code"], capsys)
    assert {"krippendorff_alpha", "cohen_kappa", "scott_pi", "n_items", "n_raters"} <= set(out)
    assert out["cohen_kappa"] == pytest.approx(0.4)
    assert out["scott_pi"] == pytest.approx(0.195 / 0.495)
    assert (out["n_items"], out["n_raters"]) == (50, 2)


def test_agreement_many_raters_reports_null_kappa(capsys):
    out = run_json(["agreement", "kreutzer_annotation", "--item", "sentence", "occasion", "--rater", "rater",
                    "--score", "score", "--level", "interval", "--where", "mode == 'Marking'"], capsys)
    assert out["cohen_kappa"] is None and out["scott_pi"] is None
    assert (out["n_items"], out["n_raters"]) == (15, 10)


def test_agreement_text_output(two_raters, capsys):
    out = run(["agreement", str(two_raters), "--item", "unit", "--rater", "who", "--score", "code"], capsys)
    assert "Cohen's kappa:        0.4000" in out


def test_bootstrap_and_permutation_on_kreutzer_ter(capsys):
    common = ["kreutzer_ter", "--item", "sentence_id", "--system", "system", "--score", "ter",
              "--instance", "replication", "--lower-is-better", "--resamples", "199", "--seed", "1"]
    boot = run_json(["bootstrap"] + common + ["--a", "Baseline", "--b", "Marking"], capsys)
    assert (boot["instance_a"], boot["instance_b"]) == ("1", "2")  # lowest mean TER per system
    assert boot["n_items"] == 1041 and boot["p_value"] >= 1 / 200
    multi = run_json(["bootstrap"] + common + ["--a", "Baseline", "--b", "Marking", "--instances", "multi"],
                     capsys)
    assert multi["n_instances_b"] == 3 and multi["method"].startswith("multi-bootstrap")
    perm = run_json(["permutation"] + common + ["--a", "Marking", "--b", "PostEdit"], capsys)
    assert perm["method"] == "approximate randomization" and 0 < perm["p_value"] <= 1


def test_budget_json_and_plot(tmp_path, capsys):
    plot = tmp_path / "curve.png"
    out = run_json(["budget", "kreutzer_marking_partial", "--score", "ter", "--config", "learning_rate", "seed",
                    "encoder_dropout", "decoder_dropout", "decoder_dropout_hidden", "delta_scheme",
                    "--lower-is-better", "--budgets", "1", "5", "54", "--resamples", "200", "--seed", "2",
                    "--plot", str(plot)], capsys)
    assert [row["budget"] for row in out["budgets"]] == [1, 5, 54]
    assert out["n_configurations"] == 54 and "never be better than" in out["note"]
    means = [row["closed_form_mean"] for row in out["budgets"]]
    assert means == sorted(means, reverse=True)  # lower is better: the best of more draws is lower
    assert plot.stat().st_size > 0


def test_circularity_json(tmp_path, capsys):
    train, test = make_liver_data(400, seed=3), make_liver_data(500, seed=4)
    tree = fit_regression_tree(train[list(FEATURES)], train["sofa_liver"], max_depth=4)
    path = tmp_path / "predictions.csv"
    test.assign(prediction=tree.predict(test[list(FEATURES)])).to_csv(path, index=False)
    out = run_json(["circularity", str(path), "--prediction", "prediction", "--features", *FEATURES,
                    "--defining", "bilirubin", "--max-size", "2"], capsys)
    assert out["candidate"] == ["bilirubin"] and out["circular"] is True


@pytest.mark.parametrize("argv, match", [
    (["agreement", "kreutzer_annotation", "--item", "sentence", "--rater", "rater", "--score", "scor"],
     "score column 'scor'"),
    (["agreement", "kreutzer_annotation", "--item", "sentence", "--rater", "rater", "--score", "mode",
      "--level", "interval"], "score column 'mode' is not numeric: .*; the interval level needs numbers"),
    (["agreement", "kreutzer_annotation", "--item", "sentence", "--rater", "rater", "--score", "score",
      "--where", "rater == '1'"], "at least 2"),
    (["permutation", "kreutzer_ter", "--item", "sentence_id", "--system", "system", "--score", "ter",
      "--a", "Baseline", "--b", "Marking"], "--instance"),
    (["bootstrap", "kreutzer_ter", "--item", "sentence_id", "--system", "system", "--score", "ter",
      "--a", "Baseline", "--b", "Marking", "--instances", "multi"], "--instance"),
])
def test_bad_input_names_the_option(argv, match, capsys):
    with pytest.raises(BayesreproError, match=match):
        run(argv, capsys)
