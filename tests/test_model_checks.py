"""Models that cannot be estimated are refused before any fit; formulas run no code."""

import numpy as np
import pandas as pd
import pytest

from bayesrepro.bayes import fit_bayes
from bayesrepro.cli import main
from bayesrepro.compare import compare
from bayesrepro.design import build_model_frame, model_frame
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.lmm import fit_lmm
from bayesrepro.reliability import ObjectChoice, default_object, object_of_measurement


def grid(n_items=20, n_seeds=4, seed=0):
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({
        "item": np.repeat([f"i{k}" for k in range(n_items)], n_seeds),
        "seed": np.tile([f"s{k}" for k in range(n_seeds)], n_items),
    })
    frame["group"] = frame["item"].map(lambda s: f"g{int(s[1:]) % 5}")
    item_effect = frame["item"].map(dict(zip(frame["item"].unique(), rng.normal(0, 1, n_items))))
    frame["score"] = item_effect + rng.normal(0, 0.5, len(frame))
    frame["item_only"] = item_effect
    frame["additive"] = item_effect + frame["seed"].map(lambda s: 0.3 * int(s[1:]))
    return frame


@pytest.mark.parametrize("formula, match", [
    # a constant score: refused before any family is chosen (no Bernoulli model of all-1.0 scores)
    ("ones ~ 1 + (1|item)", "score column 'ones' is constant \\(1 in every row\\)"),
    ("zeros ~ 1 + (1|item)", "is constant \\(0 in every row\\)"),
    # level indicators in the span of the fixed design
    ("score ~ item + (1|item)", "grouping factor 'item' cannot be estimated: the fixed-effect term 'item' already fixes"),
    ("score ~ group + (1|item) + (1|group)", "grouping factor 'group' .* term 'group'"),
    ("score ~ item + (1|group)", "grouping factor 'group' .* term 'item'"),
    # no residual left
    ("item_only ~ 1 + (1|item) + (1|seed)", "'item_only' does not vary within the levels of 'item'"),
    ("additive ~ seed + (1|item)", "'additive' does not vary within the levels of 'item' beyond the fixed effects"),
    ("additive ~ 1 + (1|item) + (1|seed)", "reproduce 'additive' exactly .* a sum of level effects without noise"),
    ("score ~ item * seed + (1|seed)", "but only 80 observations; it needs at least 82"),
    # a level for every row, or a single level
    ("score ~ 1 + (1|item:seed)", "'item:seed' has 80 levels for 80 observations"),
    ("score ~ 1 + (1|constant)", "'constant' has a single level"),
])
def test_unestimable_models_are_refused_in_one_line(formula, match):
    data = grid().assign(ones=1.0, zeros=0.0, constant="c")
    with pytest.raises(BayesreproError, match=match) as error:
        build_model_frame(formula, data)
    assert "\n" not in str(error.value)


def test_all_ones_score_is_refused_before_the_bayesian_family_choice():
    data = grid().assign(score=1.0)
    with pytest.raises(BayesreproError, match="is constant"):
        fit_bayes("score ~ 1 + (1|item)", data, draws=100, tune=100, chains=2)


def test_small_noise_is_not_mistaken_for_an_exact_fit():
    data = grid()
    data["additive"] += np.random.default_rng(1).normal(0, 1e-3, len(data))
    fit = fit_lmm("additive ~ 1 + (1|item) + (1|seed)", data)
    assert fit.variances["Residual"] == pytest.approx(1e-6, rel=0.5)


def test_confounded_factors_are_noted_in_the_fit():
    data = grid()
    data["alias"] = data["item"].str.replace("i", "a")
    fit = fit_lmm("score ~ 1 + (1|item) + (1|alias) + (1|seed)", data)
    assert any("'item' and 'alias' are confounded" in note for note in fit.notes)
    assert "note: grouping factors 'item' and 'alias' are confounded" in str(fit)


def test_the_same_checks_apply_to_frames_built_by_duckdb(tmp_path):
    path = tmp_path / "grid.csv"
    grid().to_csv(path, index=False)
    with pytest.raises(BayesreproError, match="the fixed-effect term 'item' already fixes"):
        model_frame("score ~ item + (1|item)", str(path), engine="duckdb")
    with pytest.raises(BayesreproError, match="does not vary within the levels of 'item'"):
        model_frame("item_only ~ 1 + (1|item) + (1|seed)", str(path), engine="duckdb")


def test_the_default_object_is_taken_only_when_the_choice_is_clear():
    # the single-column factor with most levels; an interaction that contains it may have more
    assert default_object({"a": 1, "b": 1, "a:b": 1}, {"a": 2, "b": 5, "a:b": 10}) == "b"
    choice = object_of_measurement({"item": 40, "seed": 3, "item:seed": 120})
    assert choice.name == "item" and "item (40 levels)" in choice.note and "--object" in choice.note
    assert object_of_measurement({"item": 40, "seed": 3}, "seed") == ObjectChoice("seed")   # named: no note
    refusals = [
        ({"a": 30, "b": 30}, "a and b both have the most levels (30)"),
        ({"item:seed": 300, "system": 2}, "system, the single-column factor with most levels, has 2, fewer than the 5"),
        ({"item:seed": 300, "prompt": 6}, "the interaction grouping item:seed has more levels (300) than prompt (6)"),
        ({"a:b": 4}, "no grouping factor is of a single column"),
    ]
    for n_levels, reason in refusals:
        with pytest.raises(BayesreproError) as refused:
            object_of_measurement(n_levels)
        message = str(refused.value)
        assert reason in message and "name it with --object" in message, message
        for name, n in n_levels.items():
            assert f"{name} ({n:,} levels)" in message   # the candidates are listed
    with pytest.raises(BayesreproError, match="has no \\(1\\|g\\) term"):
        default_object({}, {})


@pytest.mark.parametrize("command", [
    ["vca", "--json"], ["phi", "--draws", "100", "--chains", "2", "--json"],
    ["compare", "--bootstrap", "100", "--draws", "100", "--chains", "2", "--json"],
])
def test_no_command_reports_phi_of_a_guessed_object(command, tmp_path, capsys):
    # (1|item:seed) + (1|system): phi(system) of two systems would be 0 and "poor"; it must be refused instead
    rng = np.random.default_rng(4)
    rows = [(f"i{i}", s, seed, rng.normal()) for i in range(30) for s in "AB" for seed in range(5)]
    path = tmp_path / "grid.csv"
    pd.DataFrame(rows, columns=["item", "system", "seed", "score"]).to_csv(path, index=False)
    argv = [command[0], str(path), "--formula", "score ~ 1 + (1|item:seed) + (1|system)", *command[1:]]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("bayesrepro: error: phi needs an object of measurement") and "--object" in err
    assert "item:seed (150 levels), system (2 levels)" in err


def test_the_python_functions_apply_the_same_rule_and_note_the_default():
    rng = np.random.default_rng(4)
    rows = [(f"i{i}", s, seed, rng.normal(0, 1) + 0.5 * seed) for i in range(30) for s in "AB" for seed in range(5)]
    frame = pd.DataFrame(rows, columns=["item", "system", "seed", "score"])
    with pytest.raises(BayesreproError, match="phi needs an object of measurement"):
        compare("score ~ 1 + (1|item:seed) + (1|system)", frame, n_boot=100, draws=100, chains=2)
    with pytest.raises(BayesreproError, match="phi needs an object of measurement"):
        fit_bayes("score ~ 1 + (1|item:seed) + (1|system)", frame, draws=100, chains=2)
    fit = fit_bayes("score ~ 1 + (1|item) + (1|seed)", frame, draws=100, chains=2, seed=1, allow_unconverged=True)
    assert fit.object == "item" and any("phi's object of measurement is item (30 levels)" in n for n in fit.notes)


@pytest.mark.parametrize("term", [
    "np.save('written', seed)", "I(np.load('x'))", "open('x', 'w')", "read_table('x.csv')",
    "print(seed)", "Path('x')", "pd.read_csv('x')", "np.lib.format.os.system('true')",
    "C(seed, levels=np.save('y', 1))",
])
def test_a_formula_calls_only_the_listed_functions(term, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data = grid().assign(seed=np.tile([1.0, 2.0, 3.0, 4.0], 20))
    with pytest.raises(BayesreproError, match="which is not allowed; a formula may call"):
        build_model_frame(f"score ~ {term} + (1|item)", data)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("term", ["np.log(seed)", "log(seed)", "scale(seed)", "C(seed)", "{seed + 1}", "np.sqrt(seed)"])
def test_the_listed_functions_work(term):
    data = grid().assign(seed=np.tile([1.0, 2.0, 3.0, 4.0], 20))
    assert build_model_frame(f"score ~ {term} + (1|item)", data).n_fixed >= 2
