"""Frequentist and Bayesian side by side: bootstrap against closed forms, published figures, flags in words."""

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from bayesrepro import compare as cmp
from bayesrepro.errors import BayesreproError
from bayesrepro.design import build_model_frame
from bayesrepro.frequentist.lmm import fit_lmm


def one_way(a=50, m=10, group_var=1.0, residual_var=1.0, seed=11):
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(a), m)
    y = 2.0 + rng.normal(0, np.sqrt(group_var), a)[g] + rng.normal(0, np.sqrt(residual_var), a * m)
    return pd.DataFrame({"y": y, "g": pd.Categorical(g.astype(str))})


def test_parametric_bootstrap_matches_the_closed_form_sampling_distribution():
    # Balanced one-way model: away from the boundary the REML residual variance is the
    # within-group mean square, distributed as s2 * chi2(N - a) / (N - a) when simulating
    # from s2; the REML group variance (MSA - MSE) / m is unbiased for the simulated one.
    data = one_way()
    frame = build_model_frame("y ~ 1 + (1|g)", data)
    fit = fit_lmm("y ~ 1 + (1|g)", data)
    n_boot, df = 400, 50 * 10 - 50
    boot, unconverged = cmp.parametric_bootstrap(fit, frame, n_boot, np.random.default_rng(5))
    assert unconverged == 0 and len(boot) == n_boot
    s2 = fit.variances["Residual"]
    sd = s2 * np.sqrt(2 / df)
    assert abs(boot["Residual"].mean() - s2) < 4 * sd / np.sqrt(n_boot)       # 4 Monte-Carlo SEs
    assert boot["Residual"].std() == pytest.approx(sd, rel=4 / np.sqrt(2 * (n_boot - 1)))
    msa_sd = np.sqrt(2 / 49) * (10 * fit.variances["g"] + s2) / 10
    assert abs(boot["g"].mean() - fit.variances["g"]) < 4 * msa_sd / np.sqrt(n_boot)


@pytest.fixture(scope="module")
def system(ter):
    return cmp.compare("ter ~ system + (1|sentence_id)", ter, n_boot=100, draws=500, tune=500, chains=2, seed=3)


def test_system_comparison_side_by_side_agrees_on_large_data(system):
    assert system.tests[0]["chi2"] == pytest.approx(34.09, abs=0.005)     # thesis Table 2.2
    c = system.contrasts
    assert len(c) == 3
    # with 7,287 scores the posterior and the Wald interval must tell the same story
    # (Bernstein-von Mises): each point estimate lies inside the other engine's interval
    assert ((c["estimate"] > c["post_low"]) & (c["estimate"] < c["post_high"])).all()
    assert ((c["post_median"] > c["low"]) & (c["post_median"] < c["high"])).all()
    phi = system.phi
    assert phi["boot_low"] < phi["median"] < phi["boot_high"] and phi["low"] < phi["reml"] < phi["high"]
    # the LOO comparison is a different question (prediction of new items) and may be less decisive
    assert [f for f in system.flags if not f.startswith("the GLRT")] == []
    assert {"loo_elpd_diff", "loo_se"} <= set(system.tests[0])


def test_side_by_side_converts_to_json(system):
    payload = json.loads(system.to_json())
    assert {"estimates", "contrasts", "tests", "flags", "frequentist", "bayesian", "means"} <= set(payload)
    quantities = {row["quantity"] for row in payload["estimates"]}
    assert quantities == {"variance", "percent", "phi"}
    assert payload["bayesian"]["priors"] and payload["frequentist"]["bootstrap_replicates"] == 100


def test_boundary_component_with_wide_posterior_is_flagged(annotation):
    # thesis Table 3.1 (Marking): REML puts occasion at exactly 0 with 3 occasions,
    # a design that cannot rule out a sizeable occasion variance
    result = cmp.compare(
        "score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater) + (1|sentence:occasion)"
        " + (1|rater:occasion)", annotation, "sentence", where="mode == 'Marking'",
        n_boot=100, draws=500, tune=500, chains=2, seed=1, allow_unconverged=True)
    assert "occasion" in result.reml.boundary
    assert any(f.startswith("component occasion: REML puts its variance at exactly 0") for f in result.flags)


def _stub(phi_draws=(0.5,), boundary=(), converged=True):
    diagnostics = SimpleNamespace(converged=converged, line=lambda: "R-hat max 1.2")
    bayes = SimpleNamespace(diagnostics=diagnostics, draws={"phi": np.asarray(phi_draws)})
    reml = SimpleNamespace(boundary=list(boundary), converged=True, message="")
    return reml, bayes


def _estimates(phi_reml, phi_median):
    return pd.DataFrame([
        ("percent", "item", 100 * phi_reml, 100 * phi_reml - 1, 100 * phi_reml + 1, 100 * phi_median, 100 * phi_median - 5, 100 * phi_median + 5),
        ("phi", "item", phi_reml, phi_reml - 0.01, phi_reml + 0.01, phi_median, phi_median - 0.02, phi_median + 0.02),
    ], columns=["quantity", "component", "reml", "boot_low", "boot_high", "median", "low", "high"])


def test_flags_in_words_for_contrasts_and_labels():
    reml, bayes = _stub(phi_draws=np.r_[np.full(30, 0.72), np.full(70, 0.78)])
    contrasts = pd.DataFrame({"contrast": ["A - B", "A - C"], "estimate": [0.1, 0.1], "low": [0.01, -0.01],
                              "high": [0.19, 0.21], "p": [0.02, 0.08], "p_holm": [0.04, 0.08],
                              "post_median": [0.09, 0.1], "post_low": [-0.01, 0.02], "post_high": [0.2, 0.2],
                              "p_direction": [0.96, 0.99], "len": ["short", "long"], "reference": "Wald z"})
    flags = cmp._flags(_estimates(0.74, 0.78), contrasts, reml, "REML", bayes, "item", 0.95)
    assert any("contrast A - B within len = short: significant at 5 % (Wald z p = 0.02)" in f and "includes 0" in f
               for f in flags)
    assert any("contrast A - C within len = long: not significant at 5 %" in f and "excludes 0" in f for f in flags)
    assert any("phi (item): the REML estimate 0.740 is 'moderate' but the posterior median 0.780 is 'good'"
               " (posterior probability of 'moderate': 0.30)" in f for f in flags)
    assert any("do not overlap" in f for f in flags)


def test_unconverged_posterior_is_flagged_and_agreement_gives_no_flags():
    reml, bayes = _stub(converged=False)
    assert _estimates(0.6, 0.6).pipe(cmp._flags, None, reml, "REML", bayes, "item", 0.95) == [
        "the posterior did not converge (R-hat max 1.2); its intervals are not to be trusted"]


def test_glrt_and_loo_disagreement_in_words():
    base = {"h0": "y ~ 1 + (1|g)", "h1": "y ~ x + (1|g)"}
    assert cmp._test_flags([{**base, "p": 0.01, "loo_elpd_diff": 3.0, "loo_se": 2.0}]) == [
        "the GLRT rejects y ~ 1 + (1|g) at 5 % (p = 0.01) but leave-one-item-out LOO favours y ~ x + (1|g) "
        "by only 3.0 elpd (SE 2.0), less than two standard errors"]
    assert "does not reject" in cmp._test_flags([{**base, "p": 0.2, "loo_elpd_diff": 9.0, "loo_se": 2.0}])[0]
    assert cmp._test_flags([{**base, "p": 0.01, "loo_elpd_diff": 9.0, "loo_se": 2.0}, {**base, "p": 0.01}]) == []


def test_asymptotic_and_calibrated_disagreement_in_words():
    base = {"h0": "y ~ 1 + (1|item) + (1|system:seed)", "h1": "y ~ system + (1|item) + (1|system:seed)",
            "asymptotic_reference": "chi2(1)", "reference": "Kenward-Roger F(1, 4) of the REML fit = 5.1",
            "method": "kenward-roger", "reason": "'system:seed' (6 levels) carries the tested effect"}
    flags = cmp._test_flags([{**base, "p": 0.087, "p_asymptotic": 0.012}])
    assert flags == [
        "the GLRT's asymptotic p = 0.012 (chi2(1)) and its calibrated p = 0.087 (Kenward-Roger F(1, 4) of the REML "
        "fit = 5.1) disagree at 5 %: only the asymptotic one rejects y ~ 1 + (1|item) + (1|system:seed); "
        "'system:seed' (6 levels) carries the tested effect"]
    assert cmp._test_flags([{**base, "p": 0.03, "p_asymptotic": 0.012}]) == []
    assert cmp._test_flags([{**base, "method": "chi2", "p": 0.012, "p_asymptotic": 0.012}]) == []


def test_compare_flags_a_chi2_rejection_that_few_seeds_do_not_support():
    """Three seeds per system and no system effect: the chi2 rejects, Kenward-Roger does not, and compare says so."""
    from studies.small_sample_calibration import Design, anova_f, simulate

    data = simulate(Design("fixed3", "fixed", 3, True), np.random.default_rng([15000, 248]))
    result = cmp.compare("score ~ system + (1|item) + (1|system:seed)", data, factor="system", loo=False,
                         n_boot=100, draws=300, tune=300, chains=2, seed=1, allow_unconverged=True)
    test = result.tests[0]
    assert test["method"] == "kenward-roger" and test["asymptotic_reference"] == "chi2(1)"
    assert test["p_asymptotic"] < 0.05 <= test["p"]
    assert test["p"] == pytest.approx(anova_f(data["score"].to_numpy(), 3), rel=1e-6)     # the exact F of this design
    flag = (f"the GLRT's asymptotic p = {test['p_asymptotic']:.3g} (chi2(1)) and its calibrated p = {test['p']:.3g} "
            f"({test['reference']}) disagree at 5 %: only the asymptotic one rejects score ~ 1 + (1|item) + "
            "(1|system:seed); 'system:seed' (6 levels, 100 % of the tested variation between them) carries the "
            "tested effect, fewer than 50 levels")
    assert flag in result.flags and flag in str(result)


def test_bad_options_are_one_line_errors(ter):
    with pytest.raises(BayesreproError, match="factor 'sytem' is not a fixed effect"):
        cmp.compare("ter ~ system + (1|sentence_id)", ter, factor="sytem")
    with pytest.raises(BayesreproError, match="--object 'system' is not a grouping factor"):
        cmp.compare("ter ~ system + (1|sentence_id)", ter, "system")
    with pytest.raises(BayesreproError, match="--bootstrap must be a whole number from 100 to"):
        cmp.compare("ter ~ system + (1|sentence_id)", ter, n_boot=5)


def test_cli_compare_json_and_error_line(monkeypatch, capsys):
    import bayesrepro.cli as cli

    if "compare" not in cli.COMMANDS:
        monkeypatch.setattr(cli, "COMMANDS", cli.COMMANDS + ("compare",))
    code = cli.main(["compare", "kreutzer_annotation", "--where", "mode == 'Post Edit'", "--formula",
                     "score ~ 1 + (1|sentence) + (1|rater)", "--object", "sentence", "--bootstrap", "100",
                     "--draws", "300", "--tune", "300", "--chains", "2", "--allow-unconverged", "--json"])
    payload = json.loads(capsys.readouterr().out)
    assert code in (0, 3) and payload["object"] == "sentence" and payload["n_obs"] == 150
    code = cli.main(["compare", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--factor", "sytem"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "factor 'sytem'" in err[0]


def test_each_model_frame_and_its_statistics_are_built_once(ter, monkeypatch, tmp_path, capsys):
    # H1 and the GLRT's H0 are each parsed, framed and summed once, though REML, ML,
    # the bootstrap (drawn in the statistics), NUTS and LOO all use them
    import formulae

    from bayesrepro import cli
    from bayesrepro.design import frame as frame_module, producers

    formula = "ter ~ system + (1|sentence_id)"
    calls = {"frames": 0, "sums": 0, "parses of H1": 0}
    build, sums, parse = frame_module.build_model_frame, frame_module.sums_from_rows, formulae.model_description

    def counting_build(*args, **kwargs):
        calls["frames"] += 1
        return build(*args, **kwargs)

    def counting_sums(*args, **kwargs):
        calls["sums"] += 1
        return sums(*args, **kwargs)

    def counting_parse(text, *args, **kwargs):
        calls["parses of H1"] += text == formula
        return parse(text, *args, **kwargs)

    for module in (frame_module, producers):   # model_frame builds H1's frame, sibling H0's
        monkeypatch.setattr(module, "build_model_frame", counting_build)
    monkeypatch.setattr(frame_module, "sums_from_rows", counting_sums)
    monkeypatch.setattr(formulae, "model_description", counting_parse)
    small = ter[ter["sentence_id"].isin(ter["sentence_id"].cat.categories[:60])]
    small.to_csv(tmp_path / "small.csv", index=False)
    assert cli.main(["compare", str(tmp_path / "small.csv"), "--formula", formula, "--bootstrap", "100", "--draws",
                     "100", "--tune", "100", "--chains", "2", "--seed", "1", "--allow-unconverged", "--json"]) in (0, 3)
    assert json.loads(capsys.readouterr().out)["n_obs"] == len(small)
    assert calls == {"frames": 2, "sums": 2, "parses of H1": 1}


def test_loo_inside_compare_reports_paretos_warning_as_a_note_not_as_a_python_warning(monkeypatch):
    import warnings

    import bayesrepro.bayes.loo as loo

    def warning_compare(fits):
        warnings.warn("Estimated shape parameter of Pareto distribution is greater than 0.70 for one or more "
                      "samples.", UserWarning)
        return pd.DataFrame({"elpd_loo": [-10.0, -14.0], "dse": [0.0, 1.5], "warning": [True, False]},
                            index=["h1", "h0"])

    monkeypatch.setattr(loo, "compare_models", warning_compare)
    notes = []
    with warnings.catch_warnings(record=True) as shown:
        warnings.simplefilter("always")
        assert cmp._loo_difference(None, None, notes) == {"loo_elpd_diff": 4.0, "loo_se": 1.5}
    assert [w for w in shown if "Pareto" in str(w.message)] == []
    assert notes == ["PSIS-LOO warned (Pareto k > 0.7 for some items): its elpd difference is approximate"]


def test_the_rows_simulator_of_crowd_designs_draws_what_the_statistics_simulator_draws(monkeypatch):
    """U'y and y'y simulated through the rows' sparse design (crowd designs) follow the distribution the
    statistics-only simulator draws them from: equal means and standard deviations within Monte-Carlo error."""
    from bayesrepro.frequentist import bootstrap_test

    rng = np.random.default_rng(0)
    n = 3000
    item, rater = rng.integers(0, 300, n), rng.integers(0, 60, n)
    data = pd.DataFrame({"item": item.astype(str), "rater": rater.astype(str),
                         "score": rng.normal(size=n) + rng.normal(size=300)[item]})
    frame = build_model_frame("score ~ 1 + (1|item) + (1|rater)", data)
    assert bootstrap_test.simulator_for(frame).rows is None            # 60 raters: the statistics' path
    monkeypatch.setattr(bootstrap_test, "DENSE_SCHUR_LIMIT", 10)
    through_rows = bootstrap_test.simulator_for(frame)
    from_stats = bootstrap_test.ResponseSimulator(frame.stats())
    assert through_rows.rows is not None and from_stats.rows is None
    stats = frame.stats()
    c = np.tile(rng.normal(size=(len(stats.dominant_counts) + len(stats.rest_zy) + stats.n_fixed, 1)), (1, 3000))
    a, a_yy = through_rows.draw(c, 0.7, np.random.default_rng(1))
    b, b_yy = from_stats.draw(c, 0.7, np.random.default_rng(2))
    se = np.sqrt((a.var(axis=0) + b.var(axis=0)) / 3000)
    assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) < 5 * se)            # 5 SEs over 361 columns
    assert np.all(np.abs(a.std(axis=0) / b.std(axis=0) - 1) < 5 * np.sqrt(2 / 3000))
    assert abs(a_yy.mean() - b_yy.mean()) < 5 * np.sqrt((a_yy.var() + b_yy.var()) / 3000)


def test_compare_on_a_crowd_design_bootstraps_through_the_rows(monkeypatch):
    """The parametric bootstrap of a crowd design (simulated through the rows) recovers the fitted variances."""
    from bayesrepro.frequentist import bootstrap_test

    monkeypatch.setattr(bootstrap_test, "DENSE_SCHUR_LIMIT", 10)
    rng = np.random.default_rng(3)
    n = 2000
    item, rater = rng.integers(0, 400, n), rng.integers(0, 80, n)
    data = pd.DataFrame({"item": item.astype(str), "rater": rater.astype(str),
                         "score": rng.normal(size=400)[item] + rng.normal(0, 0.5, 80)[rater] + rng.normal(0, 0.7, n)})
    frame = build_model_frame("score ~ 1 + (1|item) + (1|rater)", data)
    fit = fit_lmm("score ~ 1 + (1|item) + (1|rater)", data)
    boot, unconverged = cmp.parametric_bootstrap(fit, frame, 200, np.random.default_rng(5))
    assert unconverged == 0
    for name in ("item", "rater", "Residual"):   # REML is nearly unbiased here: the mean within 4 SEs (+2% bias)
        tolerance = 4 * boot[name].std() / np.sqrt(200) + 0.02 * fit.variances[name]
        assert abs(boot[name].mean() - fit.variances[name]) < tolerance
