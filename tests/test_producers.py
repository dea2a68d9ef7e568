"""Every producer gives the same statistics and estimates: rows in memory, DuckDB over files, Spark."""

import gzip
import io
import json
import re
import sys
import threading
import time

import numpy as np
import pandas as pd
import pytest

from bayesrepro.datasets import dataset_path, load_dataset
from bayesrepro.design import build_model_frame, model_frame
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.glrt import glrt
from bayesrepro.frequentist.lmm import fit_model_frame

GRID = ("ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout) + (1|decoder_dropout)"
        " + (1|decoder_dropout_hidden) + (1|delta_scheme)")
TER = "ter ~ system*src_length + (1|sentence_id) + (1|replication)"
ANNOTATION = "score ~ mode + (1|sentence) + (1|rater) + (1|sentence:rater) + (1|rater:occasion)"
# Estimates are compared where they are identified: the partial grid's two confounded
# dropout factors split their summed variance arbitrarily, so their sum is compared.
CONFOUNDED = ("encoder_dropout", "decoder_dropout_hidden")


def assert_same_fit(a, b, rel=1e-8):
    """Components (of at least 1e-8 of the total), fixed effects and criterion agree to ``rel``."""
    va, vb = dict(a.variances), dict(b.variances)
    if set(CONFOUNDED) <= set(va):
        for v in (va, vb):
            v["+".join(CONFOUNDED)] = v.pop(CONFOUNDED[0]) + v.pop(CONFOUNDED[1])
    total = sum(vb.values())
    for name, value in vb.items():
        if value > 1e-8 * total:
            assert va[name] == pytest.approx(value, rel=rel), name
        else:
            assert va[name] <= 1e-7 * total, name
    np.testing.assert_allclose(a.beta, b.beta, rtol=rel, atol=rel * np.abs(b.beta).max())
    assert a.criterion == pytest.approx(b.criterion, rel=1e-10)


@pytest.mark.parametrize("name, formula", [("kreutzer_marking_partial", GRID), ("kreutzer_ter", TER),
                                           ("kreutzer_annotation", ANNOTATION)])
def test_duckdb_over_the_csv_file_equals_memory(name, formula):
    duck = model_frame(formula, str(dataset_path(name)), engine="duckdb")
    memory = build_model_frame(formula, load_dataset(name))
    assert not duck.has_rows and duck.n_obs == memory.n_obs
    assert duck.fixed_names == memory.fixed_names
    assert [list(g.levels) for g in duck.groups] == [list(g.levels) for g in memory.groups]
    s, m = duck.stats(), memory.stats()
    for field in ("dominant_counts", "rest_gram", "xtx", "dominant_zx", "rest_zx"):
        np.testing.assert_array_equal(getattr(s, field), getattr(m, field))   # counts: exact
    for field in ("dominant_zy", "rest_zy", "xty", "yty"):
        np.testing.assert_allclose(getattr(s, field), getattr(m, field), rtol=1e-10, atol=1e-9)
    for method in ("reml", "ml"):
        assert_same_fit(fit_model_frame(duck, method), fit_model_frame(memory, method))


@pytest.fixture(scope="module")
def ter_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("ter")
    data = load_dataset("kreutzer_ter")
    for k, part in enumerate(np.array_split(np.arange(len(data)), 3)):
        data.iloc[part].to_csv(folder / f"part{k}.csv", index=False)
        data.iloc[part].to_parquet(folder / f"part{k}.parquet")
        data.iloc[part].astype({"sentence_id": str, "system": str, "replication": str}).to_json(
            folder / f"part{k}.jsonl", orient="records", lines=True)
    return folder, data


@pytest.mark.parametrize("pattern", ["part*.csv", "part*.parquet", "part*.jsonl"])
def test_duckdb_over_many_files_of_each_format_equals_memory(ter_files, pattern):
    folder, data = ter_files
    duck = model_frame(TER, str(folder / pattern), engine="auto")   # a glob goes to DuckDB by itself
    assert not duck.has_rows
    assert_same_fit(fit_model_frame(duck, "reml"), fit_model_frame(build_model_frame(TER, data), "reml"))


@pytest.mark.parametrize("terms", ["1 + (1|item) + (1|seed) + (1|lr)", "system + (1|item) + (1|seed) + (1|lr)",
                                   "1 + (1|item) + (1|seed) + (1|seed:lr)"])
def test_levels_estimated_from_the_first_rows_choose_other_sets_but_change_no_statistic(tmp_path, monkeypatch, terms):
    """Rows sorted by item: the first rows show one item and every seed, so another factor is taken for the one of
    most levels; DuckDB then sums other grouping sets, and every statistic is still the memory engine's."""
    from bayesrepro.design.producers import grouped

    rng = np.random.default_rng(8)
    items, seeds, lrs = 30, 4, 3
    data = pd.DataFrame({"item": np.repeat([f"i{k}" for k in range(items)], 2 * seeds * lrs),
                         "system": np.tile(["A", "B"], items * seeds * lrs),
                         "seed": np.tile(np.repeat([f"s{k}" for k in range(seeds)], 2 * lrs), items),
                         "lr": np.tile(np.repeat([f"r{k}" for k in range(lrs)], 2), items * seeds),
                         "score": rng.normal(size=items * seeds * lrs * 2)})
    data.to_parquet(tmp_path / "grid.parquet")
    formula = f"score ~ {terms}"
    memory = build_model_frame(formula, data)
    frames = {}
    for first_rows in (grouped.ESTIMATE_ROWS, 2 * seeds * lrs):
        monkeypatch.setattr(grouped, "ESTIMATE_ROWS", first_rows)
        frames[first_rows] = duck = model_frame(formula, str(tmp_path / "grid.parquet"), engine="duckdb")
        assert [list(g.levels) for g in duck.groups] == [list(g.levels) for g in memory.groups]
        s, m = duck.stats(), memory.stats()
        for field in ("dominant_counts", "rest_gram", "xtx", "dominant_zx", "rest_zx"):
            np.testing.assert_array_equal(getattr(s, field), getattr(m, field))
        for field in ("dominant_zy", "rest_zy", "xty", "yty"):
            np.testing.assert_allclose(getattr(s, field), getattr(m, field), rtol=1e-10, atol=1e-9)
        assert_same_fit(fit_model_frame(duck, "reml"), fit_model_frame(memory, "reml"))
    whole, first = (frames[n].plan for n in frames)
    assert np.argmax(whole.level_estimates) == 0 and np.argmax(first.level_estimates) != 0   # item, then another
    assert whole.queried_sets()[1] != first.queried_sets()[1]   # other sets summed by Python, from other sets


def test_a_glrt_on_duckdb_frames_equals_the_memory_glrt():
    path = str(dataset_path("kreutzer_ter"))
    h0, h1 = "ter ~ 1 + (1|sentence_id)", "ter ~ system + (1|sentence_id)"
    duck = glrt(h0, model_frame(h1, path, engine="duckdb"))
    memory = glrt(h0, h1, "kreutzer_ter")
    assert duck.chi2 == pytest.approx(memory.chi2, rel=1e-8) and duck.chi2 == pytest.approx(34.09, abs=0.005)
    assert duck.df == memory.df == 2


def test_identifiers_keep_their_text_in_duckdb(tmp_path):
    # '007' and '7' are two items; read as numbers they would be merged
    rng = np.random.default_rng(3)
    items = ["007", "7", "08", "8", "x"] * 8
    frame = pd.DataFrame({"item": items, "seed": np.repeat(["1", "2"], 20),
                          "score": rng.normal(size=40)})
    path = tmp_path / "ids.csv"
    frame.to_csv(path, index=False)
    duck = model_frame("score ~ 1 + (1|item) + (1|seed)", str(path), engine="duckdb")
    assert list(duck.groups[0].levels) == ["007", "08", "7", "8", "x"]


@pytest.mark.parametrize(
    "content, formula, message",
    [
        ("item,score,score\na,1,2\nb,2,3\n", "score ~ 1 + (1|item)", "has the column 'score' more than once"),
        ("item,score\na,1\nb,\na,2\nb,3\n", "score ~ 1 + (1|item)", "missing values in 'score' \\(1\\)"),
        ("item,score\na,1\nb,x\na,2\nb,3\n", "score ~ 1 + (1|item)", "not numeric: it holds 'x'"),
        ("item,score\na,1\nb,1\na,1\nb,1\n", "score ~ 1 + (1|item)", "is constant"),
        ("item,score\na,1\nb,2\na,2\nb,3\n", "score ~ 1 + (1|itme)", "did you mean 'item'"),
        ("item,score\na,1\na,2\na,3\n", "score ~ 1 + (1|item)", "single level"),
        ("item,score,x\na,1,1\nb,2,2\na,2,3\nb,3,4\n", "score ~ scale(x) + (1|item)", "needs the rows in memory"),
    ],
)
def test_bad_files_fail_in_one_line_through_duckdb(tmp_path, content, formula, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    with pytest.raises(BayesreproError, match=message):
        model_frame(formula, str(path), engine="duckdb")


@pytest.mark.parametrize(
    "name, content, message",
    [
        ("ragged.csv", b"item,score\na,1\nb\nc,3,4\n", "data row 2 .* has 1 field\\(s\\) but the header has 2"),
        ("binary.csv", b"\x00\x01\x02garbage\n", "is not a text file"),
        ("empty.csv", b"", "is empty"),
        ("header.csv", b"item,score\n", "has no rows"),
        ("cut.csv.gz", gzip.compress(b"item,score\n" + b"a,1\nb,2\n" * 500, mtime=0)[:60], "could not read.*(end|GZIP)"),
    ],
)
def test_malformed_files_fail_in_one_line_through_duckdb(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(BayesreproError, match=message):
        model_frame("score ~ 1 + (1|item)", str(path), engine="duckdb")


def test_missing_values_are_dropped_when_asked(tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("item,score\na,1\nb,\na,2\nb,3\nc,1\nc,4\n")
    duck = model_frame("score ~ 1 + (1|item)", str(path), engine="duckdb", drop_missing=True)
    assert duck.n_obs == 5 and any("dropped rows with missing values" in note for note in duck.notes)


def test_engines_are_chosen_and_checked():
    with pytest.raises(BayesreproError, match="--engine 'gpu' is unknown"):
        model_frame(TER, "kreutzer_ter", engine="gpu")
    with pytest.raises(BayesreproError, match="--engine duckdb reads files"):
        model_frame(TER, load_dataset("kreutzer_ter"), engine="duckdb")
    assert model_frame(TER, "kreutzer_ter").has_rows   # small inputs stay in memory


def test_the_parametric_bootstrap_of_a_duckdb_frame_equals_that_of_memory():
    # the replicates are drawn in the sufficient statistics, which both producers give alike
    from bayesrepro.compare import parametric_bootstrap

    formula = "ter ~ system + (1|sentence_id) + (1|system:replication)"
    duck = model_frame(formula, str(dataset_path("kreutzer_ter")), engine="duckdb")
    memory = build_model_frame(formula, load_dataset("kreutzer_ter"))
    boots = [parametric_bootstrap(fit_model_frame(frame, "reml"), frame, 30, np.random.default_rng(1))
             for frame in (duck, memory)]
    assert boots[0][1] == boots[1][1]
    scale = boots[1][0].to_numpy().max(axis=0)
    np.testing.assert_allclose(boots[0][0].to_numpy() / scale, boots[1][0].to_numpy() / scale, rtol=0, atol=1e-8)


def test_compare_over_parquet_files_through_duckdb_equals_compare_in_memory(ter_files, capsys):
    from bayesrepro import cli
    from bayesrepro.compare import compare

    folder, data = ter_files
    formula, quick = "ter ~ system + (1|sentence_id)", ["--draws", "100", "--tune", "100", "--chains", "2"]
    status = cli.main(["compare", str(folder / "part*.parquet"), "--formula", formula, "--bootstrap", "100", *quick,
                       "--seed", "0", "--allow-unconverged", "--json"])
    assert status in (0, 3)
    duck = json.loads(capsys.readouterr().out)
    memory = compare(formula, data, n_boot=100, draws=100, tune=100, chains=2, seed=0, allow_unconverged=True, loo=False)
    assert duck["n_obs"] == memory.n_obs == len(data)
    estimates = pd.DataFrame(duck["estimates"])
    for column in ("reml", "boot_low", "boot_high"):
        np.testing.assert_allclose(estimates[column], memory.estimates[column], rtol=1e-8, atol=1e-12)
    # the same posterior sampled from the same seed; statistics equal to rounding may still part the chains
    phi = estimates[estimates["quantity"] == "phi"].iloc[0]
    assert memory.phi["low"] < phi["median"] < memory.phi["high"]
    assert duck["tests"][0]["chi2"] == pytest.approx(memory.tests[0]["chi2"], rel=1e-8)
    np.testing.assert_allclose(pd.DataFrame(duck["contrasts"])["p"], memory.contrasts["p"], rtol=1e-6)
    assert "loo_elpd_diff" not in duck["tests"][0]
    assert any("LOO needs each item's sum of squares" in note and "--engine memory" in note for note in duck["notes"])


def test_a_frame_without_rows_refuses_what_needs_rows():
    from bayesrepro.bayes import fit_bayes

    duck = model_frame("ter ~ system + (1|sentence_id)", str(dataset_path("kreutzer_ter")), engine="duckdb")
    with pytest.raises(BayesreproError, match="Bambi's own model.*needs the rows in memory.*--engine memory"):
        fit_bayes(duck, backend="bambi", draws=100, tune=100, chains=2)


@pytest.mark.slow
def test_spark_local_mode_equals_memory_on_a_million_rows(tmp_path):
    pytest.importorskip("pyspark")
    rng = np.random.default_rng(7)
    items, configs = 2000, 500
    item = np.repeat(np.arange(items), configs)
    seed, lr = np.tile(np.arange(configs) % 10, items), np.tile(np.arange(configs) // 100, items)
    score = (rng.normal(0, 0.3, items)[item] + rng.normal(0, 0.05, 10)[seed] + rng.normal(0, 0.1, 5)[lr]
             + rng.normal(0, 0.2, items * configs))
    data = pd.DataFrame({"item": item.astype(str), "seed": seed.astype(str), "lr": lr.astype(str), "score": score})
    path = tmp_path / "grid.parquet"
    data.to_parquet(path)
    formula = "score ~ 1 + (1|item) + (1|seed) + (1|lr)"
    spark = model_frame(formula, str(path), engine="spark", spark_master="local[2]")
    memory = build_model_frame(formula, data)
    assert spark.n_obs == 1_000_000
    assert_same_fit(fit_model_frame(spark, "reml"), fit_model_frame(memory, "reml"))


def test_binary_scores_through_duckdb_give_the_memory_glmm(tmp_path):
    from bayesrepro.frequentist.glmm import fit_glmm
    from bayesrepro.simulate import binary_grid

    data = binary_grid(items=150, seeds=3, prompts=2, random_state=4)
    data.to_parquet(tmp_path / "binary.parquet")
    formula = "correct ~ system + (1|item) + (1|system:seed) + (1|prompt)"
    duck_frame = model_frame(formula, str(tmp_path / "binary.parquet"), engine="duckdb")
    memory_frame = build_model_frame(formula, data)
    # the cells are counts: both producers give the same successes and trials of the same cells, exactly
    pd.testing.assert_frame_equal(cell_table(duck_frame.binomial()), cell_table(memory_frame.binomial()))
    duck, memory = fit_glmm(duck_frame), fit_glmm(memory_frame)
    assert duck.family == memory.family == "bernoulli"
    # the same criterion, summed in the same or another order of the cells: one optimum to the last digits
    for name, value in memory.variances.items():
        assert duck.variances[name] == pytest.approx(value, rel=1e-10, abs=1e-14), name
    np.testing.assert_allclose(duck.beta, memory.beta, rtol=1e-10)
    assert duck.loglik == pytest.approx(memory.loglik, rel=1e-12)


def cell_table(cells) -> pd.DataFrame:
    """Binomial cells as a table of their levels, fixed design row, successes and trials, in a canonical order."""
    table = pd.DataFrame({name: np.asarray(levels)[codes]
                          for name, codes, levels in zip(cells.group_names, cells.codes, cells.levels)})
    table["fixed"] = [tuple(row) for row in cells.X]
    table["successes"], table["trials"] = cells.successes, cells.trials
    return table.sort_values(list(table.columns)).reset_index(drop=True)


def test_where_and_categorical_columns_through_duckdb_equal_memory(tmp_path):
    data = load_dataset("kreutzer_ter")
    path = tmp_path / "ter.csv"
    data.to_csv(path, index=False)
    formula = "ter ~ system + replication + (1|sentence_id)"
    where = "src_length > 15 and system in ['Marking', 'PostEdit'] and not startswith(sentence_id, '1')"
    duck = model_frame(formula, str(path), where=where, engine="duckdb", categorical=["replication"])
    memory = model_frame(formula, str(path), where=where, engine="memory", categorical=["replication"])
    assert duck.n_obs == memory.n_obs < len(data)
    assert duck.fixed_names == memory.fixed_names and any("replication" in n for n in duck.fixed_names)
    assert_same_fit(fit_model_frame(duck, "reml"), fit_model_frame(memory, "reml"))
    with pytest.raises(BayesreproError, match="keeps no rows|has no rows"):
        model_frame(formula, str(path), where="src_length > 10000", engine="duckdb")
    with pytest.raises(BayesreproError, match="srclength"):
        model_frame(formula, str(path), where="srclength > 10", engine="duckdb")


def test_a_scan_shows_duckdbs_estimate_of_its_progress_on_stderr_and_never_prints_duckdbs_own_bar(capsys, monkeypatch):
    import duckdb
    import pyarrow.compute as pc

    from bayesrepro.design.producers import duckdb_source as module
    from bayesrepro.progress import Progress

    path = str(dataset_path("kreutzer_ter"))
    quiet = module.duckdb_source(path, threads=1, progress=False)
    # DuckDB would print its own bar on stdout, into --json output, once a query runs 2 s
    assert not quiet.run("SELECT current_setting('enable_progress_bar_print') AS shown")["shown"].iloc[0]
    quiet.run("SELECT sum(hash(i)) AS h FROM range(100000) t(i)")
    assert capsys.readouterr().err == ""

    # The scan stops halfway until the bar has drawn an estimate strictly between 0 and 100 %, so the
    # check does not depend on how fast DuckDB is
    rows, drawn = 2_000_000, threading.Event()

    def halfway_waits_for_the_bar(chunk):
        if pc.any(pc.equal(chunk, rows // 2)).as_py() and not drawn.wait(60):
            raise RuntimeError("no progress was drawn while the scan waited halfway")
        return chunk

    def update(bar, fraction):
        original_update(bar, fraction)
        if 0 < fraction < 1:
            drawn.set()

    def connect(*args, **kwargs):
        connection = original_connect(*args, **kwargs)
        connection.create_function("halfway_waits_for_the_bar", halfway_waits_for_the_bar, ["BIGINT"], "BIGINT",
                                   type="arrow")
        connection.execute(f"CREATE TABLE numbers AS SELECT range AS i FROM range({rows})")   # a scan with progress
        return connection

    original_update, original_connect = Progress.update, duckdb.connect
    monkeypatch.setattr(Progress, "update", update)
    monkeypatch.setattr(duckdb, "connect", connect)
    shown_source = module.duckdb_source(path, threads=1, progress=True)
    total = shown_source.run("SELECT sum(halfway_waits_for_the_bar(i)) AS s FROM numbers")["s"].iloc[0]
    assert total == rows * (rows - 1) // 2
    shown = capsys.readouterr()
    assert shown.out == ""
    fractions = [int(p) for p in re.findall(r"reading kreutzer_ter\.csv\.gz \[[#.]{30}\]\s+(\d+) %", shown.err)]
    assert any(0 < f < 100 for f in fractions) and all(0 <= f <= 100 for f in fractions) and fractions == sorted(fractions)


def test_a_polled_query_hands_back_its_error_and_ctrl_c_stops_the_engine():
    from bayesrepro.design.producers.polling import run_polled
    from bayesrepro.progress import Progress

    def failing():
        raise BayesreproError("the engine refused")

    with pytest.raises(BayesreproError, match="the engine refused"):
        run_polled(failing, lambda: 0.5, Progress("x", False), lambda: None)
    stopped = threading.Event()   # the engine runs until it is stopped

    def interrupted():
        raise KeyboardInterrupt   # what Ctrl-C raises in the waiting thread

    def engine():   # stops a while after it is told to
        stopped.wait(60)
        time.sleep(0.3)

    threads = threading.active_count()
    with pytest.raises(KeyboardInterrupt):
        run_polled(engine, interrupted, Progress("x", True, io.StringIO()), stopped.set)
    assert stopped.is_set() and threading.active_count() == threads   # the engine's thread ended before Ctrl-C left


def test_spark_without_pyspark_is_one_line_naming_the_extra(monkeypatch, capsys):
    from bayesrepro import cli

    for module in ("pyspark", "pyspark.errors", "pyspark.sql"):
        monkeypatch.setitem(sys.modules, module, None)   # import fails as when pyspark is not installed
    status = cli.main(["vca", str(dataset_path("kreutzer_ter")), "--formula", "ter ~ 1 + (1|sentence_id)",
                       "--engine", "spark"])
    error = capsys.readouterr().err
    assert status == 2 and len(error.splitlines()) == 1
    assert error.startswith("bayesrepro: error: --engine spark needs pyspark") and "pip install 'bayesrepro[spark]'" in error


def test_spark_without_java_is_one_line_before_spark_starts(monkeypatch):
    pytest.importorskip("pyspark")
    monkeypatch.setenv("JAVA_HOME", "/nonexistent")
    with pytest.raises(BayesreproError, match="--engine spark needs Java 17\\+ \\(JAVA_HOME=/nonexistent has no bin/java\\)"):
        model_frame("ter ~ 1 + (1|sentence_id)", str(dataset_path("kreutzer_ter")), engine="spark")
