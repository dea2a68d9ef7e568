"""Expected best-of-B: closed form against brute-force enumeration; bootstrap against the closed form."""

import itertools

import numpy as np
import pytest

from bayesrepro.datasets import load_dataset
from bayesrepro.errors import BayesreproError
from bayesrepro.instruments.budget import (configuration_scores, expected_max, expected_max_closed_form,
                                           plot_expected_max)


def enumerate_best(scores, budget, best=max):
    """All n^B equally likely draws with replacement and the best of each."""
    return np.array([best(draw) for draw in itertools.product(scores, repeat=budget)])


@pytest.mark.parametrize("scores", [[0.3, 0.9, 0.5, 0.7], [0.2, 0.2, 0.8, 0.5, 0.8]])
def test_closed_form_equals_enumeration(scores):
    budgets = [1, 2, 3, 4]
    expected = [enumerate_best(scores, b).mean() for b in budgets]
    assert expected_max_closed_form(scores, budgets) == pytest.approx(expected, abs=1e-12)


def test_table_moments_quantiles_and_orientation_match_enumeration():
    scores = [0.31, 0.12, 0.55, 0.47, 0.2]
    result = expected_max(scores, [1, 2, 3], level=0.8, n_resamples=10)
    lower_better = expected_max(scores, [1, 2, 3], higher_is_better=False, level=0.8, n_resamples=10)
    for row, low_row in zip(result.table.itertuples(), lower_better.table.itertuples()):
        best = enumerate_best(scores, row.budget)
        assert row.closed_form_mean == pytest.approx(best.mean())
        assert row.closed_form_sd == pytest.approx(best.std())
        # inverse-CDF quantiles of the enumerated distribution of the best
        assert row.closed_form_lower == np.sort(best)[int(np.ceil(0.1 * best.size)) - 1]
        assert row.closed_form_upper == np.sort(best)[int(np.ceil(0.9 * best.size)) - 1]
        worst_is_best = enumerate_best(scores, row.budget, best=min)
        assert low_row.closed_form_mean == pytest.approx(worst_is_best.mean())
        assert low_row.closed_form_lower == np.sort(worst_is_best)[int(np.ceil(0.1 * best.size)) - 1]
        assert row.p_sample_best == pytest.approx(np.mean(best == max(scores)))


def test_bootstrap_agrees_with_closed_form_and_respects_the_boundary():
    rng = np.random.default_rng(1)
    scores = rng.normal(0.7, 0.05, 40)
    R = 20_000
    result = expected_max(scores, [1, 5, 40, 200], n_resamples=R, seed=3)
    t = result.table
    # Monte-Carlo error of a mean of R maxima: 5 standard errors
    assert np.all(np.abs(t["bootstrap_mean"] - t["closed_form_mean"]) <= 5 * t["closed_form_sd"] / np.sqrt(R))
    assert np.all(t["bootstrap_upper"] <= scores.max())
    assert np.all(t["closed_form_upper"] <= scores.max())
    # at B = 5 n the best of a draw is the sample best with probability 1 - (1 - 1/40)^200 > 0.99
    assert t["best_end_at_sample_best"].iloc[-1] and t["bootstrap_lower"].iloc[-1] == scores.max()
    assert "never be better than" in result.note


def test_configuration_scores_on_the_partial_grid():
    grid = load_dataset("kreutzer_marking_partial")
    columns = ["learning_rate", "seed", "encoder_dropout", "decoder_dropout", "decoder_dropout_hidden",
               "delta_scheme"]
    scores = configuration_scores(grid, columns, "ter")
    assert len(scores) == len(grid.groupby(columns, observed=True))
    first = scores.index[0]
    mask = np.logical_and.reduce([grid[c].astype(str) == v for c, v in zip(columns, first)])
    assert scores.iloc[0] == pytest.approx(grid.loc[mask, "ter"].mean())


def test_plot_returns_a_figure():
    import matplotlib.figure

    fig = plot_expected_max(expected_max(np.arange(10.0), n_resamples=50, seed=0))
    assert isinstance(fig, matplotlib.figure.Figure)


@pytest.mark.parametrize("call, match", [
    (lambda: expected_max([1.0, 2.0], [0]), "budgets"),
    (lambda: expected_max([1.0, 2.0], [1.5]), "budgets"),
    (lambda: expected_max([1.0], [1]), "at least 2"),
    (lambda: expected_max([1.0, np.nan], [1]), "missing"),
    (lambda: expected_max([1.0, 2.0], [1], level=1.2), "level"),
    (lambda: expected_max([1.0, 2.0], [1], n_resamples=0), "resamples"),
])
def test_bad_input_is_one_line_error(call, match):
    with pytest.raises(BayesreproError, match=match):
        call()
