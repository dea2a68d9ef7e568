"""Planning: closed form against lmerTest/pbkrtest, Miller's formula and simulation; simulated statistics against rows;
allocation against brute force; the command line's options and output.

Tolerances of simulation checks are binomial: |simulated − expected| < 3.5 √(p(1 − p)/n)
(a false alarm about once in 2,000 runs of each check) plus the stated model error.
"""

import itertools
import math
import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd
import resource

import pytest
import scipy.sparse as sp

from bayesrepro.cli import main
from bayesrepro.design import build_model_frame
from bayesrepro.errors import BayesreproError
from bayesrepro.plan import allocate, analyse_pilot, assume, assurance, parse_costs, plan_power, power_criterion
from bayesrepro.plan.allocation import phi_criterion
from bayesrepro.plan.closed_form import ContrastModel, ContrastPrecision, rejection_probability, satterthwaite_df
from bayesrepro.plan.planned_test import PlannedTest
from bayesrepro.plan.miller import binary_paired_variance, miller_power, miller_sample_size, paired_variance
from bayesrepro.plan.simulation import simulate_power
from bayesrepro.plan.statistics import ResponseSimulator, planned_statistics
from bayesrepro.plan.structure import REPLICATE, build_structure
from bayesrepro.reliability import d_study

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "tests" / "reference" / "plan_satterthwaite.json"
BALANCED = ROOT / "tests" / "data" / "plan_balanced.csv"
SEEDS = {"item": ("item",), "system:seed": ("system", "seed")}
INTERACTION = {**SEEDS, "item:system": ("item", "system")}


def binomial_tolerance(p: float, n: int) -> float:
    return 3.5 * np.sqrt(max(p * (1 - p), 0.01) / n)


def seeds_assumptions(**changes):
    values = dict(variances={"item": 0.05, "system:seed": 0.004, "Residual": 0.01}, effect=0.03,
                  counts={"item": 40, "seed": 4})
    values.update(changes)
    return assume("system", ("A", "B"), SEEDS, **values)


# --- the closed form ---------------------------------------------------------------------------------------------

def test_paired_items_give_the_paired_t_test():
    a = assume("model", ("A", "B"), {"item": ("item",)}, {"item": 0.2, "Residual": 0.05}, 0.02, {"item": 300})
    precision = ContrastModel(a.structure).precision(a.design(), a.variances)
    assert precision.variance == pytest.approx(2 * 0.05 / 300, rel=1e-12)
    assert precision.df == pytest.approx(299, rel=1e-9)


def test_nested_seeds_and_interaction_add_twice_their_variance_per_level_per_system():
    a = assume("system", ("A", "B"), INTERACTION, {"item": 0.05, "system:seed": 0.004, "item:system": 0.01,
                                                   "Residual": 0.02}, 0.03, {"item": 50, "seed": 3})
    precision = ContrastModel(a.structure).precision(a.design({REPLICATE: 2}), a.variances)
    assert precision.variance == pytest.approx(2 * 0.004 / 3 + 2 * 0.01 / 50 + 2 * 0.02 / (50 * 3 * 2), rel=1e-12)


def test_shared_seeds_cancel_from_the_contrast():
    crossed = assume("system", ("A", "B"), {"item": ("item",), "seed": ("seed",)},
                     {"item": 0.05, "seed": 0.004, "Residual": 0.02}, 0.03, {"item": 50, "seed": 3})
    precision = ContrastModel(crossed.structure).precision(crossed.design(), crossed.variances)
    assert precision.variance == pytest.approx(2 * 0.02 / 150, rel=1e-12)


@pytest.mark.parametrize("model, groups", [("seeds", SEEDS), ("interaction", INTERACTION)])
def test_df_and_se_match_lmertest_and_pbkrtest_at_the_reml_estimates(model, groups):
    """Satterthwaite (lmerTest) and Kenward–Roger (pbkrtest) ddf of the contrast on a balanced data set
    (tests/reference/plan_satterthwaite.R), the closed form evaluated at lme4's REML components."""
    reference = json.loads(REFERENCE.read_text())[model]
    a = assume("system", ("A", "B"), groups, reference["variances"], 0.03, {"item": 40, "seed": 4})
    precision = ContrastModel(a.structure).precision(a.design(), a.variances)
    assert precision.se == pytest.approx(reference["se"], rel=1e-6)
    assert precision.df == pytest.approx(reference["kenward_roger_df"], rel=1e-5)
    # lmerTest evaluates the derivatives numerically (its ddf is 6.0000276 where the exact value is 6)
    assert precision.df == pytest.approx(reference["satterthwaite_df"], rel=1e-4)


@pytest.mark.skipif(shutil.which("Rscript") is None, reason="Rscript not installed")
def test_the_stored_reference_is_what_r_computes():
    script = ROOT / "tests" / "reference" / "plan_satterthwaite.R"
    out = subprocess.run(["Rscript", str(script)], cwd=ROOT, capture_output=True, text=True, check=True, timeout=300)
    live, stored = json.loads(out.stdout), json.loads(REFERENCE.read_text())
    for model in ("seeds", "interaction"):
        assert live[model]["kenward_roger_df"] == pytest.approx(stored[model]["kenward_roger_df"], rel=1e-6)


def test_unestimable_seed_variance_has_no_df():
    a = seeds_assumptions()
    precision = ContrastModel(a.structure).precision(a.design({"seed": 1}), a.variances)
    assert precision.df == 0
    assert np.isnan(rejection_probability(0.03, precision, 0.05))


def test_t_power_is_the_noncentral_t_tail():
    from scipy.stats import nct, t

    precision = ContrastPrecision(variance=0.01**2, df=7.0)
    q = t.ppf(0.975, 7)
    expected = nct.sf(q, 7, 2.5) + nct.cdf(-q, 7, 2.5)
    assert rejection_probability(0.025, precision, 0.05) == pytest.approx(expected, rel=1e-9)
    assert rejection_probability(0.0, precision, 0.05) == pytest.approx(0.05, abs=1e-12)


@pytest.mark.parametrize("df", [1.0, 2.0, 4.0, 8.0, 30.0, 1e4, 1e7])
def test_power_far_in_the_tail_is_a_number_that_never_falls(df):
    """scipy's noncentral t distribution function returns NaN for large noncentralities (δ/SE of 13 at 8 df
    already): the power must stay a number, agree with scipy where scipy has one, and not fall as δ/SE grows."""
    from scipy.stats import nct, t

    shifts = np.concatenate([np.linspace(0, 10, 41), np.geomspace(10, 1e5, 40)])
    powers = np.array([rejection_probability(s, ContrastPrecision(1.0, df), 0.05) for s in shifts])
    assert np.all(np.isfinite(powers)) and np.all(np.diff(powers) >= -1e-12) and powers[-1] == pytest.approx(1.0)
    q = t.ppf(0.975, df)
    with np.errstate(all="ignore"):
        reference = nct.sf(q, df, shifts) + nct.cdf(-q, df, shifts)
    known = np.isfinite(reference)
    np.testing.assert_allclose(powers[known], reference[known], atol=1e-8)


# --- Miller (2024) ----------------------------------------------------------------------------------------------

def test_miller_is_the_closed_form_of_items_crossed_with_two_models():
    """Items × two models × K answers: Var = (ω² + (σ²_A + σ²_B)/K)/n with ω² = 2σ²_item:model."""
    omega2, within_a, within_b, k, n = 0.03, 0.16, 0.20, 4, 500
    a = assume("model", ("A", "B"), {"item": ("item",), "item:model": ("item", "model")},
               {"item": 0.05, "item:model": omega2 / 2, "Residual": (within_a + within_b) / 2}, 0.04,
               {"item": n, REPLICATE: k})
    precision = ContrastModel(a.structure).precision(a.design(), a.variances)
    assert precision.variance == pytest.approx(paired_variance(omega2, within_a, within_b, k) / n, rel=1e-12)
    normal = rejection_probability(0.04, precision, 0.05, "normal")
    assert miller_power(n, 0.04, paired_variance(omega2, within_a, within_b, k), 0.05) == pytest.approx(normal, abs=1e-3)


def test_binomial_family_reproduces_millers_paired_binary_variance():
    p_a, effect, covariance, n = 0.62, 0.05, 0.12, 800
    a = assume("model", ("A", "B"), {"item": ("item",)}, {"item": covariance, "Residual": 0.1}, effect, {"item": n},
               family="linear-probability", means=(p_a, p_a + effect))
    precision = ContrastModel(a.structure).precision(a.design(), a.model_variances())
    assert precision.variance == pytest.approx(binary_paired_variance(p_a, p_a + effect, covariance) / n, rel=1e-12)


def test_millers_sample_size_inverts_his_power():
    variance = binary_paired_variance(0.7, 0.73, 0.15)
    n = miller_sample_size(0.03, variance, 0.05, 0.8)
    assert miller_power(n, 0.03, variance) >= 0.8 > miller_power(n - 1, 0.03, variance)


def test_millers_power_matches_simulated_binary_evaluations():
    """Items with heterogeneous difficulty, two models answering independently given the item, one answer each;
    Miller's paired analysis (mean difference / CLT standard error, z test)."""
    rng = np.random.default_rng(11)
    n_items, simulations = 400, 4000
    difficulty = rng.normal(size=(simulations, n_items, 1))
    offset = np.array([0.4, 0.6])
    probability = 1 / (1 + np.exp(-(difficulty * 1.2 + offset)))          # (sims, items, model)
    answers = rng.random(probability.shape) < probability
    difference = answers[..., 1].astype(float) - answers[..., 0]
    z = difference.mean(axis=1) / (difference.std(axis=1, ddof=1) / np.sqrt(n_items))
    rejected = np.mean(np.abs(z) > 1.959964)
    # population moments of the item distribution, by a large independent draw
    population = 1 / (1 + np.exp(-(rng.normal(size=(2_000_000, 1)) * 1.2 + offset)))
    p_a, p_b = population.mean(axis=0)
    omega2 = np.var(population[:, 1] - population[:, 0])
    within = (population * (1 - population)).mean(axis=0)
    predicted = miller_power(n_items, p_b - p_a, paired_variance(omega2, *within))
    assert rejected == pytest.approx(predicted, abs=binomial_tolerance(predicted, simulations))


# --- simulated statistics ------------------------------------------------------------------------------------

def _rows(counts):
    levels = [["A", "B"], [f"i{i:03d}" for i in range(counts["item"])], [f"s{j:02d}" for j in range(counts["seed"])],
              range(counts.get(REPLICATE, 1))]
    rows = pd.DataFrame(list(itertools.product(*levels)), columns=["system", "item", "seed", "rep"])
    rows["y"] = np.random.default_rng(0).normal(size=len(rows))   # the design statistics do not depend on y
    return rows


@pytest.mark.parametrize("groups, formula", [
    (SEEDS, "y ~ system + (1|item) + (1|system:seed)"),
    ({"item": ("item",), "seed": ("seed",), "item:seed": ("item", "seed")}, "y ~ system + (1|item) + (1|seed) + (1|item:seed)"),
    ({**SEEDS, "system:item": ("system", "item")}, "y ~ system + (1|item) + (1|system:seed) + (1|system:item)"),
])
def test_planned_statistics_equal_those_of_the_rows(groups, formula):
    """Level order: the compared factor first, then the facets (the frame orders a grouping's levels by its columns)."""
    a = assume("system", ("A", "B"), groups, dict.fromkeys([*groups, "Residual"], 1.0), 0.0, {"item": 9, "seed": 3})
    counts = a.design({REPLICATE: 2})
    planned = planned_statistics(a.structure, counts)
    observed = build_model_frame(formula, _rows(counts)).stats()
    assert planned.order == observed.order and planned.n_obs == observed.n_obs
    for name in ("dominant_counts", "dominant_zx", "rest_sizes", "rest_gram", "rest_zx", "xtx", "x_sum"):
        np.testing.assert_allclose(getattr(planned, name), getattr(observed, name), err_msg=name)
    dense = lambda m: m.toarray() if sp.issparse(m) else m
    np.testing.assert_allclose(dense(planned.cross), dense(observed.cross))


def test_simulated_statistics_have_the_moments_of_simulated_rows():
    """E[Σ(y − ȳ)²] = tr(CV) + μ'Cμ exactly; the simulated mean lies within 4 SE of it."""
    a = seeds_assumptions()
    counts = a.design({"item": 6, "seed": 3, REPLICATE: 2})
    template = planned_statistics(a.structure, counts)
    sd = {"item": np.sqrt(0.05), "system:seed": np.sqrt(0.004)}
    simulator = ResponseSimulator(template, sd, 0.1, np.array([0.5, 0.03]))
    rng = np.random.default_rng(3)
    draws = np.array([simulator.draw(rng).yty for _ in range(20000)])
    frame = build_model_frame("y ~ system + (1|item) + (1|system:seed)", _rows(counts))
    n = frame.n_obs
    z = [np.eye(g.n_levels)[g.codes] for g in frame.groups]
    covariance = 0.05 * z[0] @ z[0].T + 0.004 * z[1] @ z[1].T + 0.01 * np.eye(n)
    centre = np.eye(n) - 1.0 / n
    mean = frame.X @ np.array([0.5, 0.03])
    expected = np.trace(centre @ covariance) + mean @ centre @ mean
    assert abs(draws.mean() - expected) < 4 * draws.std() / np.sqrt(len(draws))


# --- simulation against the closed form ----------------------------------------------------------------------

@pytest.mark.parametrize("test", ["wald", "kenward-roger"])
def test_simulated_power_agrees_with_the_closed_form(test):
    """Seeds nested in systems carry Var(B − A); the closed form integrates over the REML estimate of the seed
    variance, zero included (studies/plan_calibration.py holds it to 0.03 on a grid)."""
    a = seeds_assumptions()
    result = simulate_power(a, [a.design()], simulations=300, seed=5, test=test, workers=1)[0]
    expected, exact = PlannedTest(a.structure).power(a.effect, a.design(), a.variances, 0.05, test)
    assert exact and result.power == pytest.approx(expected, abs=binomial_tolerance(expected, 300))
    assert result.not_converged == 0


def test_simulated_size_of_the_wald_test_shows_it_is_liberal_with_few_seeds():
    a = seeds_assumptions(effect=0.0)
    result = simulate_power(a, [a.design({"seed": 3})], simulations=300, seed=6, test="wald", workers=1)[0]
    size, _ = PlannedTest(a.structure).power(0.0, a.design({"seed": 3}), a.variances, 0.05, "wald")
    assert size > 0.1
    assert result.power == pytest.approx(size, abs=binomial_tolerance(size, 300))


def test_closed_form_is_the_noncentral_t_where_no_component_reaches_zero():
    """Items × two systems: one stratum carries Var(B − A) and the item variance is far from zero, so the
    integral over the REML estimates is the noncentral t exactly (to the integration error of the nodes)."""
    a = assume("model", ("A", "B"), {"item": ("item",)}, {"item": 0.2, "Residual": 0.05}, 0.02, {"item": 300})
    planned = PlannedTest(a.structure)
    precision = planned.precision(a.design(), a.variances)
    for test, reference in (("wald", "normal"), ("kenward-roger", "t")):
        power, exact = planned.power(0.02, a.design(), a.variances, 0.05, test)
        assert exact and power == pytest.approx(rejection_probability(0.02, precision, 0.05, reference), abs=1e-4)


def test_a_zero_seed_variance_halves_the_power_the_noncentral_t_promises():
    """At the kreutzer_ter pilot's own estimate (seed variance 0) half of the planned REML fits pool the seeds'
    stratum with the residual one: the Wald test's power is 0.10 where the noncentral t says 0.21
    (simulated: 0.111 ± 0.005, studies/plan_calibration.py)."""
    a = assume("system", ("A", "B"), SEEDS, {"item": 0.064, "system:seed": 0.0, "Residual": 0.0035}, 0.004,
               {"item": 100, "seed": 3})
    planned = PlannedTest(a.structure)
    power, _ = planned.power(0.004, a.design(), a.variances, 0.05, "wald")
    textbook = rejection_probability(0.004, planned.precision(a.design(), a.variances), 0.05, "normal")
    assert power == pytest.approx(0.104, abs=0.002) and textbook == pytest.approx(0.212, abs=0.002)


@pytest.mark.parametrize("groups, formula, variances", [
    (SEEDS, "y ~ system + (1|item) + (1|system:seed)", {"item": 0.05, "system:seed": 0.0, "Residual": 0.02}),
    (INTERACTION, "y ~ system + (1|item) + (1|system:seed) + (1|item:system)",
     {"item": 0.05, "system:seed": 0.0005, "item:system": 0.0, "Residual": 0.02}),
])
def test_kenward_roger_of_the_closed_form_is_that_of_the_package(groups, formula, variances):
    """The simulated Kenward–Roger test takes SE and df from the closed form at the fitted components; on balanced
    data they equal frequentist.ddf's, inside the parameter space and with components fitted at zero."""
    from bayesrepro.frequentist.lmm import fit_lmm
    from bayesrepro.frequentist.ddf import small_sample_inference

    a = assume("system", ("A", "B"), groups, variances, 0.0, {"item": 15, "seed": 3})
    strata = ContrastModel(a.structure).design_strata(a.design())
    rows = _rows(a.design())
    frame = build_model_frame(formula, rows)
    rng = np.random.default_rng(1)
    boundary = 0
    for _ in range(6):
        y = sum(rng.normal(0, np.sqrt(variances[g.name]), g.n_levels)[g.codes] for g in frame.groups)
        refit = frame.with_response(y + rng.normal(0, np.sqrt(variances["Residual"]), len(rows)))
        fit = fit_lmm(refit)
        components = np.array([fit.variances[name] for name in [*groups, "Residual"]])
        boundary += bool(fit.boundary)
        se, df = small_sample_inference(refit.stats(), fit).contrasts(np.array([[0.0, 1.0]]), "kenward-roger")
        assert np.sqrt(strata.contrast @ components) == pytest.approx(se[0], rel=1e-8)
        assert satterthwaite_df(strata, components[None, :])[0] == pytest.approx(df[0], rel=1e-6)
    assert boundary > 0


def test_simulation_does_not_depend_on_the_number_of_workers():
    a = seeds_assumptions()
    one = simulate_power(a, [a.design({"item": 20})], simulations=60, seed=2, workers=1)[0]
    two = simulate_power(a, [a.design({"item": 20})], simulations=60, seed=2, workers=2)[0]
    np.testing.assert_array_equal(one.p_values, two.p_values)


def test_simulated_power_matches_refits_of_simulated_rows():
    """Independent simulation: rows drawn from the model, fitted by fit_lmm, Wald test of pairwise_contrasts."""
    from bayesrepro.frequentist.lmm import fit_lmm
    from bayesrepro.frequentist.contrasts import pairwise_contrasts

    a = seeds_assumptions(counts={"item": 12, "seed": 3})
    rng = np.random.default_rng(8)
    rows = _rows(a.design())
    frame = build_model_frame("y ~ system + (1|item) + (1|system:seed)", rows)
    rejected, simulations = 0, 150
    for _ in range(simulations):
        y = (0.03 * (rows.system == "B").to_numpy() + rng.normal(0, np.sqrt(0.05), 12)[frame.groups[0].codes]
             + rng.normal(0, np.sqrt(0.004), 6)[frame.groups[1].codes] + rng.normal(0, 0.1, len(rows)))
        refit = frame.with_response(y)
        rejected += pairwise_contrasts(fit_lmm(refit), refit, "system")["p"].iloc[0] < 0.05
    by_rows = rejected / simulations
    by_statistics = simulate_power(a, [a.design()], simulations=600, seed=9, test="wald", workers=1)[0].power
    se = np.sqrt(by_rows * (1 - by_rows) / simulations + by_statistics * (1 - by_statistics) / 600)
    assert abs(by_rows - by_statistics) < 3.5 * se


# --- power plans, allocation, assurance ----------------------------------------------------------------------

def test_power_plan_rows_hold_every_count_and_the_closed_form():
    plan = plan_power(seeds_assumptions(), {"item": [20, 80], "seed": [2, 5]}, simulations=0)
    assert [(r["item"], r["seed"]) for r in plan.rows] == [(20, 2), (20, 5), (80, 2), (80, 5)]
    assert all(r["power"] == r["power_closed_form"] and r["mc_se"] == 0 for r in plan.rows)
    assert {r["test"] for r in plan.rows} == {"kenward-roger"}             # 2 x 5 seeds: few levels carry it
    payload = plan.to_dict()
    assert set(payload) >= {"assumed", "rows", "method"}
    assert payload["assumed"]["components"][0] == {"name": "item", "variance": 0.05}
    assert "seed is nested in system" in payload["assumed"]["nesting"][0]


def test_power_plateaus_in_items_when_seeds_are_nested():
    a = seeds_assumptions()
    model = ContrastModel(a.structure)
    powers = [rejection_probability(a.effect, model.precision(a.design({"item": n, "seed": 3}), a.variances), 0.05)
              for n in (100, 10_000, 10**9)]
    assert powers[1] == pytest.approx(powers[2], abs=0.01) and powers[2] < 0.6


def cheap_seed_assumptions():
    return seeds_assumptions(variances={"item": 0.05, "system:seed": 0.0005, "Residual": 0.01})


def test_exhaustive_allocation_is_the_brute_force_optimum():
    a = cheap_seed_assumptions()
    costs = parse_costs("item=1,system:seed=40", a.structure)
    criterion = power_criterion(a, 0.05)
    found = allocate(a.structure, a.counts, costs, criterion, target=0.8, maximum={"item": 400, "seed": 30}, frontier=False)
    assert "exhaustive" in found.search
    assert_cheapest(a, costs, criterion, found, "item", "seed", 400, 30)


def assert_cheapest(a, costs, criterion, found, widest, other, widest_bound, other_bound, target=0.8):
    """Brute force, given that power grows with the widest facet's count above the test's level (checked on a
    grid): at every count of the other facet, the dearest design below the found cost misses the target."""
    assert criterion.evaluate(a.design(found.counts)) >= target
    for m in range(1, other_bound + 1):
        cost = lambda n: costs.cost(a.structure, a.design({widest: n, other: m}))   # linear in n
        slope = cost(2) - cost(1)
        n = min(widest_bound, math.ceil((found.cost - 1e-9 - (cost(1) - slope)) / slope) - 1)
        if n >= 1:
            assert criterion.evaluate(a.design({widest: n, other: m})) < target, (n, m)
    for m in sorted({2, 3, found.counts[other], other_bound}):
        path = np.array([criterion.evaluate(a.design({widest: int(n), other: m}))
                         for n in np.unique(np.geomspace(1, widest_bound, 30).round())])
        relevant = path[np.argmax(path >= 0.1):] if np.any(path >= 0.1) else path[:0]
        assert np.all(np.diff(relevant) >= -1e-6), (m, path)


def test_budget_allocation_stays_within_the_budget_and_greedy_search_says_so():
    a = cheap_seed_assumptions()
    costs = parse_costs("item=1,system:seed=40", a.structure)
    best = allocate(a.structure, a.counts, costs, power_criterion(a, 0.05), budget=3000, frontier=False)
    assert best.cost <= 3000 and best.value > 0.8
    greedy = allocate(a.structure, a.counts, costs, power_criterion(a, 0.05), budget=3000,
                      maximum={"seed": 100_000}, frontier=False)
    assert "not guaranteed" in greedy.search and greedy.cost <= 3000
    assert greedy.value <= best.value + 1e-9 and greedy.value > best.value - 0.05


def test_phi_allocation_uses_the_d_study():
    variances = {"item": 0.1, "seed": 0.002, "prompt": 0.006, "Residual": 0.02}
    structure = build_structure(None, (), [(n, (n,)) for n in ("item", "seed", "prompt")], {})
    costs = parse_costs("seed=100,prompt=1", structure)
    result = allocate(structure, {"item": 500, "seed": 1, "prompt": 1}, costs, phi_criterion(variances, "item", structure),
                      target=0.9, maximum={"seed": 20, "prompt": 20}, frontier=False)
    assert result.value == pytest.approx(d_study(variances, "item", {"seed": result.counts["seed"],
                                                                      "prompt": result.counts["prompt"]})["phi"])
    assert result.value >= 0.9 and result.counts["seed"] == 1   # prompts are the cheap way to reach it


def test_greedy_allocation_over_many_facets_never_lists_their_combinations():
    """Six priced facets of up to 50 levels: 3e8 combinations, searched greedily in bounded memory."""
    facets = [f"f{k}" for k in range(6)]
    variances = {"item": 0.1, **{f: 0.004 for f in facets}, "Residual": 0.02}
    structure = build_structure(None, (), [(n, (n,)) for n in ["item", *facets]], {})
    costs = parse_costs(",".join(f"{f}=1" for f in facets), structure)
    budget_bytes = 1_500_000_000
    previous = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (budget_bytes + _address_space(), previous[1]))
    try:
        result = allocate(structure, {"item": 500, **dict.fromkeys(facets, 1)}, costs,
                          phi_criterion(variances, "item", structure), target=0.9, frontier=False)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, previous)
    assert "greedy" in result.search and result.value >= 0.9


def _address_space() -> int:
    """The address space this process already maps, in bytes (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * resource.getpagesize()


def test_cost_parsing_names_the_faulty_part():
    structure = seeds_assumptions().structure
    with pytest.raises(BayesreproError, match="'prompt' is not a facet"):
        parse_costs("item=1,prompt=3", structure)
    with pytest.raises(BayesreproError, match="must be a number"):
        parse_costs("item=cheap", structure)


def test_assurance_with_a_point_posterior_is_the_known_variance_power():
    a = seeds_assumptions()
    draws = {name: np.full(200, value) for name, value in a.variances.items()}
    result = assurance(a.structure, draws, np.full(200, 0.03), a.design())
    precision = ContrastModel(a.structure).precision(a.design(), a.variances)
    known = rejection_probability(0.03, precision, 0.05)     # the t interval with the design's df
    assert result.value == pytest.approx(known, rel=1e-9)
    wider = assurance(a.structure, draws, np.full(200, 0.03), a.design(), rope=0.01)
    assert wider.value < result.value


def test_assurance_falls_below_high_power_when_the_effect_is_uncertain():
    a = cheap_seed_assumptions()
    rng = np.random.default_rng(4)
    draws = {name: np.full(2000, value) for name, value in a.variances.items()}
    certain = assurance(a.structure, draws, np.full(2000, 0.03), a.design({"seed": 30}))
    uncertain = assurance(a.structure, draws, rng.normal(0.03, 0.02, 2000), a.design({"seed": 30}))
    assert certain.value > 0.9 and uncertain.value < certain.value - 0.1


# --- pilots and the command line -----------------------------------------------------------------------------

def test_pilot_finds_nested_seeds_by_their_labels_and_counts_them_per_system():
    rows = pd.read_csv(BALANCED)
    rows["run"] = rows["system"] + "-" + rows["seed"]          # labels unique to a system
    pilot = analyse_pilot("score ~ system + (1|item) + (1|run)", rows, "system=B-A")
    assert pilot.assumptions.structure.parents["run"] == frozenset({"system"})
    assert pilot.assumptions.counts["run"] == 4 and pilot.assumptions.counts["item"] == 40
    shared = analyse_pilot("score ~ system + (1|item) + (1|seed)", rows, "system=B-A")
    assert shared.assumptions.structure.parents["seed"] == frozenset()


def test_pilot_rejects_other_fixed_terms_and_unknown_levels():
    with pytest.raises(BayesreproError, match="fixed part must be the compared factor"):
        analyse_pilot("ter ~ system + src_length + (1|sentence_id)", "kreutzer_ter", "system=Marking-Baseline")
    with pytest.raises(BayesreproError, match="'Nope' is not a level of 'system'"):
        analyse_pilot("ter ~ system + (1|sentence_id)", "kreutzer_ter", "system=Nope-Baseline")


PLAN = ["plan", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id) + (1|system:replication)",
        "--contrast", "system=Marking-Baseline"]


def test_cli_closed_form_json(capsys):
    assert main(PLAN + ["--vary", "sentence_id=100,400", "--vary", "replication=3", "--simulations", "0", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert set(payload) >= {"assumed", "rows", "method"}
    assert [r["sentence_id"] for r in payload["rows"]] == [100, 400]
    assert {"power", "mc_se", "df", "se"} <= set(payload["rows"][0])
    assert payload["assumed"]["effect"] == pytest.approx(payload["assumed"]["pilot_estimate"]["estimate"])
    assert "replication is nested in system" in payload["assumed"]["nesting"][0]


def test_cli_allocation_and_figure(capsys, tmp_path):
    out = tmp_path / "frontier.png"
    assert main(PLAN + ["--cost", "sentence_id=1,system:replication=500", "--target-power", "0.9",
                        "--simulations", "0", "--plot", str(out), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["allocation"]["power"] >= 0.9 and out.stat().st_size > 0
    assert payload["rows"][0]["sentence_id"] == payload["allocation"]["counts"]["sentence_id"]


@pytest.mark.parametrize("extra, message", [
    (["--vary", "item=100"], "--vary: 'item' is not a facet of the formula"),
    (["--vary", "sentence_id=0"], "--vary sentence_id must be a whole number from 1 to"),
    (["--vary", "sentence_id=100", "--alpha", "1.5"], "--alpha must be strictly between"),
    (["--vary", "sentence_id=100", "--simulations", "many"], "--simulations must be a whole number"),
    (["--cost", "sentence_id=1"], "nothing to plan"),
    (["--target-power", "0.8"], "--target-power needs --cost"),
    (["--vary", "sentence_id=100", "--plot", "out.txt"], "--plot 'out.txt' should end in"),
    (["--vary", "sentence_id=100", "--family", "bernoulli"], "--family bernoulli needs 0/1 scores"),
    (["--vary", "sentence_id=100", "--test", "t"], "--test 't' is unknown"),
    (["--target-power", "0.8", "--criterion", "phi", "--cost", "sentence_id=1"], "--criterion phi contradicts"),
    (["--target-phi", "0.9", "--cost", "sentence_id=1", "--assurance"], "--assurance concerns the contrast"),
    (["--vary", "sentence_id=100", "--assurance", "--draws", "5"], "--draws must be a whole number from 100 to"),
    (["--vary", "sentence_id=100", "--assurance", "--tune", "-1"], "--tune must be a whole number from 1 to"),
    (["--vary", "replication=1", "--simulations", "0"], "--vary replication=1: with one level of replication"),
    ([], "nothing to plan"),
])
def test_cli_rejects_bad_options_in_one_line(capsys, extra, message):
    assert main(PLAN + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_pilot_counts_the_scores_per_cell_so_its_own_design_gives_its_standard_error():
    """kreutzer_ter without the seeds in the formula: three scores per sentence and system (one per seed)."""
    pilot = analyse_pilot("ter ~ system + (1|sentence_id)", "kreutzer_ter", "system=PostEdit-Marking")
    assert pilot.assumptions.counts["(replicate)"] == 3
    planned = plan_power(pilot.assumptions, {"sentence_id": [1041]}, simulations=0).rows[0]
    assert planned["se"] == pytest.approx(pilot.std_error, rel=1e-6)


# --- the kreutzer_ter pilot: allocation checked by brute force, output never null -----------------------------

KREUTZER = "ter ~ system + (1|sentence_id) + (1|system:replication)"
KREUTZER_COSTS = "sentence_id=1,system:replication=200"


def _kreutzer_allocation(contrast):
    a = analyse_pilot(KREUTZER, "kreutzer_ter", contrast).assumptions
    costs = parse_costs(KREUTZER_COSTS, a.structure)
    criterion = power_criterion(a, 0.05)
    return a, costs, criterion, allocate(a.structure, a.counts, costs, criterion, target=0.8, frontier=False)


def test_the_allocation_of_b_minus_a_is_that_of_a_minus_b():
    *_, forward = _kreutzer_allocation("system=Marking-Baseline")
    *_, backward = _kreutzer_allocation("system=Baseline-Marking")
    assert forward.counts == backward.counts and forward.cost == backward.cost
    assert forward.value == pytest.approx(backward.value, abs=1e-12)


def test_the_cheapest_kreutzer_allocation_is_the_brute_force_one():
    """Within the default bounds (50 replications per system, 10^6 sentences): every design cheaper than the one
    found misses the target, enumerated for Marking − Baseline, by the dearest one per replication count for
    PostEdit − Marking. Below the test's level the Kenward–Roger power can fall as sentences are added (its size is
    below alpha when the seed variance is zero), which a search for a target above alpha never meets."""
    a, costs, criterion, found = _kreutzer_allocation("system=Marking-Baseline")
    assert "exhaustive" in found.search
    # cost = sentences + 2 x 200 x replications
    cheaper = [(n, m) for m in range(1, 51) for n in range(1, math.ceil(found.cost - 1e-9 - 400 * m))]
    assert costs.cost(a.structure, a.design({"sentence_id": 7, "replication": 2})) == 7 + 400 * 2
    assert 0 < len(cheaper) < 2000
    assert all(criterion.evaluate(a.design({"sentence_id": n, "replication": m})) < 0.8 for n, m in cheaper)
    assert_cheapest(a, costs, criterion, found, "sentence_id", "replication", 10**6, 50)

    a, costs, criterion, found = _kreutzer_allocation("system=PostEdit-Marking")
    assert_cheapest(a, costs, criterion, found, "sentence_id", "replication", 10**6, 50)


def test_json_power_is_never_null(capsys):
    """The far tail of the power (δ/SE of 13 here) was NaN, printed as null."""
    assert main(["plan", "kreutzer_ter", "--formula", KREUTZER, "--contrast", "system=Baseline-Marking",
                 "--vary", "sentence_id=100,1600,100000", "--vary", "replication=2,5,40", "--simulations", "0",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert len(rows) == 9
    for row in rows:
        assert all(row[key] is not None for key in ("power", "power_closed_form", "size", "se", "df")), row
    assert rows[-1]["power"] == pytest.approx(1.0)


# --- binary scores: the GLMM's cells, simulated and refitted ------------------------------------------------

def test_planned_cells_are_those_of_the_rows():
    from bayesrepro.design.binomial import binomial_cells
    from bayesrepro.plan.binary import planned_cells

    a = assume("system", ("A", "B"), SEEDS, {"item": 1.0, "system:seed": 0.1, "Residual": np.pi**2 / 3}, 0.2,
               {"item": 7, "seed": 3, REPLICATE: 2}, family="bernoulli")
    rows = _rows(a.design())
    rows["y"] = (np.arange(len(rows)) % 3 == 0).astype(float)          # the cells' trials do not depend on y
    observed = binomial_cells(build_model_frame("y ~ system + (1|item) + (1|system:seed)", rows))
    planned = planned_cells(a.structure, a.design())
    np.testing.assert_array_equal(planned.trials, observed.trials)
    np.testing.assert_array_equal(planned.fixed_cell, observed.fixed_cell)
    np.testing.assert_array_equal(planned.X_fixed, observed.X_fixed)
    for mine, theirs in zip(planned.codes, observed.codes):
        np.testing.assert_array_equal(mine, theirs)


def binary_assumptions(**changes):
    values = dict(variances={"item": 1.2, "system:seed": 0.05, "Residual": np.pi**2 / 3}, effect=0.45,
                  counts={"item": 60, "seed": 3}, family="bernoulli", intercept=0.3)
    values.update(changes)
    return assume("system", ("A", "B"), SEEDS, **values)


@pytest.mark.slow
def test_simulated_binary_power_matches_refits_of_simulated_rows():
    """Independent simulation: 0/1 rows drawn from the GLMM, fitted by fit_glmm from the rows, Wald z of the
    contrast; against the cells simulated and refitted by plan.binary. Both rates within 3.5 combined SE."""
    from bayesrepro.frequentist.glmm import fit_glmm

    a = binary_assumptions()
    rows = _rows(a.design())
    frame = build_model_frame("y ~ system + (1|item) + (1|system:seed)", rows.assign(y=np.arange(len(rows)) % 2))
    b = (rows.system == "B").to_numpy()
    rng = np.random.default_rng(21)
    rejected, simulations = 0, 300
    for _ in range(simulations):
        eta = (0.3 + 0.45 * b + rng.normal(0, np.sqrt(1.2), 60)[frame.groups[0].codes]
               + rng.normal(0, np.sqrt(0.05), 6)[frame.groups[1].codes])
        y = (rng.random(len(rows)) < 1 / (1 + np.exp(-eta))).astype(float)
        fit = fit_glmm("y ~ system + (1|item) + (1|system:seed)", rows.assign(y=y), family="bernoulli")
        z = fit.beta[1] / np.sqrt(fit.covariance[1, 1])
        rejected += abs(z) > 1.959964
    by_rows = rejected / simulations
    by_cells = simulate_power(a, [a.design()], simulations=600, seed=4, test="wald", workers=2)[0]
    se = np.sqrt(by_rows * (1 - by_rows) / simulations + by_cells.power * (1 - by_cells.power) / 600)
    print(f"\nbinary Wald power: rows {by_rows:.3f} ({simulations}), cells {by_cells.power:.3f} (600)")
    assert abs(by_rows - by_cells.power) < 3.5 * se and by_cells.not_converged == 0


@pytest.mark.slow
def test_binary_simulation_rejects_at_about_alpha_under_no_effect_and_detects_a_large_one():
    a = binary_assumptions(counts={"item": 30, "seed": 10})        # 20 seeds: the Wald z is near its level
    null = simulate_power(a.with_effect(0.0), [a.design()], simulations=80, seed=2, test="wald", workers=1)[0]
    large = simulate_power(a.with_effect(1.2), [a.design()], simulations=30, seed=3, test="lrt", workers=1)[0]
    assert null.power < 0.05 + binomial_tolerance(0.05, 80) and large.power > 0.9


# --- the command line: assurance, tests, budgets, figures, engines, binary scores ------------------------------

SMALL = ["plan", str(BALANCED), "--formula", "score ~ system + (1|item) + (1|system:seed)", "--contrast", "system=B-A"]


def test_cli_assurance(capsys):
    """A small pilot (2 x 40 items x 4 seeds): assurance per row from NUTS draws, with the t interval."""
    status = main(SMALL + ["--vary", "item=40,400", "--vary", "seed=4", "--simulations", "0", "--assurance",
                           "--draws", "300", "--tune", "300", "--chains", "2", "--seed", "3", "--allow-unconverged",
                           "--json"])
    captured = capsys.readouterr()
    assert status == 0 or (status == 3 and "the sampler of --assurance did not converge" in captured.err)
    payload = json.loads(captured.out)
    for row in payload["rows"]:
        assert 0 < row["assurance"] < 1 and row["assurance_mc_se"] < 0.02
    assert "posterior interval" in payload["method"] and "Satterthwaite df" in payload["method"]


def test_cli_lrt_test_is_simulated(capsys):
    assert main(SMALL + ["--vary", "item=40", "--simulations", "40", "--test", "lrt", "--workers", "1",
                         "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    row = payload["rows"][0]
    assert row["test"] == "lrt" and 0 <= row["power"] <= 1 and row["mc_se"] > 0
    assert "likelihood-ratio test" in payload["method"] and "Wald z test, its large-sample equivalent" in payload["method"]


def test_cli_budget_for_power_and_for_phi(capsys):
    costs = ["--cost", "item=1,system:seed=50"]
    assert main(SMALL + costs + ["--budget", "1000", "--simulations", "0", "--json"]) == 0
    power = json.loads(capsys.readouterr().out)["allocation"]
    assert power["criterion"] == "power" and power["cost"] <= 1000 and power["power"] > 0
    assert main(["plan", str(BALANCED), "--formula", "score ~ system + (1|item) + (1|system:seed)", "--object", "item",
                 *costs, "--budget", "1000", "--json"]) == 0
    phi = json.loads(capsys.readouterr().out)
    assert phi["allocation"]["criterion"] == "phi" and phi["allocation"]["cost"] <= 1000
    assert {"phi", "cost"} <= set(phi["rows"][0])           # the D-study along each facet, priced


def test_cli_d_study_with_costs(capsys):
    assert main(["plan", str(BALANCED), "--formula", "score ~ system + (1|item) + (1|system:seed)", "--object", "item",
                 "--vary", "seed=1,2,4", "--cost", "system:seed=100", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["seed"] for r in rows] == [1, 2, 4] and [r["cost"] for r in rows] == [200, 400, 800]
    assert rows[0]["phi"] < rows[1]["phi"] < rows[2]["phi"]


@pytest.mark.parametrize("extra", [["--vary", "item=40,400", "--vary", "seed=2,6"],
                                   ["--cost", "item=1,system:seed=50", "--target-power", "0.8"]])
def test_cli_plot(tmp_path, extra):
    out = tmp_path / "plan.png"
    assert main(SMALL + extra + ["--simulations", "0", "--plot", str(out)]) == 0
    assert out.read_bytes()[:4] == b"\x89PNG"


def test_cli_engine_duckdb_plans_from_grouped_sums(capsys):
    command = ["plan", "kreutzer_ter", "--formula", KREUTZER, "--contrast", "system=PostEdit-Marking",
               "--vary", "sentence_id=500,2000", "--simulations", "0", "--json"]
    assert main(command + ["--engine", "memory"]) == 0
    memory = json.loads(capsys.readouterr().out)
    assert main(command + ["--engine", "duckdb"]) == 0
    duckdb = json.loads(capsys.readouterr().out)
    assert duckdb["assumed"]["structure"] == memory["assumed"]["structure"]
    for mine, theirs in zip(duckdb["rows"], memory["rows"]):
        assert mine["power"] == pytest.approx(theirs["power"], abs=1e-9)


@pytest.fixture(scope="module")
def binary_pilot(tmp_path_factory):
    from bayesrepro.simulate import binary_grid

    path = tmp_path_factory.mktemp("binary") / "grid.csv"
    binary_grid(items=150, systems={"A": 0.0, "B": 0.4}, seeds=3, prompts=1, random_state=5).to_csv(path, index=False)
    return ["plan", str(path), "--formula", "correct ~ system + (1|item) + (1|system:seed)", "--contrast", "system=B-A"]


def test_cli_binary_scores_are_simulated_from_the_glmm(capsys, binary_pilot):
    assert main(binary_pilot + ["--vary", "item=100", "--simulations", "20", "--workers", "1", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["assumed"]["family"] == "bernoulli" and payload["rows"][0]["test"] == "wald"
    assert any("0/1" in note and "Bernoulli" in note for note in payload["notes"])
    assert "binary GLMM" in payload["method"] and payload["rows"][0]["mc_se"] > 0


@pytest.mark.parametrize("extra, message", [
    (["--vary", "item=100", "--simulations", "0"], "binary scores modelled by the GLMM have no closed form"),
    (["--cost", "item=1", "--target-power", "0.8"], "which binary scores modelled by the GLMM do not have"),
    (["--vary", "item=100", "--test", "kenward-roger"], "not available for binary scores"),
])
def test_cli_binary_refusals(capsys, binary_pilot, extra, message):
    assert main(binary_pilot + extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def test_cli_binary_scores_as_a_linear_probability_model(capsys, binary_pilot):
    assert main(binary_pilot + ["--vary", "item=100,400", "--simulations", "0", "--family", "gaussian", "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert payload["assumed"]["family"] == "linear-probability"
    assert any("linear probability model" in note for note in payload["notes"])


# --- compare and report: these data as the pilot -----------------------------------------------------------

def test_next_evaluation_plans_the_closest_pair_and_says_why_not_for_binary_scores():
    from bayesrepro.plan.next_evaluation import next_evaluation

    means = pd.DataFrame({"system": ["Baseline", "Marking", "PostEdit"], "estimate": [0.62, 0.60, 0.598]})
    planned = next_evaluation(KREUTZER, "kreutzer_ter", "system", means, "sentence_id", binary=False)
    assert planned.contrast.text == "system=PostEdit - Marking"
    assert sorted(set(planned.table["sentence_id"])) == [520, 1041, 2082, 4164, 8328]
    assert set(planned.table["replication"]) == {3, 6, 12} and set(planned.table["test"]) == {"kenward-roger"}
    pilot = analyse_pilot(KREUTZER, "kreutzer_ter", "system=PostEdit-Marking")
    expected = plan_power(pilot.assumptions, {"sentence_id": [1041], "replication": [6]}, simulations=0).rows[0]["power"]
    chosen = planned.table[(planned.table.sentence_id == 1041) & (planned.table.replication == 6)]
    assert chosen["power"].iloc[0] == pytest.approx(expected)
    assert "PostEdit - Marking" in str(planned) and planned.to_dict()["planned"]
    binary = next_evaluation(KREUTZER, "kreutzer_ter", "system", means, "sentence_id", binary=True)
    assert binary.table is None and "simulating the binary GLMM" in binary.to_dict()["reason"]


def test_cli_compare_has_a_planning_section(capsys):
    command = ["compare", str(BALANCED), "--formula", "score ~ system + (1|item) + (1|system:seed)", "--bootstrap",
               "100", "--draws", "200", "--tune", "200", "--chains", "2", "--allow-unconverged"]
    assert main(command + ["--json"]) in (0, 3)
    planning = json.loads(capsys.readouterr().out)["planning"]
    assert planning["planned"] and planning["contrast"] == "system=B - A" and len(planning["rows"]) == 15
    assert all(0 <= row["power"] <= 1 for row in planning["rows"])
    assert main(command) in (0, 3)
    assert "Planning the next evaluation of the closest pair, system B - A" in capsys.readouterr().out
