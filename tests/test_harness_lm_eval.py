"""Reading lm-evaluation-harness logs: files in the harness's format written by bayesrepro.harness.log_writers.

The same reader is run on logs written by lm-eval itself in test_harness_real.py.
"""

import json
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


def test_each_runs_mean_equals_the_aggregate_in_its_results_file(tmp_path):
    rng = np.random.default_rng(3)
    task = LmEvalTask("qa", documents(37))
    for run in range(3):
        scores = {"acc": rng.integers(0, 2, 37).astype(float), "brier": rng.random(37)}
        write_run(tmp_path, date=f"2026-01-01T10-00-0{run}.000000", task=task, scores=scores)
    table = read_logs("lm-eval", [tmp_path])
    for results in tmp_path.rglob("results_*.json"):
        aggregates = json.loads(results.read_text())["results"]["qa"]
        date = results.stem.removeprefix("results_")
        rows = table[table["run"].str.endswith(date)]
        for metric in ("acc", "brier"):
            values = rows[metric].tolist()  # in the samples file's order, summed as lm-eval's mean sums
            assert sum(values) / len(values) == aggregates[f"{metric},none"]


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
    write_run(tmp_path, date="2026-01-02T10-00-00.000000", task=LmEvalTask("qa", documents(5, offset=1)))
    with pytest.raises(BayesreproError, match=r"task 'qa', item 0: runs 'org__model/2026-01-01T10-00-00.000001' "
                                              r"and 'org__model/2026-01-02T10-00-00.000000' evaluated different documents"):
        read_logs("lm-eval", [tmp_path])


def test_runs_on_different_subsets_of_a_task_are_merged(tmp_path):
    task = LmEvalTask("qa", documents(6))
    write_run(tmp_path, task=LmEvalTask("qa", task.documents[:4]), scores={"acc": [1.0] * 4})
    write_run(tmp_path, date="2026-01-02T10-00-00.000000", task=LmEvalTask("qa", task.documents[2:]),
              scores={"acc": [0.0] * 4})
    summary = import_logs("lm-eval", [tmp_path], tmp_path / "out.parquet")
    assert (summary.rows, summary.items) == (8, 6)
    write_run(tmp_path, date="2026-01-03T10-00-00.000000", task=LmEvalTask("qa", documents(6, offset=1)[5:]),
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


@pytest.mark.parametrize(
    "damage, message",
    [
        ("drop samples", "has no samples file for task 'qa'.*--log_samples"),
        ("drop results", "has no results file beside it"),
        ("cut last line", r"line 5 is not valid JSON .*cut short"),
        ("drop last line", "holds 4 documents under filter 'none' but its results file counts 5"),
        ("repeat a line", "holds doc_id 4 twice"),
        ("list metric", r"metric 'acc' holds a list .*corpus-level.*--metric"),
        ("missing metric", "line 2 has no 'acc'"),
        ("not json", "results file .* cannot be read"),
    ],
)
def test_damaged_logs_fail_in_one_line_naming_the_file(tmp_path, damage, message):
    results = write_run(tmp_path)
    samples = next(tmp_path.rglob("samples_*.jsonl"))
    lines = samples.read_text().splitlines()
    if damage == "drop samples":
        samples.unlink()
    elif damage == "drop results":
        results.unlink()
    elif damage == "cut last line":
        samples.write_text("\n".join(lines[:4] + [lines[4][:40]]))
    elif damage == "drop last line":
        samples.write_text("\n".join(lines[:4]) + "\n")
    elif damage == "repeat a line":
        samples.write_text("\n".join(lines + lines[4:]) + "\n")
    elif damage == "list metric":
        samples.write_text("\n".join(lines[:2] + [lines[2].replace('"acc": 1.0', '"acc": [1, 2]')] + lines[3:]) + "\n")
    elif damage == "missing metric":
        samples.write_text("\n".join(lines[:1] + [lines[1].replace('"acc": 0.0, ', "")] + lines[2:]) + "\n")
    elif damage == "not json":
        results.write_text(results.read_text()[:100])
    with pytest.raises(BayesreproError, match=message) as error:
        read_logs("lm-eval", [samples if damage == "drop results" else tmp_path])
    assert "\n" not in str(error.value)
    assert str(samples if "line" in damage or "metric" in damage else tmp_path) in str(error.value) \
        or str(results) in str(error.value)


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
    parquet = pd.read_parquet(tmp_path / "t.parquet")
    run = bayesrepro("import", "lm-eval", str(tmp_path / "logs"), "--out", str(tmp_path / "t.csv"))
    assert run.returncode == 0 and "10 rows from 2 runs" in run.stdout
    csv = pd.read_csv(tmp_path / "t.csv", dtype={"item": str})
    pd.testing.assert_frame_equal(csv, parquet, check_dtype=False)


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
