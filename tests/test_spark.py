"""Spark in local mode gives the statistics and estimates of rows in memory: a DataFrame passed from Python,
0/1 scores, --where and --categorical, and the command line's --engine spark (slow: a Spark session starts)."""

import json
import threading

import numpy as np
import pandas as pd
import pytest

from bayesrepro import cli
from bayesrepro.datasets import load_dataset
from bayesrepro.design import build_model_frame, model_frame
from bayesrepro.frequentist.glrt import glrt
from bayesrepro.frequentist.lmm import fit_model_frame
from test_producers import assert_same_fit, cell_table

pytestmark = pytest.mark.slow
TER = "ter ~ system*src_length + (1|sentence_id) + (1|replication)"


@pytest.fixture(scope="module")
def spark():
    pytest.importorskip("pyspark")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("bayesrepro-tests")
               .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def ter_text():
    """kreutzer_ter with its identifiers as text and a column of notes holding a quote and a backslash."""
    data = load_dataset("kreutzer_ter").astype({"sentence_id": str, "system": str, "replication": str})
    notes = np.array(["it's", "a\\b", "plain", "ab"])
    return data.assign(note=notes[np.arange(len(data)) % 4])


def test_a_spark_dataframe_from_python_gives_the_memory_fit_and_glrt(spark, ter_text):
    frame = model_frame(TER, spark.createDataFrame(ter_text))      # a Spark DataFrame goes to Spark by itself
    memory = build_model_frame(TER, ter_text)
    assert not frame.has_rows and frame.n_obs == memory.n_obs == len(ter_text)
    assert [list(g.levels) for g in frame.groups] == [list(g.levels) for g in memory.groups]
    for method in ("reml", "ml"):
        assert_same_fit(fit_model_frame(frame, method), fit_model_frame(memory, method))
    h0 = "ter ~ system + src_length + (1|sentence_id) + (1|replication)"
    assert glrt(h0, frame).chi2 == pytest.approx(glrt(h0, memory).chi2, rel=1e-8)


def test_binary_scores_through_spark_give_the_memory_cells_and_glmm(spark):
    from bayesrepro.frequentist.glmm import fit_glmm
    from bayesrepro.simulate import binary_grid

    data = binary_grid(items=120, seeds=3, prompts=2, random_state=5)
    data = data.astype({c: str for c in ("item", "system", "seed", "prompt")})
    formula = "correct ~ system + (1|item) + (1|system:seed) + (1|prompt)"
    frame, memory = model_frame(formula, spark.createDataFrame(data)), build_model_frame(formula, data)
    pd.testing.assert_frame_equal(cell_table(frame.binomial()), cell_table(memory.binomial()))
    fit, reference = fit_glmm(frame), fit_glmm(memory)
    for name, value in reference.variances.items():
        assert fit.variances[name] == pytest.approx(value, rel=1e-10, abs=1e-14), name
    assert fit.loglik == pytest.approx(reference.loglik, rel=1e-12)


def test_where_and_categorical_columns_through_spark_equal_memory(spark, ter_text, tmp_path):
    path = tmp_path / "ter.csv"
    ter_text.to_csv(path, index=False)
    formula = "ter ~ system + replication + (1|sentence_id)"
    # texts with a quote and a backslash: Spark reads backslashes in its literals as escapes
    where = "src_length > 15 and note in [\"it's\", 'a\\\\b'] and not startswith(sentence_id, '1')"
    kept = {}
    for engine in ("spark", "memory"):
        kept[engine] = model_frame(formula, str(path), where=where, engine=engine, categorical=["replication"],
                                   spark_master="local[2]")
    assert kept["spark"].n_obs == kept["memory"].n_obs
    expected = ter_text[(ter_text["src_length"] > 15) & ter_text["note"].isin(["it's", "a\\b"])
                        & ~ter_text["sentence_id"].str.startswith("1")]
    assert kept["spark"].n_obs == len(expected) > 0
    assert any("replication" in name for name in kept["spark"].fixed_names)
    assert_same_fit(fit_model_frame(kept["spark"], "reml"), fit_model_frame(kept["memory"], "reml"))


def test_the_command_line_with_engine_spark_prints_the_memory_fit(spark, ter_text, tmp_path, capsys):
    path = tmp_path / "ter.parquet"
    ter_text.to_parquet(path)
    arguments = ["--formula", TER, "--where", "note != 'plain'", "--categorical", "replication", "--json"]
    assert cli.main(["vca", str(path), "--engine", "spark", "--spark-master", "local[2]", *arguments]) == 0
    spark_fit = json.loads(capsys.readouterr().out)
    assert cli.main(["vca", str(path), "--engine", "memory", *arguments]) == 0
    memory_fit = json.loads(capsys.readouterr().out)
    assert spark_fit["n_obs"] == memory_fit["n_obs"] == int((ter_text["note"] != "plain").sum())
    for ours, theirs in zip(spark_fit["components"], memory_fit["components"]):
        assert ours["name"] == theirs["name"] and ours["variance"] == pytest.approx(theirs["variance"], rel=1e-8)
    assert spark_fit["reml_criterion"] == pytest.approx(memory_fit["reml_criterion"], rel=1e-10)


def test_the_progress_of_a_spark_query_is_the_share_of_its_tasks_finished(spark):
    from bayesrepro.design.producers.spark_source import _finished_tasks

    context = spark.sparkContext
    assert _finished_tasks(context, "no-such-group") == -1.0

    def count():
        context.setJobGroup("bayesrepro-test-progress", "a count", interruptOnCancel=True)
        spark.range(0, 200_000, numPartitions=4).selectExpr("sum(id)").collect()

    worker = threading.Thread(target=count)
    worker.start()
    worker.join()
    assert _finished_tasks(context, "bayesrepro-test-progress") == 1.0
