"""Slope models: the sparse core's memory is estimated from the design and refused past --max-memory."""

import tracemalloc

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.cli import main
from bayesrepro.design import build_model_frame, model_frame, parse_formula
from bayesrepro.design.random_design import random_design
from bayesrepro.errors import EXIT_BAD_INPUT, BayesreproError
from bayesrepro.frequentist.core_memory import core_estimate
from bayesrepro.frequentist.fit_choice import choose_fit
from bayesrepro.frequentist.sparse_deviance import SparseProfiledDeviance

FORMULA = "y ~ c + (1 + c | subject) + (1 + c | item)"


def _crossed(subjects, items, per_subject, seed=0):
    """Each subject scores ``per_subject`` random items under a ±0.5 condition."""
    rng = np.random.default_rng(seed)
    subject = np.repeat(np.arange(subjects), per_subject)
    item = rng.integers(0, items, len(subject))
    c = rng.choice([-0.5, 0.5], len(subject))
    y = rng.normal(size=subjects)[subject] + rng.normal(size=items)[item] * (1 + c) + rng.normal(size=len(c))
    return pd.DataFrame({"subject": subject.astype(str), "item": item.astype(str), "c": c, "y": y})


@pytest.mark.parametrize("shape", [(1500, 600, 12), (300, 2500, 40), (4000, 3, 5)])
def test_the_estimate_bounds_what_one_evaluation_allocates(shape):
    frame = build_model_frame(parse_formula(FORMULA, slopes=True), _crossed(*shape))
    design = random_design(frame.spec, frame.data)
    estimate = core_estimate(design)
    tracemalloc.start()
    try:
        objective = SparseProfiledDeviance(design, frame.X, frame.y, reml=True)
        objective.value_and_gradient(design.start() * 0.7)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # an upper bound, and not a loose one: it decides what is refused
    assert peak <= estimate.bytes < 3 * peak


@pytest.mark.parametrize("shape, needed", [
    ((1500, 600, 12), "1,500 blocks of subject and a dense 1,200 x 1,200 Schur complement"),
    ((2000, 1000, 10), "a sparse factor of up to 6,000 x 6,000"),   # past the blockwise path's work
])
def test_a_slope_model_past_the_limit_is_refused_before_fitting_in_python_and_on_the_command_line(
        shape, needed, tmp_path, capsys):
    data = _crossed(*shape)
    with pytest.raises(BayesreproError) as refusal:
        br.Model(FORMULA, data, max_memory="64M").fit()
    message = str(refusal.value)
    assert needed in message and "max_memory=" in message
    assert "\n" not in message
    path = tmp_path / "scores.csv"
    data.to_csv(path, index=False)
    assert main(["vca", str(path), "--formula", FORMULA, "--max-memory", "64M"]) == EXIT_BAD_INPUT
    error = capsys.readouterr().err
    assert "past the memory limit of 64.0 MB (--max-memory)" in error and "drop a slope" in error


def test_vca_takes_no_moments_path_for_slopes_and_says_which_path(capsys):
    frame = model_frame(parse_formula("y ~ 1 + (1 + c | subject) + (1 | item)", slopes=True), _crossed(1500, 600, 12),
                        max_memory="64M")
    with pytest.raises(BayesreproError, match="past the memory limit of 64.0 MB"):
        choose_fit(frame, "reml", progress=True)
    assert "path: exact REML on the sparse core (random slopes)" in capsys.readouterr().err
