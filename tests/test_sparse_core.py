"""The sparse Λθ core against the dense-Schur path of random-intercept models, where both run."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame
from bayesrepro.frequentist import general_lmm
from bayesrepro.frequentist.general_lmm import fit_general_frame, needs_general_core
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.simulate import simulate_crowd

HERE = Path(__file__).parent


def _designs():
    yield "penicillin", build_model_frame("diameter ~ 1 + (1|plate) + (1|sample)",
                                          read_table(HERE / "data" / "penicillin.csv.gz"))
    yield "pastes", build_model_frame("strength ~ 1 + (1|batch/cask)", read_table(HERE / "data" / "pastes.csv.gz"))
    crowd, _ = simulate_crowd(2_700, 900, 300, skew=1.0, random_state=5)
    yield "crowd", build_model_frame("score ~ 1 + (1|item) + (1|rater)", crowd)


@pytest.mark.parametrize("method", ["reml", "ml"])
@pytest.mark.parametrize("name, frame", list(_designs()), ids=lambda v: v if isinstance(v, str) else "")
def test_sparse_core_matches_the_dense_path(name, frame, method):
    assert not needs_general_core(frame)
    dense, sparse = fit_model_frame(frame, method), fit_general_frame(frame, method)
    assert sparse.converged and dense.converged
    assert sparse.criterion == pytest.approx(dense.criterion, abs=1e-6)
    for component, variance in dense.variances.items():
        assert sparse.variances[component] == pytest.approx(variance, rel=1e-4, abs=1e-8), component
    assert sparse.beta == pytest.approx(dense.beta, rel=1e-6, abs=1e-8)
    assert sparse.se == pytest.approx(dense.se, rel=1e-4)


def test_two_large_crossed_factors_go_to_the_sparse_core(monkeypatch):
    crowd, _ = simulate_crowd(2_400, 1_200, 400, skew=1.0, random_state=2)
    frame = build_model_frame("score ~ 1 + (1|item) + (1|rater)", crowd)
    assert not needs_general_core(frame)
    monkeypatch.setattr(general_lmm, "DENSE_SCHUR_LEVELS", general_lmm.dense_schur_levels(frame) - 1)
    assert needs_general_core(frame)
    fit = fit_model_frame(frame, "reml")
    assert fit.converged
    assert any("sparse core" in note for note in fit.notes)
    assert list(fit.variances) == ["item", "rater", "Residual"]


def test_vca_json_gains_random_effects_rows(tmp_path):
    command = [sys.executable, "-m", "bayesrepro", "vca", str(HERE / "data" / "sleepstudy.csv.gz"), "--formula",
               "Reaction ~ Days + (Days|Subject)", "--json"]
    run = subprocess.run(command, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    rows = payload["random_effects"]
    assert [(r["group"], r["var1"], r["var2"]) for r in rows] == [
        ("Subject", "Intercept", None), ("Subject", "Days", None), ("Subject", "Intercept", "Days"),
        ("Residual", None, None)]
    assert rows[2]["sdcor"] == pytest.approx(0.0656, abs=2e-3)
    assert [c["name"] for c in payload["components"]] == ["Subject", "Residual"]
    assert any("Johnson 2014" in note for note in payload["notes"])
