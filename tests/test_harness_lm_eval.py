"""Reading lm-evaluation-harness logs: files in the harness's format written by bayesrepro.harness.log_writers.

The same reader is run on logs written by lm-eval itself in test_harness_real.py.
"""

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from bayesrepro.data import read_table
from bayesrepro.errors import BayesreproError
from bayesrepro.harness import import_logs, read_logs
from bayesrepro.harness.log_writers import Document, LmEvalTask, write_lm_eval_run


def documents(n, offset=0):
    return [Document(i, f"question {i + offset}", ("a", "b", "c", "d"), i % 4) for i in range(n)]


def write_run(folder, model="org/model", date="2026-01-01T10-00-00.000001", seed=1, task=None, scores=None, **kw):
    task = task or LmEvalTask("qa", documents(5), num_fewshot=2)
    scores = scores or {"acc": [1.0, 0.0, 1.0, 1.0, 0.0], "acc_norm": [1.0, 1.0, 0.0, 1.0, 0.0]}
    return write_lm_eval_run(folder, model=model, date=date, seed=seed, tasks={task: scores}, **kw)


def test_one_row_per_run_task_item_with_settings_model_args_and_metrics(tmp_path):
    write_run(tmp_path, seed=7, model_args={"pretrained": "org/model", "dtype": "bfloat16", "load_in_8bit": True})
    write_run(tmp_path, date="2026-01-01T11-00-00.000001", seed=8)
    table = read_logs("lm-eval", [tmp_path], notify=pytest.fail)
    assert list(table.columns) == ["item", "task", "model", "run", "group", "seed", "num_fewshot",
                                   "pretrained", "dtype", "load_in_8bit", "acc", "acc_norm"]
    assert len(table) == 10
    first = table[table["seed"] == 7]
    assert first["item"].tolist() == ["0", "1", "2", "3", "4"]
    assert first["run"].unique().tolist() == ["org__model/2026-01-01T10-00-00.000001"]
    assert first["model"].unique().tolist() == ["org/model"]
    assert (first["num_fewshot"] == 2).all() and (first["group"] == "qa").all()
    assert first["acc"].tolist() == [1.0, 0.0, 1.0, 1.0, 0.0]
    assert first[["dtype", "load_in_8bit"]].iloc[0].tolist() == ["bfloat16", "true"]
    # the second run gave no dtype: missing, not invented
    assert table.loc[table["seed"] == 8, "dtype"].isna().all()


def test_each_runs_mean_is_checked_against_the_aggregate_in_its_results_file(tmp_path):
    rng = np.random.default_rng(3)
    task = LmEvalTask("qa", documents(37))
    for run in range(3):
        scores = {"acc": rng.integers(0, 2, 37).astype(float), "brier": rng.random(37)}
        write_run(tmp_path, date=f"2026-01-01T10-00-0{run}.000000", seed=run, task=task, scores=scores)
    summary = import_logs("lm-eval", [tmp_path], tmp_path / "t.parquet")
    assert summary.aggregates.to_dict() | {"not_checked": None} == {
        "exact": 6, "to_rounding": 0, "not_applicable": 0, "equal_to_rounding": [], "not_checked": None}


def edit_aggregate(results, key, change):
    payload = json.loads(results.read_text())
    payload["results"]["qa"][key] = change(payload["results"]["qa"][key])
    results.write_text(json.dumps(payload))


def test_a_run_whose_mean_is_not_the_harness_aggregate_is_refused(tmp_path):
    results = write_run(tmp_path, scores={"acc": [1.0, 0.0, 1.0, 1.0, 0.0], "brier": [0.1, 0.25, 0.3, 0.7, 0.05]})
    edit_aggregate(results, "acc,none", lambda mean: 0.8)
    with pytest.raises(BayesreproError, match=r"task 'qa', metric 'acc': the mean of its rows is 0\.6, but the "
                                              r"harness's own aggregate in .* is 0\.8; the samples are not those"):
        read_logs("lm-eval", [tmp_path])
    edit_aggregate(results, "acc,none", lambda mean: 0.6)
    edit_aggregate(results, "brier,none", lambda mean: mean + 1e-9)
    with pytest.raises(BayesreproError, match="metric 'brier'"):
        read_logs("lm-eval", [tmp_path])


def test_a_mean_off_by_rounding_only_is_accepted_and_reported(tmp_path):
    values = [0.1, 0.25, 0.3, 0.7, 0.05]
    results = write_run(tmp_path, scores={"acc": [1.0, 0.0, 1.0, 1.0, 0.0], "brier": values})
    edit_aggregate(results, "brier,none", lambda mean: float(np.nextafter(mean, 1.0)))
    summary = import_logs("lm-eval", [tmp_path], tmp_path / "t.parquet")
    assert summary.aggregates.to_dict()["exact"] == 1
    [rounding] = summary.aggregates.to_dict()["equal_to_rounding"]
    assert rounding["metric"] == "brier" and 0 < abs(rounding["difference"]) < 1e-16


def test_means_summed_as_python_3_12_sums_are_exact(tmp_path):
    # Python 3.12's sum() compensates (Neumaier): sum([0.1] * 10) is 1.0 there, 0.9999999999999999 before
    from bayesrepro.harness.aggregates import compensated_sum, plain_sum

    values = np.full(10, 0.1)
    assert plain_sum(values) == 0.9999999999999999 and compensated_sum(values) == 1.0
    assert compensated_sum(np.array([1e100, 1.0, -1e100])) == 1.0
    task = LmEvalTask("qa", documents(10))
    results = write_run(tmp_path, task=task, scores={"acc": [1.0] * 10, "brier": [0.1] * 10})
    edit_aggregate(results, "brier,none", lambda mean: 0.1)  # what lm-eval writes under Python 3.12
    summary = import_logs("lm-eval", [tmp_path], tmp_path / "t.parquet")
    assert summary.aggregates.to_dict()["exact"] == 2


@pytest.mark.parametrize("entry, reason", [
    ({"metric": "brier", "aggregation": "median"}, "its aggregation 'median' is not a plain mean"),
    ({"metric": "brier", "aggregation": "def spread(items):\n    return max(items)"},
     "its aggregation 'def spread(items):' is not a plain mean"),
    ({"metric": "brier", "aggregation": "nanmean"}, None),
    ({"metric": "brier"}, "its aggregation is not recorded in the results file"),
    ({"metric": "bleu"}, None),  # brier not listed: lm-eval averages a key only process_results returns
])
def test_aggregations_that_are_not_a_plain_mean_are_not_compared(tmp_path, entry, reason):
    results = write_run(tmp_path, scores={"acc": [1.0, 0.0, 1.0, 1.0, 0.0], "brier": [0.1, 0.25, 0.3, 0.7, 0.05]})
    payload = json.loads(results.read_text())
    payload["configs"]["qa"]["metric_list"] = [{"metric": "acc"}, entry]
    results.write_text(json.dumps(payload))
    checks = import_logs("lm-eval", [tmp_path], tmp_path / "t.parquet").aggregates.to_dict()
    if reason is None:
        assert (checks["exact"], checks["not_applicable"]) == (2, 0)
    else:
        assert (checks["exact"], checks["not_applicable"]) == (1, 1)
        assert checks["not_checked"] == [{"task": "qa", "metric": "brier", "reason": reason, "runs": 1}]


def test_filters_become_metric_columns_and_are_aligned_by_doc_id(tmp_path):
    task = LmEvalTask("gsm", documents(4))
    write_run(tmp_path, task=task, scores={"exact_match,strict-match": [1.0, 0.0, 0.0, 1.0],
                                           "exact_match,flexible-extract": [1.0, 1.0, 0.0, 1.0]})
    samples = next(tmp_path.rglob("samples_gsm_*.jsonl"))
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join(lines[:4] + lines[4:][::-1]) + "\n")  # the second filter in reverse order
    table = read_logs("lm-eval", [tmp_path])
    assert table["item"].tolist() == ["0", "1", "2", "3"]
    assert table["exact_match_strict_match"].tolist() == [1.0, 0.0, 0.0, 1.0]
    assert table["exact_match_flexible_extract"].tolist() == [1.0, 1.0, 0.0, 1.0]
    flexible = read_logs("lm-eval", [tmp_path], metrics=["exact_match_flexible_extract"])
    assert flexible.sort_values("item")["exact_match_flexible_extract"].tolist() == [1.0, 1.0, 0.0, 1.0]
    assert "exact_match_strict_match" not in flexible


def test_group_is_the_outermost_group_of_a_task(tmp_path):
    tasks = {LmEvalTask(name, documents(3)): {"acc": [1.0, 0.0, 1.0]} for name in ("mmlu_anatomy", "mmlu_law")}
    write_lm_eval_run(tmp_path, model="m", date="2026-01-01T10-00-00.000000", seed=0, tasks=tasks,
                      groups={"mmlu": ["mmlu_stem", "mmlu_humanities"], "mmlu_stem": ["mmlu_anatomy"],
                              "mmlu_humanities": ["mmlu_law"]})
    table = read_table("lm-eval:" + str(tmp_path), where="group == 'mmlu'")
    assert sorted(table["task"].unique()) == ["mmlu_anatomy", "mmlu_law"]


def test_model_args_as_lm_evals_older_argument_string(tmp_path):
    results = write_run(tmp_path)
    payload = json.loads(results.read_text())
    payload["config"]["model_args"] = "pretrained=EleutherAI/pythia-160m,revision=step1000"
    del payload["model_name"]
    results.write_text(json.dumps(payload))
    table = read_logs("lm-eval", [results])
    assert table["pretrained"].iloc[0] == "EleutherAI/pythia-160m" and table["revision"].iloc[0] == "step1000"
    assert table["model"].iloc[0] == "EleutherAI/pythia-160m"


def test_true_false_scores_and_text_doc_ids_are_read(tmp_path):
    task = LmEvalTask("qa", [Document(f"id-{i}", f"q{i}", ("a", "b"), 0) for i in range(3)])
    write_run(tmp_path, task=task, scores={"acc": [True, False, True]})
    table = read_logs("lm-eval", [tmp_path])
    assert table["item"].tolist() == ["id-0", "id-1", "id-2"]
    assert table["acc"].tolist() == [1.0, 0.0, 1.0]


def test_two_runs_with_different_documents_under_one_id_are_refused_naming_both(tmp_path):
    write_run(tmp_path, task=LmEvalTask("qa", documents(5)))
    write_run(tmp_path, date="2026-01-02T10-00-00.000000", seed=2, task=LmEvalTask("qa", documents(5, offset=1)))
    with pytest.raises(BayesreproError, match=r"task 'qa', item 0: runs 'org__model/2026-01-01T10-00-00.000001' "
                                              r"and 'org__model/2026-01-02T10-00-00.000000' evaluated different documents"):
        read_logs("lm-eval", [tmp_path])


def test_runs_on_different_subsets_of_a_task_are_merged(tmp_path):
    task = LmEvalTask("qa", documents(6))
    write_run(tmp_path, task=LmEvalTask("qa", task.documents[:4]), scores={"acc": [1.0] * 4})
    write_run(tmp_path, date="2026-01-02T10-00-00.000000", seed=2, task=LmEvalTask("qa", task.documents[2:]),
              scores={"acc": [0.0] * 4})
    summary = import_logs("lm-eval", [tmp_path], tmp_path / "out.parquet")
    assert (summary.rows, summary.items) == (8, 6)
    write_run(tmp_path, date="2026-01-03T10-00-00.000000", seed=3, task=LmEvalTask("qa", documents(6, offset=1)[5:]),
              scores={"acc": [0.0]})
    with pytest.raises(BayesreproError, match="item 5: runs 'org__model/2026-01-02"):
        read_logs("lm-eval", [tmp_path])


def test_a_copied_run_is_refused_as_a_duplicate(tmp_path):
    write_run(tmp_path / "a")
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    with pytest.raises(BayesreproError, match="are the same run"):
        read_logs("lm-eval", [tmp_path])


def test_the_same_file_named_twice_is_read_once(tmp_path):
    results = write_run(tmp_path)
    samples = next(tmp_path.rglob("samples_*.jsonl"))
    assert len(read_logs("lm-eval", [tmp_path, results, samples])) == 5


def test_runs_with_the_same_model_arguments_and_settings_are_refused_naming_both(tmp_path):
    write_run(tmp_path, date="2026-01-01T10-00-00.000000", seed=1)
    write_run(tmp_path, date="2026-01-02T10-00-00.000000", seed=2)
    write_run(tmp_path, date="2026-01-03T10-00-00.000000", seed=1)
    with pytest.raises(BayesreproError, match=r"runs 'org__model/2026-01-01T10-00-00.000000' and "
                                              r"'org__model/2026-01-03T10-00-00.000000' both evaluated task 'qa' with "
                                              r"model 'org/model' and the same model arguments and settings \(seed 1, "
                                              r"num_fewshot 2\).*--replications"):
        read_logs("lm-eval", [tmp_path])
    # another model argument tells them apart
    write_run(tmp_path / "b", date="2026-01-01T10-00-00.000000", seed=1, model_args={"pretrained": "org/model", "revision": "a"})
    write_run(tmp_path / "b", date="2026-01-03T10-00-00.000000", seed=1, model_args={"pretrained": "org/model", "revision": "b"})
    assert len(read_logs("lm-eval", [tmp_path / "b"])) == 10


def test_replications_keeps_repeated_runs_numbered_in_the_order_they_started(tmp_path):
    for day, seed in ((3, 1), (1, 1), (2, 2)):
        write_run(tmp_path, date=f"2026-01-0{day}T10-00-00.000000", seed=seed)
    table = read_logs("lm-eval", [tmp_path], replications=True)
    numbers = table.groupby("run")["replication"].unique().map(list).to_dict()
    assert numbers == {"org__model/2026-01-01T10-00-00.000000": [1], "org__model/2026-01-02T10-00-00.000000": [1],
                       "org__model/2026-01-03T10-00-00.000000": [2]}
    assert list(table.columns[4:8]) == ["group", "seed", "num_fewshot", "replication"]


def test_a_run_that_stopped_writing_is_skipped_and_its_rerun_is_no_repeat(tmp_path):
    killed = write_run(tmp_path, date="2026-01-01T10-00-00.000000", seed=1)
    write_run(tmp_path, date="2026-01-02T10-00-00.000000", seed=1)
    samples = tmp_path / "org__model" / "samples_qa_2026-01-01T10-00-00.000000.jsonl"
    samples.write_text("".join(samples.read_text().splitlines(keepends=True)[:3]))
    notes = []
    summary = import_logs("lm-eval", [tmp_path], tmp_path / "t.parquet", notify=notes.append)
    assert (summary.runs, summary.rows) == (1, 5)
    assert [entry.path for entry in summary.skipped] == [killed]
    assert notes == [f"skipped '{killed}': '{samples}' holds 3 documents under filter 'none' but its results file "
                     "counts 5: the run did not finish writing its samples"]


def damage(results, samples, how):
    lines = samples.read_text().splitlines()
    if how == "drop samples":
        samples.unlink()
    elif how == "drop results":
        results.unlink()
    elif how == "cut last line":
        samples.write_text("\n".join(lines[:4] + [lines[4][:40]]))
    elif how == "drop last line":
        samples.write_text("\n".join(lines[:4]) + "\n")
    elif how == "cut a line inside":
        samples.write_text("\n".join(lines[:2] + [lines[2][:40]] + lines[3:]) + "\n")
    elif how == "add a line":
        samples.write_text("\n".join(lines + [lines[4].replace('"doc_id": 4', '"doc_id": 5')]) + "\n")
    elif how == "repeat a line":
        samples.write_text("\n".join(lines + lines[4:]) + "\n")
    elif how == "list metric":
        samples.write_text("\n".join(lines[:2] + [lines[2].replace('"acc": 1.0', '"acc": [1, 2]')] + lines[3:]) + "\n")
    elif how == "missing metric":
        samples.write_text("\n".join(lines[:1] + [lines[1].replace('"acc": 0.0, ', "")] + lines[2:]) + "\n")
    elif how == "not json":
        results.write_text(results.read_text()[:100])


@pytest.mark.parametrize("how, reason", [
    ("drop samples", r"no samples file for task 'qa' \(samples_qa_.*\.jsonl\): the run did not finish writing its "
                     r"samples \(or ran without --log_samples\)"),
    ("drop results", r"1 samples file\(s\) of 2026-01-01T10-00-00.000001 without their results file "
                     r"\(results_2026-01-01T10-00-00.000001.json\): the run did not finish"),
    ("cut last line", r"'.*samples_qa_.*' ends inside line 5: the file was cut short while it was written; "
                      "the run did not finish writing its samples"),
    ("drop last line", "'.*' holds 4 documents under filter 'none' but its results file counts 5: the run did not finish"),
])
def test_runs_that_did_not_finish_are_skipped_with_one_line_each_and_strict_refuses_them(tmp_path, how, reason):
    results = write_run(tmp_path)
    write_run(tmp_path, date="2026-01-02T10-00-00.000000", seed=2)
    samples = tmp_path / "org__model" / "samples_qa_2026-01-01T10-00-00.000001.jsonl"
    damage(results, samples, how)
    notes = []
    summary = import_logs("lm-eval", [tmp_path], tmp_path / "t.parquet", notify=notes.append)
    assert (summary.runs, summary.rows, len(summary.skipped)) == (1, 5, 1)
    assert len(notes) == 1 and re.fullmatch(r"skipped '.*': " + reason + ".*", notes[0]), notes
    assert summary.to_dict()["skipped"][0]["file"] == str(samples if how == "drop results" else results)
    with pytest.raises(BayesreproError, match=reason + r".*\(--strict\)"):
        import_logs("lm-eval", [tmp_path], tmp_path / "strict.parquet", strict=True)
    assert not (tmp_path / "strict.parquet").exists()


@pytest.mark.parametrize("how, message", [
    ("cut a line inside", r"line 3 is not valid JSON .*damaged"),
    ("add a line", "holds 6 documents under filter 'none' but its results file counts only 5"),
    ("repeat a line", "holds doc_id 4 twice"),
    ("list metric", r"metric 'acc' holds a list .*corpus-level.*--metric"),
    ("missing metric", "line 2 has no 'acc'"),
    ("not json", "results file .* is not valid JSON"),
])
def test_damaged_logs_fail_in_one_line_naming_the_file(tmp_path, how, message):
    results = write_run(tmp_path)
    samples = next(tmp_path.rglob("samples_*.jsonl"))
    damage(results, samples, how)
    with pytest.raises(BayesreproError, match=message) as error:
        read_logs("lm-eval", [tmp_path])
    assert "\n" not in str(error.value)
    assert str(samples if "line" in how or "metric" in how else results) in str(error.value)


def test_a_samples_file_named_without_its_results_file_is_skipped(tmp_path):
    results = write_run(tmp_path)
    samples = next(tmp_path.rglob("samples_*.jsonl"))
    results.unlink()
    with pytest.raises(BayesreproError, match="no finished lm-eval run"):
        read_logs("lm-eval", [samples], notify=lambda line: None)


def test_metric_option_keeps_only_the_chosen_metrics(tmp_path):
    write_run(tmp_path)
    table = read_logs("lm-eval", [tmp_path], metrics=["acc_norm"])
    assert [c for c in table.columns if c.startswith("acc")] == ["acc_norm"]
    with pytest.raises(BayesreproError, match="--metric 'bleu' is in none of the runs"):
        read_logs("lm-eval", [tmp_path], metrics=["bleu"])


def bayesrepro(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "bayesrepro", *args], capture_output=True, text=True, timeout=300, cwd=cwd)


def test_import_command_writes_parquet_and_csv_and_prints_a_summary(tmp_path):
    write_run(tmp_path / "logs")
    write_run(tmp_path / "logs", date="2026-01-02T10-00-00.000000", seed=2)
    run = bayesrepro("import", "lm-eval", str(tmp_path / "logs"), "--out", str(tmp_path / "t.parquet"), "--json")
    assert run.returncode == 0, run.stderr
    summary = json.loads(run.stdout)
    assert {k: summary[k] for k in ("rows", "runs", "items", "tasks", "metrics", "skipped")} == {
        "rows": 10, "runs": 2, "items": 5, "tasks": 1, "metrics": ["acc", "acc_norm"], "skipped": []}
    assert (summary["aggregates"]["exact"], summary["aggregates"]["not_applicable"]) == (4, 0)
    parquet = pd.read_parquet(tmp_path / "t.parquet")
    run = bayesrepro("import", "lm-eval", str(tmp_path / "logs"), "--out", str(tmp_path / "t.csv"))
    assert run.returncode == 0 and "10 rows from 2 runs" in run.stdout
    assert "means equal to the harness's aggregates: 4 exactly" in run.stdout
    csv = pd.read_csv(tmp_path / "t.csv", dtype={"item": str})
    pd.testing.assert_frame_equal(csv, parquet, check_dtype=False)
    write_run(tmp_path / "logs", date="2026-01-03T10-00-00.000000", seed=2)
    run = bayesrepro("import", "lm-eval", str(tmp_path / "logs"), "--out", str(tmp_path / "t.parquet"))
    assert run.returncode == 2 and "--replications" in run.stderr
    run = bayesrepro("import", "lm-eval", str(tmp_path / "logs"), "--out", str(tmp_path / "t.parquet"), "--replications")
    assert run.returncode == 0, run.stderr
    assert sorted(pd.read_parquet(tmp_path / "t.parquet")["replication"].unique()) == [1, 2]


def test_analysis_commands_read_lm_eval_logs_directly(tmp_path):
    task = LmEvalTask("qa", documents(30))
    rng = np.random.default_rng(0)
    for seed in range(3):
        for k, model in enumerate(("small", "large")):
            p = 0.3 + 0.4 * k
            write_run(tmp_path, model=model, date=f"2026-01-01T10-00-0{seed}.000000", seed=seed, task=task,
                      scores={"acc": (rng.random(30) < p).astype(float)})
    run = bayesrepro("glrt", f"lm-eval:{tmp_path}", "--h0", "acc ~ 1 + (1|item) + (1|seed)",
                     "--h1", "acc ~ model + (1|item) + (1|seed)", "--where", "task == 'qa'", "--json")
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["df"] == 1


@pytest.mark.parametrize(
    "args, message",
    [
        (("import", "lm-eval", "NOWHERE", "--out", "t.parquet"), "log path 'NOWHERE' does not exist"),
        (("import", "lm-eval", ".", "--out", "t.xlsx"), "--out 't.xlsx' should end in .parquet or .csv"),
        (("import", "lm-eval", ".", "--out", "missing/t.parquet"), "directory 'missing' of --out does not exist"),
        (("import", "lm-eval", "notes.txt", "--out", "t.parquet"), "'notes.txt' is not an lm-eval log"),
        (("import", "lm-eval", "empty", "--out", "t.parquet"), "no finished lm-eval run in empty"),
        (("vca", "lm-eval:empty", "--formula", "acc ~ 1 + (1|item)"), "no finished lm-eval run in empty"),
        (("vca", "lm-eval:empty", "--formula", "acc ~ 1 + (1|item)", "--engine", "duckdb"),
         "--engine duckdb reads tables, and 'lm-eval:empty' is harness logs, read in memory: use --engine memory, "
         "or import them first (bayesrepro import lm-eval empty --out runs.parquet)"),
        (("glrt", "inspect:empty", "--h0", "m ~ 1 + (1|item)", "--h1", "m ~ model + (1|item)", "--engine", "spark"),
         "--engine spark reads tables, and 'inspect:empty' is harness logs"),
    ],
)
def test_bad_input_is_one_line_on_stderr(tmp_path, args, message):
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "empty").mkdir()
    run = bayesrepro(*args, cwd=tmp_path)
    assert run.returncode == 2 and run.stdout == ""
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("bayesrepro: error: ") and message in lines[0], run.stderr
    assert not list(tmp_path.glob("t.*")) and not list(tmp_path.glob(".t.*"))


def test_model_args_nested_hundreds_of_levels_deep_are_imported(tmp_path):
    nested = value = {}
    for _ in range(700):   # the nested generators of a recursive flattening passed the recursion limit
        value["level"] = {}
        value = value["level"]
    value.update({"r": 8, "alpha": [1, 2]})
    write_run(tmp_path, model_args={"pretrained": "org/model", "peft": nested})
    table = read_logs("lm-eval", [tmp_path], notify=pytest.fail)
    deep = "peft_" + "level_" * 700
    assert table[deep + "r"].unique().tolist() == ["8"] and table[deep + "alpha"].unique().tolist() == ["[1, 2]"]
    assert table["pretrained"].unique().tolist() == ["org/model"]


def test_a_samples_file_of_a_task_the_results_file_does_not_list_is_named_as_such(tmp_path):
    write_run(tmp_path)
    date = "2026-01-01T10-00-00.000001"
    stray = LmEvalTask("other", documents(3))
    (tmp_path / "org__model" / f"samples_other_{date}.jsonl").write_text(stray.lines({"acc": [1.0, 0.0, 1.0]}))
    lines = []
    table = read_logs("lm-eval", [tmp_path], notify=lines.append)
    assert len(table) == 5 and set(table["task"]) == {"qa"}
    assert len(lines) == 1
    assert re.search(r"samples of task 'other', which the results file 'results_2026-01-01T10-00-00\.000001\.json' "
                     r"beside it does not list \(it lists: qa\); its rows are not imported", lines[0]), lines
    assert "without their results file" not in lines[0]
    with pytest.raises(BayesreproError, match=r"task 'other', which the results file .* does not list"):
        read_logs("lm-eval", [tmp_path], strict=True)


def test_two_runs_of_one_model_and_date_in_two_folders_are_both_imported_named_by_folder(tmp_path):
    write_run(tmp_path / "a", seed=1)
    write_run(tmp_path / "b", seed=2, scores={"acc": [0.0, 0.0, 1.0, 1.0, 0.0], "acc_norm": [1.0, 0.0, 0.0, 1.0, 0.0]})
    table = read_logs("lm-eval", [tmp_path / "a", tmp_path / "b"], notify=pytest.fail)
    runs = table.groupby("run")["seed"].first().to_dict()
    assert runs == {"a/org__model/2026-01-01T10-00-00.000001": 1, "b/org__model/2026-01-01T10-00-00.000001": 2}
    assert table.loc[table["seed"] == 2, "acc"].tolist() == [0.0, 0.0, 1.0, 1.0, 0.0]
    # a copy of one run in a second folder is still the same run
    shutil.copytree(tmp_path / "a", tmp_path / "copy")
    with pytest.raises(BayesreproError, match=r"are the same run \(org__model/2026-01-01T10-00-00\.000001\)"):
        read_logs("lm-eval", [tmp_path / "a", tmp_path / "copy"])


def test_filters_that_differ_only_in_signs_get_distinct_columns(tmp_path):
    task = LmEvalTask("gsm", documents(4))
    write_run(tmp_path, task=task, scores={"acc,a-b": [1.0, 0.0, 0.0, 1.0], "acc,a_b": [1.0, 1.0, 0.0, 1.0]})
    table = read_logs("lm-eval", [tmp_path], notify=pytest.fail)
    assert table["acc_a_x2d_b"].tolist() == [1.0, 0.0, 0.0, 1.0]
    assert table["acc_a_b"].tolist() == [1.0, 1.0, 0.0, 1.0]
