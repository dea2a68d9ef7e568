"""``Model.effects`` (``LevelEffects``) and the ``bayesrepro effects`` command: the JSON is the result's
``to_dict``, the text and HTML tables, the caterpillar plot and the refusals."""

import json

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.cli import main
from bayesrepro.errors import BayesreproError

FORMULA = "acc ~ 1 + (1|system) + (1|item)"


@pytest.fixture(scope="module")
def scores(tmp_path_factory):
    rng = np.random.default_rng(4)
    table = pd.DataFrame([(f"<b>s{s}</b>", f"i{i}") for s in range(8) for i in range(60)], columns=["system", "item"])
    table["acc"] = (rng.normal(0, 0.3, 8)[np.repeat(np.arange(8), 60)] + rng.normal(0, 1, 60)[np.tile(np.arange(60), 8)]
                    + rng.normal(0, 0.5, len(table)))
    path = tmp_path_factory.mktemp("effects") / "scores.csv"
    table.to_csv(path, index=False)
    return table, str(path)


def test_json_of_the_command_is_the_results_to_dict(scores, capsys):
    table, path = scores
    assert main(["effects", path, "--formula", FORMULA, "--group", "system", "--prob", "0.9", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    expected = br.Model(FORMULA, table).effects("system", prob=0.9).to_dict()
    assert printed == expected
    assert printed["engine"] == "frequentist" and printed["prob"] == 0.9 and printed["notes"] == []
    assert len(printed["effects"]) == 8
    assert set(printed["effects"][0]) == {"group", "term", "level", "estimate", "sd", "low", "high"}


def test_text_html_and_plot(scores):
    table, _ = scores
    effects = br.Model(FORMULA, table).effects()
    assert isinstance(effects, br.LevelEffects)
    assert len(effects.table) == 68
    text = effects.summary()
    assert "system: (Intercept) (8 levels)" in text
    assert "item: (Intercept) (60 levels; the 20 lowest and highest of 60)" in text
    page = effects._repr_html_()
    assert "<b>s0</b>" not in page and "&lt;b&gt;s0&lt;/b&gt;" in page
    figure = effects.plot()
    assert len(figure.axes) == 2
    assert len(effects.plot(group="system").axes) == 1
    with pytest.raises(BayesreproError, match="group='seed'"):
        effects.plot(group="seed")


def test_refusals_exit_with_status_2(scores, capsys):
    _, path = scores
    assert main(["effects", path, "--formula", FORMULA, "--group", "seed"]) == 2
    assert "--group 'seed' is not a grouping factor" in capsys.readouterr().err
    assert main(["effects", path, "--formula", FORMULA, "--draws", "200"]) == 2
    assert "--draws applies to the posterior; add --bayes" in capsys.readouterr().err
    assert main(["effects", path, "--formula", FORMULA, "--prob", "2"]) == 2


def test_a_tie_for_phis_object_does_not_stop_level_effects():
    rng = np.random.default_rng(2)
    table = pd.DataFrame([(f"a{a}", f"b{b}") for a in range(10) for b in range(10)], columns=["a", "b"])
    table["y"] = rng.normal(0, 1, len(table)) + rng.normal(0, 1, 10)[np.repeat(np.arange(10), 10)]
    model = br.Model("y ~ 1 + (1|a) + (1|b)", table)
    with pytest.raises(BayesreproError, match="object"):
        model.fit()
    assert len(model.effects().table) == 20


@pytest.mark.slow
def test_bayes_json_of_the_command_is_the_results_to_dict(scores, capsys):
    table, path = scores
    options = ["--draws", "500", "--tune", "500", "--chains", "2", "--seed", "3"]
    assert main(["effects", path, "--formula", FORMULA, "--object", "item", "--group", "system", "--bayes",
                 "--prob", "0.9", *options, "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    model = br.Model(FORMULA, table, object="item")
    effects = model.effects("system", prob=0.9, bayes=True, draws=500, tune=500, chains=2, seed=3)
    assert printed == effects.to_dict()
    assert printed["engine"] == "bayes" and len(printed["effects"]) == 8
    assert {"r_hat", "ess_bulk"} <= set(printed["effects"][0])
    # with 60 items per system the posterior medians lie near the conditional modes
    frequentist = model.effects("system").table
    assert np.corrcoef(effects.table.estimate, frequentist.estimate)[0, 1] > 0.99
