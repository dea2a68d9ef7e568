"""Planning: closed form against lmerTest/pbkrtest, Miller's formula and simulation; simulated statistics against rows;
allocation against brute force; the command line's options and output.

Tolerances of simulation checks are binomial: |simulated − expected| < 3.5 √(p(1 − p)/n)
(a false alarm about once in 2,000 runs of each check) plus the stated model error.
"""

import itertools
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
from bayesrepro.plan.closed_form import ContrastModel, ContrastPrecision, rejection_probability
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
               family="binomial", means=(p_a, p_a + effect))
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

def test_simulated_wald_power_agrees_with_the_closed_form():
    """One stratum carries Var(B − A) (seeds nested in systems), so the REML Wald statistic is t(6) exactly when the
    seed variance is estimated above zero: the simulated rejection rate of the z test is P(|t_6(λ)| > z)."""
    a = seeds_assumptions()
    result = simulate_power(a, [a.design()], simulations=300, seed=5, workers=1)[0]
    precision = ContrastModel(a.structure).precision(a.design(), a.variances)
    expected = rejection_probability(a.effect, precision, 0.05, "normal")
    assert result.power == pytest.approx(expected, abs=binomial_tolerance(expected, 300))
    assert result.not_converged == 0


def test_simulated_size_of_the_wald_test_shows_it_is_liberal_with_few_seeds():
    a = seeds_assumptions(effect=0.0)
    result = simulate_power(a, [a.design({"seed": 3})], simulations=300, seed=6, workers=1)[0]
    size = rejection_probability(0.0, ContrastModel(a.structure).precision(a.design({"seed": 3}), a.variances),
                                 0.05, "normal")
    assert size > 0.1
    assert result.power == pytest.approx(size, abs=binomial_tolerance(size, 300))


def test_simulation_does_not_depend_on_the_number_of_workers():
    a = seeds_assumptions()
    one = simulate_power(a, [a.design({"item": 20})], simulations=60, seed=2, workers=1)[0]
    two = simulate_power(a, [a.design({"item": 20})], simulations=60, seed=2, workers=2)[0]
    np.testing.assert_array_equal(one.p_values, two.p_values)


def test_simulated_power_matches_refits_of_simulated_rows():
    """Independent simulation: rows drawn from the model, fitted by fit_lmm, Wald test of pairwise_contrasts."""
    from bayesrepro.frequentist import fit_lmm
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
    by_statistics = simulate_power(a, [a.design()], simulations=600, seed=9, workers=1)[0].power
    se = np.sqrt(by_rows * (1 - by_rows) / simulations + by_statistics * (1 - by_statistics) / 600)
    assert abs(by_rows - by_statistics) < 3.5 * se


# --- power plans, allocation, assurance ----------------------------------------------------------------------

def test_power_plan_rows_hold_every_count_and_the_closed_form():
    plan = plan_power(seeds_assumptions(), {"item": [20, 80], "seed": [2, 5]}, simulations=0)
    assert [(r["item"], r["seed"]) for r in plan.rows] == [(20, 2), (20, 5), (80, 2), (80, 5)]
    assert all(r["power"] == r["power_t"] and r["mc_se"] == 0 for r in plan.rows)
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
    feasible = [(costs.cost(a.structure, a.design({"item": i, "seed": s})), i, s)
                for i in range(1, 401) for s in range(1, 31) if criterion.evaluate(a.design({"item": i, "seed": s})) >= 0.8]
    assert feasible and found.cost == pytest.approx(min(feasible)[0])
    assert "exhaustive" in found.search


def test_budget_allocation_stays_within_the_budget_and_greedy_search_says_so():
    a = cheap_seed_assumptions()
    costs = parse_costs("item=1,system:seed=40", a.structure)
    best = allocate(a.structure, a.counts, costs, power_criterion(a, 0.05), budget=3000)
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
    known = rejection_probability(0.03, ContrastPrecision(precision.variance, np.inf), 0.05)
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
    (["--vary", "sentence_id=0"], "--vary sentence_id must be at least 1"),
    (["--vary", "sentence_id=100", "--alpha", "1.5"], "--alpha must be strictly between"),
    (["--vary", "sentence_id=100", "--simulations", "many"], "--simulations must be a whole number"),
    (["--cost", "sentence_id=1"], "--cost needs a goal"),
    (["--target-power", "0.8"], "--target-power needs --cost"),
    (["--vary", "sentence_id=100", "--plot", "out.txt"], "--plot 'out.txt' should end in"),
    (["--vary", "sentence_id=100", "--family", "binomial"], "--family binomial is planned in closed form"),
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
