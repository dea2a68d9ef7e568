"""The instruments refuse what they cannot answer, and every run has a bound and shows progress."""

import io

import numpy as np
import pandas as pd
import pytest

from bayesrepro.cli import main
from bayesrepro.errors import BayesreproError
from bayesrepro.instruments import agreement, circularity_test, configuration_scores, expected_max
from bayesrepro.instruments.resampling import (MAX_RESAMPLED_CELLS, MAX_RESAMPLES, multi_bootstrap_test,
                                               paired_bootstrap_test, permutation_test)
from bayesrepro.progress import Progress


def cli(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_repeated_unit_and_rater_is_refused_naming_the_first():
    ratings = pd.DataFrame({"unit": ["u1", "u1", "u2", "u2", "u2"], "rater": ["A", "B", "A", "B", "B"],
                            "score": [1, 1, 0, 1, 0]})
    with pytest.raises(BayesreproError, match=r"rater 'B' rated the unit \(unit 'u2'\) 2 times"):
        agreement(ratings, "unit", "rater", "score")
    assert agreement(ratings.iloc[:4], "unit", "rater", "score").n_ratings == 4


def test_the_score_cannot_identify_a_configuration(capsys):
    frame = pd.DataFrame({"lr": ["a", "b", "c"] * 2, "acc": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]})
    with pytest.raises(BayesreproError, match="--config names the score column 'acc'"):
        configuration_scores(frame, ["lr", "acc"], "acc")
    code, _, err = cli(["budget", "sofa_mlp_grid", "--score", "accuracy", "--config", "accuracy"], capsys)
    assert code == 2 and err.startswith("bayesrepro: error: --config names the score column 'accuracy'")


def liver(n, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"x": rng.uniform(size=n), "z": rng.uniform(size=n)})
    return frame, np.sin(4 * frame["x"]) + rng.normal(0, 0.1, n)


@pytest.mark.parametrize("n, kwargs", [(5, {"df": 4}), (200, {"df": 40}), (60, {})])
def test_circularity_refuses_gams_that_would_fit_noise(n, kwargs):
    frame, predictions = liver(n)
    with pytest.raises(BayesreproError, match="needs at least 10 rows per coefficient"):
        circularity_test(frame, predictions, **kwargs)


def test_unrelated_predictions_explain_little_where_the_rule_allows_a_fit():
    # the rule's premise: with 10 rows per coefficient, D² of pure noise stays near (k - 1)/(n - 1)
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"x": rng.uniform(size=190), "z": rng.uniform(size=190)})
    result = circularity_test(frame, rng.normal(size=190))
    assert result.full_d2 < 0.2


def test_circularity_refuses_the_prediction_among_its_features(tmp_path, capsys):
    frame, predictions = liver(300)
    with pytest.raises(BayesreproError, match="feature 'p' holds the predictions themselves"):
        circularity_test(frame.assign(p=predictions), predictions)
    path = tmp_path / "p.csv"
    frame.assign(p=predictions).to_csv(path, index=False)
    code, _, err = cli(["circularity", str(path), "--prediction", "p", "--features", "x", "p"], capsys)
    assert code == 2 and "--features names the prediction column 'p'" in err


@pytest.mark.parametrize("test", [paired_bootstrap_test, permutation_test])
def test_resamples_are_bounded(test, monkeypatch):
    a, b = np.arange(1000.0), np.arange(1000.0)[::-1]

    def no_draws(*args, **kwargs):
        raise AssertionError("a random generator was made before the count was checked")

    monkeypatch.setattr(np.random, "default_rng", no_draws)   # refused before anything is drawn
    with pytest.raises(BayesreproError, match=f"--resamples must be a whole number from 1 to {MAX_RESAMPLES:,}, "
                                              "not 1000000000000"):
        test(a, b, n_resamples=10**12)
    with pytest.raises(BayesreproError, match=r"use at most 2,000,000 resamples here"):
        test(a, b, n_resamples=MAX_RESAMPLES)   # 1000 items x 1e7 resamples > 2e9 draws
    assert MAX_RESAMPLED_CELLS == 2_000_000_000


@pytest.mark.parametrize("kwargs, match", [
    ({"n_resamples": 0}, "--resamples must be a whole number from 1 to 10,000,000, not 0"),
    ({"n_resamples": -5}, "--resamples must be a whole number from 1 to 10,000,000, not -5"),
    ({"n_resamples": 2.5}, "--resamples must be a whole number from 1 to 10,000,000, not 2.5"),
    ({"seed": -1}, "--seed must be a whole number from 0 to 4,294,967,295, not -1"),
    ({"alternative": "bigger"}, "--alternative must be one of"),
])
def test_resampling_options_are_checked(kwargs, match):
    with pytest.raises(BayesreproError, match=match):
        paired_bootstrap_test(np.arange(10.0), np.arange(10.0) ** 2, **kwargs)
    with pytest.raises(BayesreproError, match=match):
        multi_bootstrap_test(np.ones((2, 10)) * np.arange(10.0), np.ones((2, 10)), **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"budgets": [10**12]}, "--budgets must be a whole number from 1 to 1,000,000, not 1000000000000"),
    ({"budgets": [1_000_000] * 2001}, "--budgets add up to 2,001,000,000 draws per resample"),
    ({"budgets": [1000], "n_resamples": 5_000_000}, "use at most 2,000,000 resamples"),
    ({"budgets": [0]}, "--budgets must be a whole number from 1 to 1,000,000, not 0"),
    ({"level": 1.0}, "--level must lie strictly between 0 and 1"),
    ({"level": float("nan")}, "--level must lie strictly between 0 and 1"),
    ({"seed": -3}, "--seed must be a whole number from 0 to 4,294,967,295, not -3"),
])
def test_budget_options_are_checked(kwargs, match):
    with pytest.raises(BayesreproError, match=match):
        expected_max(np.arange(20.0), **kwargs)


def test_progress_reaches_the_end_and_is_drawn_only_when_asked(capsys):
    seen = []
    paired_bootstrap_test(np.arange(50.0), np.arange(50.0)[::-1], n_resamples=100_000, seed=1, progress=seen.append)
    assert seen[-1] == 1.0 and seen == sorted(seen) and len(seen) > 1
    stream = io.StringIO()
    with Progress("bootstrap", enabled=True, stream=stream) as bar:
        bar.update(0.5)
    assert "bootstrap [" in stream.getvalue()
    code, out, err = cli(["permutation", "kreutzer_ter", "--item", "sentence_id", "--system", "system",
                          "--score", "ter", "--instance", "replication", "--a", "Baseline", "--b", "Marking",
                          "--resamples", "200", "--seed", "1"], capsys)
    assert code == 0 and err == ""   # stderr is not a terminal and --progress was not given
