"""The public API (``import bayesrepro as br``): light to import, the same numbers as the commands, errors that
name the Python argument."""

import contextlib
import html
import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.api.display import prose_for_reader
from bayesrepro.cli import main
from bayesrepro.errors import python_names

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
DYESTUFF = str(DATA / "dyestuff.csv.gz")
PENICILLIN = str(DATA / "penicillin.csv.gz")
UNBALANCED = str(DATA / "small_sample_unbalanced.csv.gz")
HEAVY = {"pymc", "pytensor", "arviz", "bambi", "numba", "duckdb", "pyspark", "nutpie", "matplotlib"}
REFERENCE = json.loads((ROOT / "tests" / "reference" / "fixed_effects.json").read_text())


def command_json(capsys, *argv, status: int = 0) -> dict:
    """The command's ``--json``, its notes worded for a Python reader (``object=`` for ``--object``), as
    ``to_dict`` words them."""
    assert main([*argv, "--json"]) == status
    return prose_for_reader(json.loads(capsys.readouterr().out))


def command_line_text(capsys, *argv) -> str:
    """What the command prints: its notes name the command-line options."""
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_import_loads_no_numerical_library_and_every_name_resolves():
    script = ("import sys, bayesrepro as br; before = set(sys.modules); "
              "[getattr(br, name) for name in br.__all__]; "
              "print(sorted({m.split('.')[0] for m in before}), sorted({m.split('.')[0] for m in sys.modules}))")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True).stdout
    at_import, after_names = (set(eval_list(part)) for part in out.strip().split("] [", 1))
    assert not at_import & (HEAVY | {"numpy", "pandas", "scipy"})
    assert not after_names & HEAVY


def eval_list(text: str) -> list[str]:
    return [name.strip(" '[]\n") for name in text.split(",")]


def test_all_names_are_documented():
    for name in br.__all__:
        assert getattr(br, name).__doc__, name
    assert {"read", "load_dataset", "Model", "Fit", "Posterior", "BayesreproError"} <= set(br.__all__)


def test_fit_equals_vca_json_and_is_cached(capsys):
    model = br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF, categorical=["Batch"])
    fit = model.fit()
    assert fit.to_dict() == command_json(capsys, "vca", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)",
                                         "--categorical", "Batch")
    assert model.fit().engine_fit is fit.engine_fit
    assert fit.components.loc["Residual", "variance"] == pytest.approx(fit.variances["Residual"])
    shown = fit._repr_html_()
    assert shown.count("<table") == 3 and html.escape(fit.summary().splitlines()[0]) in shown
    assert "--object" in command_line_text(capsys, "vca", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)",
                                           "--categorical", "Batch")
    assert "--" not in fit.summary() and all("--" not in note for note in fit.notes) and "object=" in fit.summary()


def test_binary_fit_equals_vca_json(capsys):
    formula = "p(incidence, size) ~ period + (1|herd)"
    cbpp = str(DATA / "cbpp.csv.gz")
    fit = br.Model(formula, cbpp, categorical=["herd", "period"]).fit()
    assert fit.to_dict() == command_json(capsys, "vca", cbpp, "--formula", formula, "--categorical", "herd,period")
    assert fit.phi_observed is not None and set(fit.fixed_effects.columns) == {"estimate", "std_error", "df", "t", "p"}


@pytest.mark.parametrize("name", ["unbalanced", "penicillin"])
def test_fixed_effects_as_lmertest(name):
    reference = REFERENCE["designs"][name]
    data = str(DATA / reference["data"])
    factors = {"unbalanced": ["system", "item", "seed"], "penicillin": ["plate", "sample"]}[name]
    table = br.Model(reference["formula"], data, categorical=factors).fit().fixed_effects
    for column in ("estimate", "std_error", "df", "t", "p"):
        # REML optimum to ~1e-6 relative in θ: df and p follow to about that
        np.testing.assert_allclose(table[column], np.atleast_1d(reference[column]), rtol=2e-5, err_msg=column)


def test_fixed_effects_of_an_ml_fit_are_wald_z():
    table = br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF, categorical=["Batch"]).fit("ml").fixed_effects
    assert np.isinf(table["df"]).all()
    assert table.loc["Intercept", "t"] == pytest.approx(table.loc["Intercept", "estimate"]
                                                          / table.loc["Intercept", "std_error"])


def test_glrt_equals_glrt_json(capsys):
    h1, h0 = "diameter ~ 1 + (1|plate) + (1|sample)", "diameter ~ 1 + (1|plate)"
    test = br.Model(h1, PENICILLIN, categorical=["plate", "sample"]).glrt(h0, reference="chi2")
    assert test.to_dict() == command_json(capsys, "glrt", PENICILLIN, "--h0", h0, "--h1", h1,
                                          "--categorical", "plate,sample", "--reference", "chi2")
    assert test.summary().startswith("GLRT")


def test_plan_equals_plan_json(capsys):
    formula = "ter ~ system + (1|sentence_id) + (1|system:replication)"
    plan = br.Model(formula, "kreutzer_ter").plan("system=Marking-Baseline", {"sentence_id": [100, 400],
                                                                              "replication": [3]}, simulations=0)
    assert plan.to_dict() == command_json(capsys, "plan", "kreutzer_ter", "--formula", formula, "--contrast",
                                          "system=Marking-Baseline", "--vary", "sentence_id=100,400",
                                          "--vary", "replication=3", "--simulations", "0")
    assert list(plan.rows["sentence_id"]) == [100, 400]


def public_arguments() -> set[str]:
    """The parameter names of every public function and of the public classes' methods."""
    import inspect

    names = set()
    for name in br.__all__:
        value = getattr(br, name)
        members = [value] + [m for _, m in inspect.getmembers(value, inspect.isfunction)] if inspect.isclass(value) \
            else [value]
        for member in members:
            with contextlib.suppress(TypeError, ValueError):
                names |= set(inspect.signature(member).parameters)
    return names


@pytest.mark.parametrize("text, python", [
    ("run more --draws/--tune, or pass --allow-unconverged", "run more draws=/tune=, or pass allow_unconverged="),
    ("--object 'x' is not a grouping factor", "object='x' is not a grouping factor"),
    ("with --engine duckdb", 'with engine="duckdb"'),
    ("name the right column with --column score=COLUMN", "name the right column with score=COLUMN"),
    ("--metric 'acc' is in none of the runs", "metrics='acc' is in none of the runs"),
    ("or ran without --log_samples)", "or ran without --log_samples)"),   # the harness's own option stays
])
def test_messages_name_the_python_arguments(text, python):
    assert python_names(text) == python


@pytest.mark.parametrize("call, argument, argv, flag", [
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF, object="Plate"), "object=",
     ["vca", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--object", "Plate"], "--object"),
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF).fit(nagq=3), "nagq=",
     ["vca", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--nagq", "3"], "--nagq"),
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF).fit(method="mle"), "method=", None, None),
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF, spark_master="local"), "spark_master=",
     ["vca", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--spark-master", "local"], "--spark-master"),
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF).sample(prior_scale={"Plate": 1}), "prior_scale=",
     ["phi", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--prior-scale", "Plate=1"], "--prior-scale"),
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF).sample(draws=5), "draws=",
     ["phi", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--draws", "5"], "--draws"),
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF).sample(target_accept=1.0), "target_accept=",
     ["phi", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--target-accept", "1.0"], "--target-accept"),
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF, object="Batch").compare(phi=False), "object=",
     ["compare", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--object", "Batch", "--no-phi"], "--object"),
    (lambda: br.Model("ter ~ system + (1|sentence_id)", "kreutzer_ter").compare(target_accept=0.2),
     "target_accept=", ["compare", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--target-accept",
                        "0.2"], "--target-accept"),
    (lambda: br.Model("diameter ~ 1 + (1|plate) + (1|sample)", PENICILLIN).glrt("diameter ~ 1 + (1|plate)",
                                                                                  reference="exact"), "reference=",
     ["glrt", PENICILLIN, "--h0", "diameter ~ 1 + (1|plate)", "--h1", "diameter ~ 1 + (1|plate) + (1|sample)",
      "--reference", "exact"], "--reference"),
    (lambda: br.Model("ter ~ system + (1|sentence_id)", "kreutzer_ter").compare(n_boot=0), "n_boot=",
     ["compare", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--bootstrap", "0"], "--bootstrap"),
    (lambda: br.Model("ter ~ system + (1|sentence_id)", "kreutzer_ter").plan("system=Marking-Baseline",
                                                                            {"seed": [3]}), "vary",
     ["plan", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--contrast", "system=Marking-Baseline",
      "--vary", "seed=3"], "--vary"),
    (lambda: br.read(DYESTUFF, categorical=["Plate"]), "categorical", None, None),
    (lambda: br.Model("ter ~ system + (1|sentence_id)", "kreutzer_ter").plan("system=Marking-Baseline",
                                                                            "sentence_id=3"), "vary=", None, None),
    (lambda: br.Model("ter ~ system + (1|sentence_id)", "kreutzer_ter").plan(
        "system=Marking-Baseline", {"sentence_id": [10]}, cost="sentence_id=1", budget=100, maximum={"seed": 3}),
     "maximum=", ["plan", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--contrast",
                  "system=Marking-Baseline", "--vary", "sentence_id=10", "--cost", "sentence_id=1", "--budget", "100",
                  "--max", "seed=3"], "--max"),
    (lambda: br.read(DYESTUFF, where="Yield +"), "where=",
     ["vca", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--where", "Yield +"], "--where"),
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF, max_memory="1").fit(), "max_memory=",
     ["vca", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--max-memory", "1"], "--max-memory"),
    (lambda: br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF).sample(draws=100_000, tune=100_000, chains=8), "chains=",
     ["phi", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--draws", "100000", "--tune", "100000", "--chains",
      "8"], "--chains"),
    (lambda: br.Model("diameter ~ 1 + (1|plate) + (1|sample)", PENICILLIN).glrt(
        "diameter ~ 1 + (1|plate)", reference="bootstrap", bootstrap_samples=1), "bootstrap_samples=",
     ["glrt", PENICILLIN, "--h0", "diameter ~ 1 + (1|plate)", "--h1", "diameter ~ 1 + (1|plate) + (1|sample)",
      "--reference", "bootstrap", "--bootstrap-samples", "1"], "--bootstrap-samples"),
    (lambda: br.Model("ter ~ system + (1|sentence_id)", "kreutzer_ter").plan("system=Marking-Baseline", budget=100),
     "cost=", ["plan", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id)", "--contrast",
               "system=Marking-Baseline", "--budget", "100"], "--cost"),
    (lambda: br.bootstrap("kreutzer_ter", "sentence_id", "system", "ter", "Marking", "Baseline"), "instance=",
     ["bootstrap", "kreutzer_ter", "--item", "sentence_id", "--system", "system", "--score", "ter", "--a", "Marking",
      "--b", "Baseline"], "--instance"),
    (lambda: br.permutation("kreutzer_ter", "sentence_id", "system", "ter", "Marking", "Baseline",
                            instance="replication", resamples=0), "resamples=",
     ["permutation", "kreutzer_ter", "--item", "sentence_id", "--system", "system", "--score", "ter", "--a",
      "Marking", "--b", "Baseline", "--instance", "replication", "--resamples", "0"], "--resamples"),
    (lambda: br.budget("sofa_mlp_grid", "accuracy", ["dropout"], level=2), "level=",
     ["budget", "sofa_mlp_grid", "--score", "accuracy", "--config", "dropout", "--level", "2"], "--level"),
    (lambda: br.agreement("kreutzer_annotation", ["sentence"], "rater", "score", level="metric"), "level=", None,
     None),
    (lambda: br.circularity(DYESTUFF, "Yield", ["Yield"], max_size=2), "max_size=",
     ["circularity", DYESTUFF, "--prediction", "Yield", "--features", "Yield", "--max-size", "2"], "--max-size"),
    (lambda: br.load_spec("system_comparison", sentence="id"), "PARAMETER=COLUMN", None, None),
])
def test_errors_name_the_python_argument_and_the_flag(call, argument, argv, flag, capsys):
    with pytest.raises(br.BayesreproError) as caught:
        call()
    assert argument in str(caught.value) and "--" not in str(caught.value)
    # every keyword the message names, outside the quoted values it repeats, is an argument of the public API
    unquoted = re.sub(r"'[^']*'", "", str(caught.value))
    assert set(re.findall(r"\b([a-z][a-z0-9_]*)=", unquoted)) <= public_arguments()
    if argv is not None:
        assert main(argv) == 2
        message = capsys.readouterr().err
        assert flag in message and argument not in message.replace(flag, "")


@pytest.mark.parametrize("h0", [None, "score ~ 1 + (1|item)"])
def test_compare_fits_each_model_once(h0, monkeypatch, capsys):
    import collections

    import bayesrepro.frequentist.lmm as lmm

    fits = collections.Counter()
    once = lmm.fit_frame_once

    def counted(frame, method):
        fits[frame.formula, method] += 1
        return once(frame, method)

    monkeypatch.setattr(lmm, "fit_frame_once", counted)
    formula = "score ~ system + (1|item)"
    model = br.Model(formula, UNBALANCED, categorical=["system", "item"])
    # a short run: whether the sampler converged does not matter here, but a Python caller is told
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        side = model.compare(h0=h0, n_boot=100, draws=100, tune=100, chains=2, allow_unconverged=True)
    told = [w for w in caught if issubclass(w.category, br.ConvergenceWarning)]
    assert len(told) == (1 if side.not_converged() else 0)
    assert fits == {(formula, "reml"): 1, (formula, "ml"): 1, ("score ~ 1 + (1|item)", "ml"): 1}
    argv = ["compare", UNBALANCED, "--formula", formula, "--categorical", "system,item", "--bootstrap", "100",
            "--draws", "100", "--tune", "100", "--chains", "2", "--allow-unconverged", *(["--h0", h0] if h0 else [])]
    assert side.to_dict() == command_json(capsys, *argv, status=3 if side.not_converged() else 0)


def test_posterior_equals_phi_json(capsys):
    settings = dict(draws=200, tune=200, chains=2, seed=3)
    with warnings.catch_warnings():   # a short run may not converge: the equality is the point here
        warnings.simplefilter("ignore", br.ConvergenceWarning)
        posterior = br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF, categorical=["Batch"]).sample(**settings,
                                                                                              allow_unconverged=True)
    argv = ["phi", DYESTUFF, "--formula", "Yield ~ 1 + (1|Batch)", "--categorical", "Batch", "--draws", "200",
            "--tune", "200", "--chains", "2", "--seed", "3", "--allow-unconverged"]
    expected = command_json(capsys, *argv, status=3 if posterior.not_converged() else 0)
    ours = posterior.to_dict()
    assert ours.pop("seconds") >= 0 and expected.pop("seconds") >= 0   # wall-clock time, not a result
    assert ours == expected
    assert set(posterior.components.columns) >= {"variance", "low", "high"}
    assert 0 < posterior.phi["median"] < 1


def test_every_public_name_documents_its_parameters_and_returns():
    validate = pytest.importorskip("numpydoc.validate").validate
    names = []
    for name in br.__all__:
        value = getattr(br, name)
        names.append(f"bayesrepro.{name}")
        if isinstance(value, type):
            names += [f"{value.__module__}.{name}.{member}" for klass in value.__mro__
                      if klass.__module__.startswith("bayesrepro") for member, attribute in vars(klass).items()
                      if not member.startswith("_") and (callable(attribute) or isinstance(attribute, property))]
    checked = {"GL08", "PR01", "PR02", "RT01", "SS06", "PR10"}   # present, every parameter, returns, one-line summary
    problems = {name: codes for name in sorted(set(names))
                if (codes := [code for code, _ in validate(name)["errors"] if code in checked])}
    assert problems == {}


def test_figures_of_the_results():
    from matplotlib.figure import Figure

    fit = br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF, categorical=["Batch"]).fit()
    figure = fit.plot()
    assert isinstance(figure, Figure) and [t.get_text() for t in figure.axes[0].get_yticklabels()] == ["Batch",
                                                                                                      "Residual"]
    plan = br.Model("ter ~ system + (1|sentence_id)", "kreutzer_ter").plan(
        "system=Marking-Baseline", {"sentence_id": [100, 400]}, simulations=0, figure=True)
    assert isinstance(plan.plot(), Figure)
    with pytest.raises(br.BayesreproError, match="figure=True"):
        br.Model("ter ~ system + (1|sentence_id)", "kreutzer_ter").plan(
            "system=Marking-Baseline", {"sentence_id": [100]}, simulations=0).plot()


@pytest.fixture(scope="module")
def seeds_comparison():
    model = br.Model("score ~ system + (1|item) + (1|system:seed)", UNBALANCED, categorical=["system", "item", "seed"],
                     object="item")
    with warnings.catch_warnings():   # a short run: the numbers are checked against its own draws
        warnings.simplefilter("ignore", br.ConvergenceWarning)
        return model.compare(n_boot=100, draws=100, tune=100, chains=2, allow_unconverged=True)


def test_d_study_of_a_comparison_follows_brennan_for_both_engines(seeds_comparison):
    table = seeds_comparison.d_study({"seed": [1, 4]})
    rows = seeds_comparison.estimates[seeds_comparison.estimates["quantity"] == "variance"]
    reml = dict(zip(rows["component"], rows["reml"]))
    draws = seeds_comparison.posterior.idata.posterior["variance"]
    post = {str(c): draws.sel(component=c).values.ravel() for c in draws.component.values}
    assert list(table["seed"]) == [1, 4]
    for n, row in zip((1, 4), table.itertuples()):
        expected = reml["item"] / (reml["item"] + (reml["system:seed"] + reml["Residual"]) / n)
        assert row.phi == pytest.approx(expected, rel=1e-12)
        phi_draws = post["item"] / (post["item"] + (post["system:seed"] + post["Residual"]) / n)
        assert row.post_median == pytest.approx(np.median(phi_draws), rel=1e-12)
        assert row.post_low < row.post_median < row.post_high
    assert table["phi"].iloc[1] > table["phi"].iloc[0]


def test_d_study_counts_and_facets_are_checked(seeds_comparison):
    with pytest.raises(br.BayesreproError, match="counts= gives facet 'seed'"):
        seeds_comparison.d_study({"seed": [0, 2]})
    with pytest.raises(br.BayesreproError, match="counts= maps each facet"):
        seeds_comparison.d_study([("seed", 2)])
    with pytest.raises(br.BayesreproError, match="not facets of the model"):
        seeds_comparison.d_study({"rater": 2})
    with pytest.raises(br.BayesreproError, match="facet="):
        seeds_comparison.plot("d_study")


def test_comparison_draws_means_and_d_study_figures(seeds_comparison):
    from matplotlib.figure import Figure

    means = seeds_comparison.plot("means")
    assert isinstance(means, Figure) and means.axes[0].get_ylabel() == "estimated mean score"
    curves = seeds_comparison.plot("d_study", facet="seed", counts=[1, 2, 4])
    assert [list(line.get_xdata()) for line in curves.axes[0].get_lines()[:2]] == [[1, 2, 4], [1, 2, 4]]
    assert isinstance(seeds_comparison.posterior, br.Posterior)


def test_load_spec_fills_the_column_names_and_derives_columns():
    spec = br.load_spec("conditional_length", score="bleu")
    assert spec.formula.startswith("bleu ~ system*len") and spec.h0.startswith("bleu ~ ")
    ter = br.load_dataset("kreutzer_ter")
    prepared = br.load_spec("conditional_length").prepare(ter)
    assert set(prepared["len"].astype(str)) == {"short", "typical", "very long"}
    with pytest.raises(br.BayesreproError, match="system_comparison"):
        br.load_spec("system_comparisons")


def test_random_effects_table_of_a_slope_model_is_vca_json(capsys):
    sleep = str(DATA / "sleepstudy.csv.gz")
    fit = br.Model("Reaction ~ Days + (Days|Subject)", sleep, categorical=["Subject"]).fit()
    expected = command_json(capsys, "vca", sleep, "--formula", "Reaction ~ Days + (Days|Subject)", "--categorical",
                            "Subject")["random_effects"]
    table = fit.random_effects
    assert list(table.columns) == ["group", "var1", "var2", "vcov", "sdcor"]
    assert [row.sdcor for row in table.itertuples()] == pytest.approx([r["sdcor"] for r in expected], rel=1e-12)
    assert [None if isinstance(v, float) else v for v in table["var1"]] == [r["var1"] for r in expected]
    assert br.Model("Yield ~ 1 + (1|Batch)", DYESTUFF, categorical=["Batch"]).fit().random_effects["group"].tolist() \
        == ["Batch", "Residual"]


def test_baselines_equal_the_command_and_simulate_the_spec_design(capsys):
    data = br.simulate_binary_grid(items=40, seeds=2, prompts=2, random_state=5)
    assert len(data) == 40 * 3 * 2 * 2 and set(data["correct"]) <= {0, 1}
    path = Path(os.environ.get("TMPDIR", "/tmp")) / f"binary_{os.getpid()}.csv"
    data.to_csv(path, index=False)
    try:
        formula = "correct ~ system + (1|item) + (1|system:seed)"
        result = br.baselines(str(path), "correct", "item", "system", formula=formula, categorical=["seed"])
        expected = command_json(capsys, "baselines", str(path), "--score", "correct", "--item", "item", "--system",
                                "system", "--formula", formula, "--categorical", "seed")
        assert result.to_dict() == expected
        assert list(result.systems["system"]) == ["A", "B", "C"] and len(result.glmm_contrasts) == 3
        assert main(["baselines", str(path), "--score", "correct", "--item", "item", "--system", "system",
                     "--formula", formula, "--categorical", "seed"]) == 0
        assert python_names(capsys.readouterr().out) == result.summary() + "\n"
    finally:
        path.unlink()
    with pytest.raises(br.BayesreproError, match="corect"):
        br.baselines(data, "corect", "item", "system")


def test_d_study_of_a_fit_follows_brennan():
    fit = br.Model("diameter ~ 1 + (1|plate) + (1|sample)", PENICILLIN, object="plate").fit()
    v = fit.components["variance"]
    table = fit.d_study({"sample": [1, 6]})
    for n, row in zip((1, 6), table.itertuples()):
        assert row.sample == n
        assert row.phi == pytest.approx(v["plate"] / (v["plate"] + (v["sample"] + v["Residual"]) / n), rel=1e-12)
        assert row.e_rho2 == pytest.approx(v["plate"] / (v["plate"] + v["Residual"] / n), rel=1e-12)
    assert table["phi"].iloc[0] == pytest.approx(fit.phi, rel=1e-12)
    with pytest.raises(br.BayesreproError, match="counts= gives facet 'sample'"):
        fit.d_study({"sample": [2.5]})


def test_simulated_harness_logs_are_read_as_the_harness_wrote_them(tmp_path):
    grid = br.simulate_harness_logs(tmp_path / "logs", seeds=(1, 2), items=20, random_seed=3)
    runs = br.read(f"lm-eval:{tmp_path / 'logs'}")
    assert grid.runs == 2 * 2 * 2 == runs["run"].nunique() and len(runs) == grid.runs * 20
    assert grid.truth.model_effects == {"base": 0.0, "tuned": 0.5}
    with pytest.raises(br.BayesreproError, match="harness="):
        br.simulate_harness_logs(tmp_path / "other", harness="helm")


def test_plan_assumes_variances_in_place_of_the_pilots(capsys):
    model = br.Model("ter ~ system + (1|sentence_id) + (1|system:replication)", "kreutzer_ter")
    plan = dict(contrast="system=PostEdit-Marking", vary={"sentence_id": [1041], "replication": [3, 10]},
                simulations=0)
    pilot = model.plan(**plan).to_dict()
    seed_variance = {c["name"]: c["variance"] for c in pilot["assumed"]["components"]}["system:replication"]
    same = model.plan(**plan, assume={"system:replication": seed_variance}).to_dict()
    assert [r["power_closed_form"] for r in same["rows"]] == [r["power_closed_form"] for r in pilot["rows"]]
    noisy = model.plan(**plan, assume={"system:replication": 4e-4})
    assert {c["name"]: c["variance"] for c in noisy.to_dict()["assumed"]["components"]}["system:replication"] == 4e-4
    assert all(n < p for n, p in zip(noisy.rows["power_closed_form"], [r["power_closed_form"] for r in pilot["rows"]]))
    assert "assumed in place of the pilot's estimates" in noisy.summary()
    argv = ["plan", "kreutzer_ter", "--formula", "ter ~ system + (1|sentence_id) + (1|system:replication)",
            "--contrast", "system=PostEdit-Marking", "--vary", "sentence_id=1041", "--vary", "replication=3,10",
            "--simulations", "0", "--assume", "system:replication=4e-4"]
    assert noisy.to_dict() == command_json(capsys, *argv)
    with pytest.raises(br.BayesreproError, match="'seed' is not a component of the pilot"):
        model.plan(**plan, assume={"seed": 1.0})
    assert main([*argv[:-1], "seed=1"]) == 2 and "--assume 'seed'" in capsys.readouterr().err


def test_compare_without_phi_equals_the_command(capsys):
    formula = "Yield ~ 1 + (1|Batch)"
    with warnings.catch_warnings():   # a short run: the equality is the point here
        warnings.simplefilter("ignore", br.ConvergenceWarning)
        side = br.Model(formula, DYESTUFF, categorical=["Batch"]).compare(
            phi=False, n_boot=100, draws=100, tune=100, chains=2, allow_unconverged=True)
    assert set(side.estimates["quantity"]) == {"variance", "percent"} and side.to_dict()["object"] is None
    argv = ["compare", DYESTUFF, "--formula", formula, "--categorical", "Batch", "--no-phi", "--bootstrap", "100",
            "--draws", "100", "--tune", "100", "--chains", "2", "--allow-unconverged"]
    ours, expected = side.to_dict(), command_json(capsys, *argv, status=3 if side.not_converged() else 0)
    assert ours == expected


def _same_as_command(capsys, result, *argv):
    """The result's ``to_dict`` is the command's ``--json`` and its ``summary`` the command's text."""
    assert result.to_dict() == command_json(capsys, *argv)
    assert main(list(argv)) == 0
    assert python_names(capsys.readouterr().out) == result.summary() + "\n"


def test_resampling_tests_equal_the_commands(capsys):
    pair = ["kreutzer_ter", "--item", "sentence_id", "--system", "system", "--score", "ter", "--a", "Baseline", "--b",
            "Marking", "--instance", "replication", "--resamples", "200", "--seed", "4"]
    arguments = dict(data="kreutzer_ter", item="sentence_id", system="system", score="ter", a="Baseline", b="Marking",
                     instance="replication", resamples=200, seed=4)
    best = br.bootstrap(**arguments, lower_is_better=True)
    _same_as_command(capsys, best, "bootstrap", *pair, "--lower-is-better")
    assert (best.instance_a, best.instance_b) == ("1", "2") and best.n_items == 1041
    _same_as_command(capsys, br.bootstrap(**arguments, instances="multi"), "bootstrap", *pair, "--instances", "multi")
    _same_as_command(capsys, br.permutation(**arguments, alternative="less"), "permutation", *pair,
                     "--alternative", "less")
    with pytest.raises(br.BayesreproError, match=r"^resamples= must be a whole number"):
        br.permutation(**{**arguments, "resamples": 0})
    with pytest.raises(br.BayesreproError, match=r"^instances= multi needs instance="):
        br.bootstrap(**{**arguments, "instance": None}, instances="multi")


def test_budget_equals_the_command_and_draws_its_curve(capsys):
    arguments = ["sofa_mlp_grid", "--score", "accuracy", "--config", "system", "--budgets", "1", "10", "100",
                 "--resamples", "100", "--seed", "2", "--where", "dropout == '0.2'"]
    result = br.budget("sofa_mlp_grid", "accuracy", "system", budgets=[1, 10, 100], resamples=100, seed=2,
                       where="dropout == '0.2'")
    _same_as_command(capsys, result, "budget", *arguments)
    assert list(result.table["budget"]) == [1, 10, 100]
    figure = result.plot(title="SOFA")
    assert figure.axes[0].get_title() == "SOFA"
    with pytest.raises(br.BayesreproError, match=r"^level= must lie strictly between 0 and 1"):
        br.budget("sofa_mlp_grid", "accuracy", "system", level=95)
    with pytest.raises(br.BayesreproError, match=r"^config= names the score column"):
        br.budget("sofa_mlp_grid", "accuracy", ["system", "accuracy"])


def test_agreement_equals_the_command_and_escapes_its_labels(capsys):
    arguments = ["kreutzer_annotation", "--item", "sentence", "occasion", "--rater", "rater", "--score", "score",
                 "--level", "interval", "--where", "mode == 'Marking'"]
    result = br.agreement("kreutzer_annotation", ["sentence", "occasion"], "rater", "score", level="interval",
                          where="mode == 'Marking'")
    _same_as_command(capsys, result, "agreement", *arguments)
    assert result.n_raters == 10 and result.cohen_kappa is None
    # Krippendorff (2011), example A: two observers, ten units, alpha = 0.095
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    two = br.agreement(pd.DataFrame({"unit": list(range(10)) * 2, "rater": ["<a>"] * 10 + ["b&"] * 10,
                                     "value": a + b}), "unit", "rater", "value")
    assert round(two.krippendorff_alpha, 3) == 0.095 and two.cohen_kappa is not None
    assert "<a>" not in two._repr_html_()
    with pytest.raises(br.BayesreproError, match=r"^level= must be one of"):
        br.agreement("kreutzer_annotation", "sentence", "rater", "score", level="loud")


def test_circularity_equals_the_command_on_simulated_liver_data(capsys, tmp_path):
    liver = br.simulate_liver_sofa(400, seed=7)
    assert {"sofa_liver", "with_bilirubin", "without_bilirubin"} <= set(liver.columns) and len(liver) == 400
    path = tmp_path / "liver.csv"
    liver.to_csv(path, index=False)
    result = br.circularity(str(path), "with_bilirubin", ["bilirubin", "age"], defining=["bilirubin"], df=8)
    _same_as_command(capsys, result, "circularity", str(path), "--prediction", "with_bilirubin", "--features",
                     "bilirubin", "age", "--defining", "bilirubin", "--df", "8")
    # the tree given bilirubin learns the rule that defines the score; the one without it is explained by INR
    assert result.candidate == ("bilirubin",) and result.circular
    assert br.circularity(liver, "without_bilirubin", ["bilirubin", "inr", "age"], defining=["bilirubin"],
                          df=6).circular is False
    with pytest.raises(br.BayesreproError, match=r"^max_size=3 is more than the 2 features= given"):
        br.circularity(liver, "with_bilirubin", ["bilirubin", "age"], max_size=3)
    with pytest.raises(br.BayesreproError, match=r"^patients= must be a whole number"):
        br.simulate_liver_sofa(10)


def test_instruments_refuse_missing_values_or_drop_them_with_a_warning():
    ratings = br.load_dataset("kreutzer_annotation")
    ratings = ratings[ratings["mode"] == "Marking"].astype({"rater": object})
    ratings.loc[ratings.index[0], "rater"] = None
    with pytest.raises(br.BayesreproError, match=r"missing values in 'rater' \(1\).*drop_missing="):
        br.agreement(ratings, ["sentence", "occasion"], "rater", "score")
    with pytest.warns(br.BayesreproWarning, match="dropped 1 of 150 rows"):
        assert br.agreement(ratings, ["sentence", "occasion"], "rater", "score", drop_missing=True).n_ratings == 149


@pytest.mark.parametrize("keywords, named", [
    ({"items": -1}, "items"), ({"seeds": 0}, "seeds"), ({"prompts": 2.5}, "prompts"),
    ({"item_sd": -0.1}, "item_sd"), ({"seed_sd": float("nan")}, "seed_sd"), ({"intercept": "x"}, "intercept"),
    ({"systems": {}}, "systems"), ({"systems": {"A": float("inf")}}, "systems"), ({"link": "cauchit"}, "link"),
    ({"items": 1_000_000, "seeds": 1_000}, "items="),
])
def test_simulate_binary_grid_refuses_bad_keywords_naming_them(keywords, named):
    with pytest.raises(br.BayesreproError, match=named):
        br.simulate_binary_grid(**keywords)
