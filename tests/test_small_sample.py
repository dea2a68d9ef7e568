"""The small-sample machinery on its own: simulation in the statistics, the reference rule, the wiring."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.glrt import glrt
from bayesrepro.frequentist.analyses import compare_levels
from bayesrepro.frequentist.bootstrap_test import (
    ResponseSimulator,
    SimulatedReference,
    bootstrap_lrt,
    check_samples,
    model_map,
)
from bayesrepro.frequentist.ddf import small_sample_inference
from bayesrepro.frequentist.glrt import _h0_design_on_h1_cells, nested_frames, restriction_matrix
from bayesrepro.frequentist.lmm import fit_model_frame
from bayesrepro.frequentist.reference import FEW_LEVELS, carriers, check_reference, choose
from bayesrepro.properties import length_class

H1 = "score ~ system + (1|item) + (1|system:seed)"
H0 = "score ~ 1 + (1|item) + (1|system:seed)"


def seeds_design(seeds: int = 3, items: int = 40, seed: int = 3, drop: float = 0.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(items), 2 * seeds)
    instance = np.tile(np.arange(2 * seeds), items)
    score = (rng.normal(0, 0.1, items)[item] + rng.normal(0, 0.03, 2 * seeds)[instance]
             + rng.normal(0, 0.1, len(item)) + 0.5)
    frame = pd.DataFrame({"score": score, "item": [f"i{i}" for i in item],
                          "system": np.where(instance < seeds, "A", "B"), "seed": [f"s{i % seeds}" for i in instance],
                          "length": rng.uniform(5, 60, items)[item]})
    return frame[rng.uniform(size=len(frame)) >= drop].reset_index(drop=True)


def test_simulated_statistics_have_the_moments_of_simulated_rows():
    """U'y ~ N(Gc, σ²G) and E[y'y] = c'Gc + nσ² for y = Uc + ε, whatever the route."""
    _, frame1 = nested_frames(H0, H1, seeds_design(drop=0.1))
    stats = frame1.stats()
    simulator = ResponseSimulator(stats)
    rng = np.random.default_rng(5)
    q = len(stats.dominant_counts) + len(stats.rest_zy)
    c = rng.normal(0, 0.2, q + stats.n_fixed)
    draws = 40_000
    u_y, yty = simulator.draw(np.repeat(c[:, None], draws, axis=1), 0.5, rng)
    # G from the rows: U = [Z_item, Z_seed, X] in the statistics' order
    z = [np.eye(frame1.groups[k].n_levels)[frame1.groups[k].codes] for k in stats.order]
    u = np.hstack(z + [frame1.X])
    gram = u.T @ u
    se = 0.5 * np.sqrt(np.diag(gram) / draws)
    assert np.max(np.abs(u_y.mean(axis=0) - gram @ c) / se) < 5
    covariance = np.cov(u_y[:, :10].T)
    np.testing.assert_allclose(covariance, 0.25 * gram[:10, :10], atol=5 * 0.25 * np.sqrt(2 / draws) * gram.max())
    expected = c @ gram @ c + stats.n_obs * 0.25
    assert abs(yty.mean() - expected) < 5 * yty.std() / np.sqrt(draws)


def test_null_model_statistics_follow_from_those_of_h1():
    """H0's statistics restated from H1's U'y equal those computed from the rows, for any response."""
    frame0, frame1 = nested_frames("score ~ length + (1|item)", "score ~ system*length + (1|item) + (1|system:seed)",
                                   seeds_design(drop=0.2))
    y = np.random.default_rng(2).normal(3.0, 1.0, frame1.n_obs)
    frame0, frame1 = frame0.with_response(y), frame1.with_response(y)
    stats1, stats0 = frame1.stats(), frame0.stats()
    u_y = np.concatenate([stats1.dominant_zy, stats1.rest_zy, stats1.xty])
    mapping = model_map(frame0, frame1, _h0_design_on_h1_cells(frame0, frame1))
    restated = mapping.restate(u_y, stats1.yty, stats1.y_sum, stats1.n_fixed)
    for name in ("dominant_zy", "rest_zy", "xty", "yty", "y_sum"):
        np.testing.assert_allclose(getattr(restated, name), getattr(stats0, name), rtol=1e-10, atol=1e-8)


def test_bootstrap_p_value_and_its_monte_carlo_error():
    reference = SimulatedReference("bootstrap", 2.0, np.array([0.5, 2.0, 3.0, 1.0, 0.0, 2.5, 0.1, 0.2, 4.0]))
    assert reference.exceed == 4
    assert reference.p == pytest.approx(5 / 10)
    assert reference.mc_se == pytest.approx(np.sqrt(0.5 * 0.5 / 9))


def test_bootstrap_does_not_depend_on_the_number_of_processes():
    frame0, frame1 = nested_frames(H0, H1, seeds_design())
    fit0, fit1 = fit_model_frame(frame0, "ml"), fit_model_frame(frame1, "ml")
    x0 = _h0_design_on_h1_cells(frame0, frame1)
    one = bootstrap_lrt(frame0, frame1, fit0, fit1, x0, 240, seed=7, workers=1)
    two = bootstrap_lrt(frame0, frame1, fit0, fit1, x0, 240, seed=7, workers=2)
    np.testing.assert_array_equal(one.sample, two.sample)
    assert one.unconverged == 0
    # its null distribution is that of an F(1, 4)-like statistic: heavier than χ²(1) in the tail
    assert np.quantile(one.sample, 0.95) > 3.84


def test_kenward_roger_gives_the_exact_f_of_a_balanced_nested_design():
    """Balanced seeds nested in systems, items crossed: the system F test has 2(seeds − 1) denominator df."""
    frame = nested_frames(H0, H1, seeds_design(seeds=4))[1]
    fit = fit_model_frame(frame, "reml")
    assert fit.theta.min() > 0
    inference = small_sample_inference(frame.stats(), fit)
    for method in ("kenward-roger", "satterthwaite"):
        assert inference.f_test(np.array([[0.0, 1.0]]), method).ddf == pytest.approx(6.0, rel=1e-6)


def test_carriers_of_the_tested_effect():
    frame0, frame1 = nested_frames(H0, H1, seeds_design())
    found = carriers(frame0, frame1, _h0_design_on_h1_cells(frame0, frame1))
    assert [(c.name, c.n_levels) for c in found] == [("system:seed", 6)]
    assert found[0].share == pytest.approx(1.0)
    # items crossed with systems and seeds carry none of the system contrast
    assert "item" not in [c.name for c in found]


def test_length_class_interaction_is_not_carried_by_the_items(ter):
    data = ter.assign(len=length_class(ter["src_length"]))
    frame0, frame1 = nested_frames("ter ~ system + len + (1|sentence_id)", "ter ~ system*len + (1|sentence_id)", data)
    assert carriers(frame0, frame1, _h0_design_on_h1_cells(frame0, frame1)) == []
    choice = choose(frame0, frame1, _h0_design_on_h1_cells(frame0, frame1), "auto")
    assert choice.method == "chi2" and f"fewer than {FEW_LEVELS} levels" in choice.reason


def test_item_property_is_carried_by_the_items_but_they_are_many(ter):
    frame0, frame1 = nested_frames("ter ~ 1 + (1|sentence_id)", "ter ~ src_length + (1|sentence_id)", ter)
    x0 = _h0_design_on_h1_cells(frame0, frame1)
    assert [(c.name, c.n_levels) for c in carriers(frame0, frame1, x0)] == [("sentence_id", 1041)]
    assert choose(frame0, frame1, x0, "auto").method == "chi2"


def test_auto_reference_by_kind_of_test():
    data = seeds_design()
    fixed = glrt(H0, H1, data)
    assert fixed.method == "kenward-roger" and fixed.calibrated
    assert fixed.asymptotic_reference == "chi2(1)" and fixed.p > fixed.asymptotic_p
    component = glrt("score ~ system + (1|item)", H1, data, seed=1)
    assert component.method == "exact-rlrt"
    assert component.asymptotic_reference == "0.5*chi2(0) + 0.5*chi2(1)"
    both = glrt("score ~ 1 + (1|item)", H1, data, bootstrap_samples=40, seed=1)
    assert both.method == "bootstrap" and both.details["samples"] == 40


def test_references_that_do_not_apply_are_refused():
    data = seeds_design()
    with pytest.raises(BayesreproError, match="--reference kenward-roger tests fixed effects"):
        glrt("score ~ system + (1|item)", H1, data, reference="kenward-roger")
    with pytest.raises(BayesreproError, match="--reference exact-rlrt tests one variance component"):
        glrt(H0, H1, data, reference="exact-rlrt")
    with pytest.raises(BayesreproError, match="--reference 'kr' is not known"):
        check_reference("kr")
    for bad in (5, 2.5, "many", True):
        with pytest.raises(BayesreproError, match="--bootstrap-samples must be a whole number from 20"):
            check_samples(bad)


def test_contrasts_follow_the_calibrated_test():
    comparison = compare_levels(H1, seeds_design(), "system")
    contrasts = comparison.contrasts
    assert list(contrasts["reference"]) == ["Kenward-Roger t (REML)"]
    assert contrasts["df"].iloc[0] == pytest.approx(4.0, rel=1e-3)
    # the t interval on 4 df is wider than the z interval: 2.776 against 1.960 standard errors
    width = (contrasts["high"] - contrasts["low"]).iloc[0] / contrasts["std_error"].iloc[0]
    assert width == pytest.approx(2 * 2.7764, rel=1e-3)
    assert "Kenward-Roger t (REML)" in str(comparison)
    asymptotic = compare_levels(H1, seeds_design(), "system", reference="chi2").contrasts
    assert list(asymptotic["reference"]) == ["Wald z"] and np.isinf(asymptotic["df"].iloc[0])


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "bayesrepro", "glrt", *args], capture_output=True, text=True,
                          timeout=300)


def test_cli_reference_options(tmp_path):
    path = tmp_path / "seeds.csv"
    seeds_design().to_csv(path, index=False)
    run = _cli(str(path), "--h0", H0, "--h1", H1, "--reference", "bootstrap", "--bootstrap-samples", "60",
               "--seed", "3", "--json")
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["method"] == "bootstrap" and payload["samples"] == 60 and payload["reason"] == "requested"
    assert payload["p"] == pytest.approx((payload["exceed"] + 1) / 61)
    text = _cli(str(path), "--h0", H0, "--h1", H1)
    assert "Kenward-Roger F(1, " in text.stdout and "asymptotic p = " in text.stdout
    assert "'system:seed' (6 levels" in text.stdout


@pytest.mark.parametrize("args, message", [
    (("--reference", "wald"), "--reference 'wald' is not known; use one of: auto, chi2"),
    (("--bootstrap-samples", "10"), "--bootstrap-samples must be a whole number from 20"),
    (("--seed", "x1"), "--seed must be a whole number from 0 to"),
])
def test_cli_bad_reference_options_are_one_line_errors(args, message):
    run = _cli("no_such_file.csv", "--h0", H0, "--h1", H1, *args)   # checked before the data are read
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], run.stderr


def test_small_sample_f_tests_are_the_exact_anova_f_of_a_balanced_design():
    """Seeds nested in systems, items crossed, balanced: the ANOVA F of the system (over seeds within systems,
    F(1, 2(seeds − 1))) is exact. Kenward-Roger and Satterthwaite equal it whenever REML's seed variance is
    positive; at zero, REML pools seed and residual variance and Kenward-Roger keeps 4 df: a larger p."""
    from studies.small_sample_calibration import Design, anova_f, simulate

    design = Design("fixed3", "fixed", 3, True)
    frame0, frame1 = nested_frames(H0, H1, simulate(design, np.random.default_rng([7, 0])))
    restriction = restriction_matrix(frame1, _h0_design_on_h1_cells(frame0, frame1))
    at_zero = 0
    for k in range(40):
        y = simulate(design, np.random.default_rng([7, k]))["score"].to_numpy()
        frame = frame1.with_response(y)
        fit = fit_model_frame(frame, "reml")
        inference = small_sample_inference(frame.stats(), fit)
        kr, satterthwaite = (inference.f_test(restriction, m) for m in ("kenward-roger", "satterthwaite"))
        exact = anova_f(y, design.seeds)
        if fit.variances["system:seed"] > 0:
            assert kr.ddf == pytest.approx(4.0, rel=1e-6) and satterthwaite.ddf == pytest.approx(4.0, rel=1e-6)
            assert kr.p == pytest.approx(exact, rel=1e-6) and satterthwaite.p == pytest.approx(exact, rel=1e-6)
        else:
            at_zero += 1
            assert kr.ddf == pytest.approx(4.0, rel=1e-6) and kr.p > exact
    assert at_zero >= 2


BINARY_H0 = "correct ~ 1 + (1|item) + (1|system:seed)"
BINARY_H1 = "correct ~ system + (1|item) + (1|system:seed)"


@pytest.fixture(scope="module")
def binary_seeds():
    from bayesrepro.simulate import binary_grid

    return binary_grid(items=60, systems={"A": 0.0, "B": 0.0}, seeds=3, prompts=1, item_sd=1.5, seed_sd=0.3,
                       prompt_sd=0.0, intercept=0.5, random_state=4)


def test_binary_bootstrap_reads_the_laplace_ratio_against_refits_under_h0(binary_seeds):
    one = glrt(BINARY_H0, BINARY_H1, binary_seeds, reference="bootstrap", bootstrap_samples=40, seed=3, workers=1)
    two = glrt(BINARY_H0, BINARY_H1, binary_seeds, reference="bootstrap", bootstrap_samples=40, seed=3, workers=2)
    asymptotic = glrt(BINARY_H0, BINARY_H1, binary_seeds, reference="chi2")
    assert one.method == "bootstrap" and one.family == "bernoulli" and "40 Laplace refits under H0" in one.reference
    assert one.chi2 == pytest.approx(asymptotic.chi2) and one.asymptotic_p == pytest.approx(asymptotic.p)
    assert one.p == pytest.approx((one.details["exceed"] + 1) / 41) and one.details["unconverged"] == 0
    assert (one.p, one.details["exceed"]) == (two.p, two.details["exceed"])


def test_binary_models_refuse_the_gaussian_references(binary_seeds):
    for reference in ("kenward-roger", "satterthwaite", "exact-rlrt"):
        with pytest.raises(BayesreproError, match=f"--reference {reference} is available for Gaussian models; "
                                                  "binary GLMMs are read against chi2 or bootstrap"):
            glrt(BINARY_H0, BINARY_H1, binary_seeds, reference=reference)


def test_auto_turns_to_the_bootstrap_where_reml_puts_the_carrier_at_zero():
    from studies.small_sample_calibration import Design, simulate

    design = Design("fixed3", "fixed", 3, True)
    at_zero, positive = (simulate(design, np.random.default_rng([15000, k])) for k in (1, 0))
    assert fit_model_frame(nested_frames(H0, H1, at_zero)[1], "reml").boundary == ["system:seed"]
    test = glrt(H0, H1, at_zero, bootstrap_samples=200, seed=2)
    assert test.method == "bootstrap" and test.details["samples"] == 200
    assert test.reason.endswith("REML puts the variance of 'system:seed' at zero, where Kenward-Roger's F is conservative")
    assert glrt(H0, H1, positive).method == "kenward-roger"
    assert glrt(H0, H1, at_zero, reference="kenward-roger").method == "kenward-roger"     # as asked
