"""Every field the harness importers read has a type and a range; scores are finite; arguments never overwrite
the importer's own columns; the paths and frames given are what they claim to be."""

import json
import os
import re

import numpy as np
import pandas as pd
import pytest

from bayesrepro.data import read_table
from bayesrepro.errors import BayesreproError
from bayesrepro.harness import import_logs, read_logs
from bayesrepro.harness.eval_zip import EvalArchive
from bayesrepro.harness.log_writers import Document, InspectSample, LmEvalTask, write_inspect_log, write_lm_eval_run
from bayesrepro.harness.zip_writer import write_zip

# JSON text of values that are no finite whole number, as a log may hold them
NOT_WHOLE = ["Infinity", "1e30", "1.5", '"1"', "[1]", "true", "-Infinity", "NaN", "{}"]


def lm_eval_run(folder, scores=None, model_args=None, date="2026-01-01T10-00-00.000001", seed=1):
    task = LmEvalTask("qa", [Document(i, f"question {i}", ("a", "b"), i % 2) for i in range(4)], num_fewshot=2)
    results = write_lm_eval_run(folder, model="org/model", date=date, seed=seed,
                                tasks={task: scores or {"acc": [1.0, 0.0, 1.0, 1.0]}})
    if model_args is not None:   # an object, or lm-eval's older argument string
        set_field(results, ("config", "model_args"), json.dumps(model_args))
    return results


def set_field(path, keys, text):
    """Set the field at ``keys`` of the JSON file at ``path`` to the JSON ``text`` (which may be Infinity)."""
    payload = json.loads(path.read_text())
    parent = payload
    for key in keys[:-1]:
        parent = parent[key]
    parent[keys[-1]] = "@@value@@"
    path.write_text(json.dumps(payload).replace('"@@value@@"', text))


@pytest.mark.parametrize("text", NOT_WHOLE)
@pytest.mark.parametrize("keys, shown", [
    (("config", "random_seed"), "config.random_seed"),
    (("n-shot", "qa"), "n-shot.qa"),
    (("n-samples", "qa", "effective"), "n-samples.qa.effective"),
])
def test_lm_eval_counts_and_seeds_that_are_no_whole_number_are_refused_with_their_path(tmp_path, keys, shown, text):
    results = lm_eval_run(tmp_path)
    set_field(results, keys, text)
    with pytest.raises(BayesreproError, match=rf"results file .*: field {shown} must be a whole number from .* not "
                                              rf"{re.escape(json.dumps(json.loads(text)))};"):
        read_logs("lm-eval", [tmp_path])


@pytest.mark.parametrize("keys, shown, expected", [
    (("configs", "qa"), "configs.qa", "an object"),
    (("config",), "config", "an object"),
    (("n-samples",), "n-samples", "an object"),
    (("config", "model_args"), "config.model_args", "an object or a text of name=value pairs"),
    (("model_name",), "model_name", "text"),
])
def test_lm_eval_configs_that_are_no_object_are_refused_with_their_path(tmp_path, keys, shown, expected):
    results = lm_eval_run(tmp_path)
    set_field(results, keys, "[1, 2]")
    with pytest.raises(BayesreproError, match=rf"field {shown} must be {expected}, not \[1, 2\]"):
        read_logs("lm-eval", [tmp_path])


def inspect_log(path, values=("C", "I", "C", "C"), seed=1, **kw):
    samples = [InspectSample(f"s{i}", 1, f"question {i}", f"answer {i}", {"match": v}) for i, v in enumerate(values)]
    return write_inspect_log(path, task="qa", model="m/x", samples=samples, seed=seed, **kw)


@pytest.mark.parametrize("text", NOT_WHOLE)
@pytest.mark.parametrize("keys, shown", [
    (("plan", "config", "seed"), "plan.config.seed"),
    (("results", "scores", 0, "scored_samples"), r"results.scores\[0\].scored_samples"),
    (("samples", 1, "epoch"), r"samples\[1\].epoch"),
])
def test_inspect_seeds_epochs_and_counts_that_are_no_whole_number_are_refused_with_their_path(tmp_path, keys, shown,
                                                                                              text):
    path = inspect_log(tmp_path / "a.json")
    set_field(path, keys, text)
    with pytest.raises(BayesreproError, match=rf"Inspect log .*: field {shown} must be a whole number"):
        read_logs("inspect", [path])


@pytest.mark.parametrize("keys, shown, expected", [
    (("plan",), "plan", "an object"), (("plan", "config"), "plan.config", "an object"),
    (("eval", "model_args"), "eval.model_args", "an object"), (("eval", "config"), "eval.config", "an object"),
    (("results", "scores"), "results.scores", "a list"), (("results", "scores", 0), r"results.scores\[0\]", "an object"),
    (("eval", "dataset", "sample_ids"), "eval.dataset.sample_ids", "a list"), (("status",), "status", "text"),
])
def test_inspect_plans_and_configs_of_the_wrong_type_are_refused_with_their_path(tmp_path, keys, shown, expected):
    path = inspect_log(tmp_path / "a.json")
    set_field(path, keys, '"text"' if expected == "a list" or keys[-1] == 0 else "[1]")
    with pytest.raises(BayesreproError, match=rf"field {shown} must be {expected}"):
        read_logs("inspect", [path])


def test_the_eval_archive_is_checked_like_the_json_log(tmp_path):
    path = inspect_log(tmp_path / "a.eval")
    with EvalArchive(path) as archive:
        members = {name: archive.read_raw(archive.member(name)) for name in ("header.json", "summaries.json")}
    header = json.loads(members["header.json"])
    header["plan"]["config"]["seed"] = 1.5
    write_zip(path, [("header.json", json.dumps(header).encode()), ("summaries.json", members["summaries.json"])])
    with pytest.raises(BayesreproError, match=r"Inspect log .*a\.eval': field plan.config.seed must be a whole number "
                                              r".* not 1\.5;"):
        read_logs("inspect", [path])


@pytest.mark.parametrize("aggregate", ['"0.75"', "[0.75]", "true", "Infinity", "null", "{}", "1" + "0" * 400])
def test_an_lm_eval_mean_that_is_no_finite_number_is_a_mismatch(tmp_path, aggregate):
    results = lm_eval_run(tmp_path)
    set_field(results, ("results", "qa", "acc,none"), aggregate)
    with pytest.raises(BayesreproError, match="metric 'acc': the harness's mean is no finite number, but the "
                                              "harness's own aggregate"):
        read_logs("lm-eval", [tmp_path])


@pytest.mark.parametrize("aggregate", ['"0.75"', "[0.75]", "false", "-Infinity"])
def test_an_inspect_accuracy_that_is_no_finite_number_is_a_mismatch(tmp_path, aggregate):
    path = inspect_log(tmp_path / "a.json")
    set_field(path, ("results", "scores", 0, "metrics", "accuracy", "value"), aggregate)
    with pytest.raises(BayesreproError, match="metric 'match: accuracy': the harness's mean is no finite number"):
        read_logs("inspect", [path])


def infinite_lm_eval_run(folder, aggregate="Infinity"):
    results = lm_eval_run(folder)
    samples = next(folder.rglob("samples_*.jsonl"))
    lines = samples.read_text().splitlines(keepends=True)
    lines[2] = lines[2].replace('"acc": 1.0', '"acc": Infinity')
    samples.write_text("".join(lines))
    set_field(results, ("results", "qa", "acc,none"), aggregate)
    return results


def test_an_infinite_score_is_refused_even_when_the_harness_mean_is_infinite_too(tmp_path):
    infinite_lm_eval_run(tmp_path)
    with pytest.raises(BayesreproError, match=r"1 score\(s\) of task 'qa' are infinite \(the first: metric 'acc' of "
                                              r"item 2\); .* --drop-infinite"):
        read_logs("lm-eval", [tmp_path])


def test_an_infinite_score_cannot_make_any_aggregate_pass_the_check():
    from bayesrepro.harness.aggregates import MISMATCH, compare_mean, plain_sum

    for theirs in (0.5, float("inf"), float("nan")):
        check = compare_mean("qa", "acc", np.array([1.0, np.inf, 0.0]), theirs, (plain_sum,))
        assert check.status == MISMATCH


def test_with_drop_infinite_such_samples_are_left_out_and_counted(tmp_path):
    infinite_lm_eval_run(tmp_path, aggregate="0.75")
    notes = []
    summary = import_logs("lm-eval", [tmp_path], tmp_path / "t.parquet", drop_infinite=True, notify=notes.append)
    table = pd.read_parquet(tmp_path / "t.parquet")
    assert table["item"].tolist() == ["0", "1", "3"] and np.isfinite(table["acc"]).all()
    assert summary.to_dict()["infinite_scores_dropped"] == 1 and summary.dropped_samples == 1
    assert any("left out 1 sample(s)" in note and "infinite score" in note for note in notes)
    assert summary.aggregates.to_dict()["not_checked"][0]["reason"].startswith("samples with an infinite score")


def test_an_infinite_inspect_score_is_refused(tmp_path):
    path = inspect_log(tmp_path / "a.json", values=(1.0, 0.0, 1.0, 1.0))
    path.write_text(path.read_text().replace('"value": 0.0', '"value": -Infinity', 1))
    with pytest.raises(BayesreproError, match="are infinite .*metric 'match'"):
        read_logs("inspect", [path])


@pytest.mark.parametrize("other_line, message", [
    # read by pyarrow, the number is infinite; read line by line (a line pyarrow refuses), it is too large
    ("1.0", r"1 score\(s\) of task 'qa' are infinite \(the first: metric 'acc' of item 1\)"),
    ('"x"', "line 2: metric 'acc' holds a number of 401 digits, beyond double precision"),
])
def test_a_score_of_400_digits_is_refused_in_one_line(tmp_path, other_line, message):
    lm_eval_run(tmp_path)
    samples = next(tmp_path.rglob("samples_*.jsonl"))
    lines = samples.read_text().splitlines(keepends=True)
    lines[1] = lines[1].replace('"acc": 0.0', '"acc": 1' + "0" * 400)
    lines[2] = lines[2].replace('"acc": 1.0', f'"acc": {other_line}')
    samples.write_text("".join(lines))
    with pytest.raises(BayesreproError, match=message):
        read_logs("lm-eval", [tmp_path])


@pytest.mark.parametrize("model_args", [
    {"item": "x", "model": "y", "run": "z", "seed": "9", "acc": "0.1", "task": "t"},
    {"seed": "9", "model_arg_seed": "8"},
    "item=x,model=y,model_arg_item=z",
])
def test_model_arguments_never_overwrite_the_importers_columns_in_import_and_as_data(tmp_path, model_args):
    lm_eval_run(tmp_path, model_args=model_args)
    imported = import_logs("lm-eval", [tmp_path], tmp_path / "t.parquet")
    assert imported.rows == 4
    for table in (pd.read_parquet(tmp_path / "t.parquet"), read_table(f"lm-eval:{tmp_path}")):
        assert not table.columns.duplicated().any()
        assert table["item"].tolist() == ["0", "1", "2", "3"]
        assert table["model"].unique().tolist() == ["org/model"]
        assert table["run"].str.startswith("org__model/").all() and (table["seed"] == 1).all()
        assert table["acc"].tolist() == [1.0, 0.0, 1.0, 1.0]
        given = model_args if isinstance(model_args, dict) else dict(p.split("=") for p in model_args.split(","))
        assert sorted(table.iloc[0][list(set(table.columns) - {"item", "task", "model", "run", "group", "seed",
                                                                 "num_fewshot", "acc"})].tolist()) == sorted(given.values())


@pytest.mark.parametrize("model_args, message", [
    ("pretrained=a,pretrained=b", "gives the argument 'pretrained' twice"),
    ({"peft": {"r": 8}, "peft_r": 9}, "gives the argument 'peft_r' twice"),
    ("=x", "holds an argument without a name"),
])
def test_arguments_that_would_share_a_column_are_refused(tmp_path, model_args, message):
    lm_eval_run(tmp_path, model_args=model_args)
    with pytest.raises(BayesreproError, match=rf"results file .*: config.model_args {message}"):
        read_logs("lm-eval", [tmp_path])


@pytest.mark.parametrize("source", ["lm-eval:", "inspect:", "lm-eval: "])
def test_an_empty_log_path_is_refused(tmp_path, monkeypatch, source):
    lm_eval_run(tmp_path)
    monkeypatch.chdir(tmp_path)   # the current directory holds a run: an empty path must not read it
    with pytest.raises(BayesreproError, match="a log path is empty"):
        read_table(source)


def test_a_fifo_is_named_as_such(tmp_path):
    fifo = tmp_path / "results_2026-01-01T10-00-00.json"
    os.mkfifo(fifo)
    with pytest.raises(BayesreproError, match=r"log path .* is a FIFO \(named pipe\), not a log file"):
        read_logs("lm-eval", [fifo])


@pytest.mark.parametrize("frame, message", [
    (pd.DataFrame({"score": [1 + 2j, 2], "item": ["a", "b"]}), "column 'score' holds complex numbers"),
    (pd.DataFrame(np.ones((2, 2)), columns=pd.MultiIndex.from_tuples([("a", "b"), ("a", "c")])),
     r"MultiIndex columns \(the first: \('a', 'b'\)\)"),
    (pd.DataFrame({0: [1.0], "item": ["a"]}), "column 0 of the DataFrame is named 0, not by a text"),
    (pd.DataFrame({"item": [["a"], ["b"]]}), "column 'item' holds a value of type list in the row with index label 0"),
    (pd.DataFrame({"item": ["a", {"b": 1}]}), "column 'item' holds a value of type dict in the row with index label 1"),
    (pd.DataFrame({"x": pd.arrays.IntervalArray.from_breaks([0, 1, 2])}), "column 'x' is of type interval"),
    (pd.DataFrame({"x": pd.to_timedelta([1, 2], unit="s")}), "column 'x' is of type timedelta64"),
])
def test_frames_the_analyses_cannot_read_are_refused_with_the_packages_error(frame, message):
    with pytest.raises(BayesreproError, match=message):
        read_table(frame)


def test_plain_frames_are_read_as_before():
    frame = pd.DataFrame({"score": [1.0, 2.0], "item": ["a", "b"], "flag": [True, False], "n": [1, 2],
                          "mixed": [1, "x"], "when": pd.to_datetime(["2020-01-01", "2021-01-01"])})
    assert read_table(frame).equals(frame)


def test_the_model_frame_of_a_dataframe_refuses_what_it_cannot_read():
    from bayesrepro.design import build_model_frame

    frame = pd.DataFrame({"score": [1.0 + 1j, 2.0, 3.0, 4.0], "item": ["a", "b", "a", "b"]})
    with pytest.raises(BayesreproError, match="column 'score' holds complex numbers"):
        build_model_frame("score ~ 1 + (1|item)", frame)


@pytest.mark.parametrize("cells, conversion, convert", [
    ([(k % 6, "a") for k in range(24)], "frame['g'] = frame['g'].map(str)", lambda g: g.map(str)),
    ([bytes([65 + k % 6]) for k in range(24)], "frame['g'] = frame['g'].str.decode('utf-8')",
     lambda g: g.str.decode("utf-8")),
    ([frozenset({k % 6}) for k in range(24)], "frame['g'] = frame['g'].map(str)", lambda g: g.map(str)),
])
def test_a_grouping_column_of_tuples_or_bytes_is_refused_saying_how_to_convert_it(cells, conversion, convert):
    import bayesrepro as br

    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"score": rng.normal(size=24) + rng.normal(size=6)[[k % 6 for k in range(24)]], "g": cells})
    with pytest.raises(BayesreproError, match=r"column 'g' holds a value of type \w+ in the row with index label 0"
                                              r"; a cell holds one number or text: .*" + re.escape(conversion)) as error:
        br.Model("score ~ 1 + (1|g)", frame).fit()
    frame["g"] = convert(frame["g"])    # the conversion the message names
    fit = br.Model("score ~ 1 + (1|g)", frame).fit()
    assert fit.to_dict()["components"][0]["name"] == "g"
