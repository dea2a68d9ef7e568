"""The simulated grid of harness runs: its design, its truth, and the same rows from both harnesses' formats."""

import numpy as np
import pandas as pd
from scipy import stats

from bayesrepro.harness import read_logs
from bayesrepro.harness.simulate import Truth, simulate_grid


def test_the_grid_is_models_by_seeds_by_shots_with_every_item_in_every_run(harness_grid):
    table = read_logs("lm-eval", [harness_grid.folder])
    assert harness_grid.runs == 2 * 3 * 2 and table["run"].nunique() == harness_grid.runs
    cells = table.groupby(["model", "seed", "num_fewshot", "task"]).size()
    assert len(cells) == 2 * 3 * 2 * 2 and (cells == 60).all()
    assert table.groupby(["task", "item"]).size().eq(harness_grid.runs).all()


def test_accuracy_per_cell_is_the_logistic_of_the_fixed_effects_when_nothing_else_varies(tmp_path):
    truth = Truth(intercept=-0.5, model_effects={"base": 0.0, "tuned": 1.0}, shot_effects={0: 0.0, 5: 0.5},
                  sd_item=0.0, sd_seed=0.0)
    simulate_grid(tmp_path, seeds=(1, 2), items=400, truth=truth, random_seed=4)
    table = read_logs("lm-eval", [tmp_path])
    for (model, shots), rows in table.groupby(["model", "num_fewshot"]):
        p = 1 / (1 + np.exp(-(truth.intercept + truth.model_effects[model.split("/")[1]] + truth.shot_effects[shots])))
        # a two-sided binomial test at 0.1 % per cell: a wrong simulator fails, a right one passes
        assert stats.binomtest(int(rows["acc"].sum()), len(rows), p).pvalue > 1e-3


def test_both_harness_formats_carry_the_same_answers(tmp_path):
    simulate_grid(tmp_path / "lm", seeds=(1, 2), items=20, random_seed=9)
    simulate_grid(tmp_path / "inspect", harness="inspect", seeds=(1, 2), items=20, random_seed=9)
    lm = read_logs("lm-eval", [tmp_path / "lm"])
    inspect = read_logs("inspect", [tmp_path / "inspect"])
    lm_scores = lm.assign(model=lm["model"].str.split("/").str[1], shots=lm["num_fewshot"].astype(str)) \
        .set_index(["model", "seed", "shots", "item"])["acc"].sort_index()
    inspect_scores = inspect.assign(model=inspect["model"].str.split("/").str[1], shots=inspect["fewshot"],
                                    item=inspect["item"].str.removeprefix("q")) \
        .set_index(["model", "seed", "shots", "item"])["choice"].sort_index()
    pd.testing.assert_series_equal(lm_scores, inspect_scores, check_names=False)
