"""The readers on logs written by the harnesses themselves, offline (needs the ``harness`` extra).

lm-eval: a seeded model that answers sums right with probability ``skill``
runs four local JSON tasks through lm-eval's own evaluation and its
``EvaluationTracker`` writers, as its command line does: multiple choice
(``acc``, ``acc_norm``), generation (``exact_match``), generation with two
filters as gsm8k has them (``strict-match``, ``flexible-extract``), and a
task whose ``process_results`` gives a float metric averaged by the mean
and another by the median. The script also saves what lm-eval computed per
document in memory, before writing anything, to check the table against.
Inspect: ``mockllm`` models with set outputs (and token usage, so that no
tokenizer is downloaded) run a task with two scorers over two epochs, plus
a run that fails, a run with one failing sample, and a run over three epochs
reduced by mean and max with a float scorer whose one sample failed in one
epoch (unbalanced epochs). Both write into a temporary folder at test time;
nothing leaves the machine.

These tests run the harness versions the ``harness`` extra pins; run with
the newest releases (``.ci/harness-drift``), they tell whether the formats
moved.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import textwrap

import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.harness import import_logs, read_logs
from bayesrepro.harness.inspect_scores import UnreadableScore, score_to_float

pytestmark = pytest.mark.slow

OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "INSPECT_DISABLE_TELEMETRY": "1", "NO_PROXY": "*"}
SUMS = [(a, b) for a in range(1, 8) for b in range(2, 5)]  # 21 documents

LM_EVAL_SCRIPT = textwrap.dedent('''
    import json, random, sys
    from lm_eval import simple_evaluate
    from lm_eval.api.model import LM
    from lm_eval.api.registry import register_model
    from lm_eval.loggers import EvaluationTracker
    from lm_eval.tasks import TaskManager

    @register_model("seeded")
    class SeededLM(LM):
        """Knows the sum in a prompt with probability `skill` (drawn once per prompt), else guesses."""

        def __init__(self, skill=0.5, seed=0, **ignored):
            super().__init__()
            self.skill, self.rng, self.knows = float(skill), random.Random(int(seed)), {}

        def _knows(self, context):
            return self.knows.setdefault(context, self.rng.random() < self.skill)

        @staticmethod
        def _sum(context):
            a, b = context.rsplit("\\n\\n", 1)[-1].split("=")[0].split("+")
            return int(a) + int(b)

        def loglikelihood(self, requests, disable_tqdm=False):
            out = []
            for request in requests:
                context, continuation = request.args
                right = continuation.strip() == str(self._sum(context))
                out.append((-0.1 if right else -2.0, right) if self._knows(context) else (-self.rng.random(), False))
            return out

        def generate_until(self, requests, disable_tqdm=False):
            out = []
            for request in requests:
                context, total = request.args[0], self._sum(request.args[0])
                if "Question:" in request.args[1].get("until", []):
                    # gsm8k style: the strict filter wants '#### N', the flexible one takes the last number
                    answer = total if self._knows(context) else total + 1
                    out.append(f"so {answer}" if self.rng.random() < 0.4 else f"{total} then\\n#### {answer}")
                else:
                    out.append(str(total) if self._knows(context) else "0")
            return out

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            return [-1.0 for _ in requests]

    tasks_folder, out, grid = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    manager = TaskManager(include_path=tasks_folder, include_defaults=False)
    truth = {}
    for model, skill, seed, shots in grid:
        # what `lm_eval run --log_samples --output_path OUT` does after parsing its options
        tracker = EvaluationTracker(output_path=out)
        results = simple_evaluate(
            model="seeded", model_args={"pretrained": model, "skill": skill, "seed": seed},
            tasks=["sums_mc", "sums_gen", "sums_cot", "sums_prob"], num_fewshot=shots, log_samples=True,
            evaluation_tracker=tracker, task_manager=manager, random_seed=seed, numpy_random_seed=seed,
            torch_random_seed=seed, fewshot_random_seed=seed)
        samples = results.pop("samples")
        # what lm-eval computed per document, before anything is written
        computed = {task: [{key: value for key, value in sample.items()
                            if key in ("doc_id", "filter", *sample["metrics"])} for sample in rows]
                    for task, rows in samples.items()}
        tracker.save_results_aggregated(results=results, samples=samples)
        truth[tracker.date_id] = computed
        for task in results["configs"]:
            tracker.save_results_samples(task_name=task, samples=samples[task])
    with open(sys.argv[4], "w") as file:
        json.dump(truth, file)
''')

PROCESS_RESULTS = textwrap.dedent('''
    import math

    def probability(doc, results):
        """The softmax probability of the right choice (a float per document), and whether it is the largest."""
        loglikelihoods = [loglikelihood for loglikelihood, _ in results]
        top = max(loglikelihoods)
        weights = [math.exp(value - top) for value in loglikelihoods]
        p = weights[doc["answer"]] / sum(weights)
        return {"prob": p, "acc": float(loglikelihoods.index(top) == doc["answer"]), "prob_median": p}
''')

INSPECT_SCRIPT = textwrap.dedent('''
    import random, sys
    from inspect_ai import Epochs, Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import Score, includes, match, mean, scorer, stderr
    from inspect_ai.solver import generate, solver

    log_dir, sums = sys.argv[1], [tuple(map(int, p.split("+"))) for p in sys.argv[2].split(",")]
    dataset = [Sample(input=f"{a}+{b}=", target=str(a + b), id=f"{a}+{b}") for a, b in sums]

    def outputs(name, skill, seed, calls):
        rng = random.Random(seed)
        for _ in range(calls):
            answer = "ok" if rng.random() < skill else "no"
            output = ModelOutput.from_content(model=name, content=answer)
            output.usage = ModelUsage(input_tokens=3, output_tokens=1, total_tokens=4)
            yield output

    @solver
    def answer_key():
        """Turns the mock's ok/no into the right or a wrong sum (mockllm cannot see the input)."""
        async def solve(state, generate_answer):
            state = await generate_answer(state)
            right = state.output.completion == "ok"
            a, b = map(int, state.input_text.rstrip("=").split("+"))
            state.output.completion = str(a + b) if right else str(a + b + 1)
            return state
        return solve

    @solver
    def failing(sample_id=None, epoch=None):
        async def solve(state, generate_answer):
            if (sample_id is None or state.sample_id == sample_id) and (epoch is None or state.epoch == epoch):
                raise RuntimeError("the endpoint went away")
            return state
        return solve

    @scorer(metrics=[mean(), stderr()])
    def closeness():
        """A float score: how close the answer is to the sum, with a jitter drawn per sample and epoch."""
        async def score(state, target):
            jitter = random.Random(f"{state.sample_id}/{state.epoch}").random()
            distance = abs(int(state.output.completion) - int(target.text))
            return Score(value=1.0 / (1.0 + distance) * (0.5 + jitter / 2))
        return score

    def task(extra=(), scorers=None, epochs=None):
        return Task(dataset=MemoryDataset(list(dataset)), solver=[*extra, answer_key()],
                    scorer=scorers or [match(), includes()], epochs=epochs)

    for name, skill in (("weak", 0.3), ("strong", 0.8)):
        for seed in (1, 2):
            model = get_model(f"mockllm/{name}", custom_outputs=outputs(f"mockllm/{name}", skill, seed, 2 * len(sums)))
            eval(task(), model=model, epochs=2, seed=seed, log_dir=log_dir, display="none")
    model = get_model("mockllm/weak", custom_outputs=outputs("mockllm/weak", 0.3, 9, 2 * len(sums)))
    eval(task(), model=model, seed=3, log_dir=log_dir, log_format="json", display="none")
    eval(task([failing()]), model=get_model("mockllm/weak"), seed=4, log_dir=log_dir, display="none")
    model = get_model("mockllm/weak", custom_outputs=outputs("mockllm/weak", 0.3, 5, 2 * len(sums)))
    eval(task([failing(sample_id="3+3")]), model=model, seed=5, log_dir=log_dir, display="none", fail_on_error=False)
    model = get_model("mockllm/strong", custom_outputs=outputs("mockllm/strong", 0.6, 6, 3 * len(sums)))
    eval(task([failing(sample_id="2+2", epoch=2)], scorers=[match(), closeness()], epochs=Epochs(3, ["mean", "max"])),
         model=model, seed=6, log_dir=log_dir, display="none", fail_on_error=False)
''')


def run_script(script, *args, cwd):
    env = {**os.environ, **OFFLINE, "HF_HOME": str(cwd / "hf"), "PYTHONPATH": os.pathsep.join(sys.path)}
    path = cwd / "make_logs.py"
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path), *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


GSM8K_STYLE = """output_type: generate_until
doc_to_target: '{{gold}}'
generation_kwargs:
  until: ['Question:']
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
filter_list:
  - name: strict-match
    filter:
      - function: regex
        regex_pattern: '#### (\\-?[0-9\\.\\,]+)'
      - function: take_first
  - name: flexible-extract
    filter:
      - function: regex
        group_select: -1
        regex_pattern: '(-?[$0-9.,]{2,})|(-?[0-9]+)'
      - function: take_first
"""
FLOAT_METRIC = """output_type: multiple_choice
doc_to_choice: '{{choices}}'
doc_to_target: '{{answer}}'
process_results: !function utils.probability
metric_list:
  - metric: prob
    aggregation: mean
    higher_is_better: true
  - metric: acc
    aggregation: mean
    higher_is_better: true
  - metric: prob_median
    aggregation: median
    higher_is_better: true
"""


@pytest.fixture(scope="module")
def lm_eval_run(tmp_path_factory):
    """The output folder lm-eval wrote, and what it computed per document in memory (by run date, task)."""
    pytest.importorskip("lm_eval")
    folder = tmp_path_factory.mktemp("lm_eval")
    tasks = folder / "tasks"
    tasks.mkdir()
    data = tasks / "sums.jsonl"
    data.write_text("".join(json.dumps({"question": f"{a}+{b}=", "choices": [str(a + b + d) for d in (0, 1, -1)],
                                        "answer": 0, "gold": str(a + b)}) + "\n" for a, b in SUMS))
    (tasks / "utils.py").write_text(PROCESS_RESULTS)
    common = f"dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\ntest_split: test\ndoc_to_text: '{{{{question}}}}'\n"
    (tasks / "sums_mc.yaml").write_text(
        f"task: sums_mc\n{common}output_type: multiple_choice\ndoc_to_choice: '{{{{choices}}}}'\n"
        "doc_to_target: '{{answer}}'\nmetric_list:\n  - metric: acc\n  - metric: acc_norm\n")
    (tasks / "sums_gen.yaml").write_text(
        f"task: sums_gen\n{common}output_type: generate_until\ndoc_to_target: '{{{{gold}}}}'\n"
        "generation_kwargs:\n  until: ['\\n']\nmetric_list:\n  - metric: exact_match\n")
    (tasks / "sums_cot.yaml").write_text(f"task: sums_cot\n{common}{GSM8K_STYLE}")
    (tasks / "sums_prob.yaml").write_text(f"task: sums_prob\n{common}{FLOAT_METRIC}")
    grid = [[model, skill, seed, shots] for model, skill in (("weak", 0.3), ("strong", 0.9))
            for seed in (1, 2) for shots in (0, 2)]
    run_script(LM_EVAL_SCRIPT, tasks, folder / "out", json.dumps(grid), folder / "truth.json", cwd=folder)
    return folder / "out", json.loads((folder / "truth.json").read_text())


@pytest.fixture(scope="module")
def lm_eval_logs(lm_eval_run):
    return lm_eval_run[0]


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    pytest.importorskip("inspect_ai")
    folder = tmp_path_factory.mktemp("inspect")
    run_script(INSPECT_SCRIPT, folder / "logs", ",".join(f"{a}+{b}" for a, b in SUMS), cwd=folder)
    return folder / "logs"


def test_lm_eval_runs_import_with_their_settings(lm_eval_logs, tmp_path):
    summary = import_logs("lm-eval", [lm_eval_logs], tmp_path / "t.parquet", notify=pytest.fail)
    assert (summary.runs, summary.rows, summary.tasks, summary.items) == (8, 8 * 4 * len(SUMS), 4, 4 * len(SUMS))
    assert sorted(summary.metrics) == ["acc", "acc_norm", "exact_match", "exact_match_flexible_extract",
                                       "exact_match_strict_match", "prob", "prob_median"]
    table = read_logs("lm-eval", [lm_eval_logs])
    assert set(table["model"]) == {"weak", "strong"} and set(table["seed"]) == {1, 2}
    assert set(table["num_fewshot"]) == {0, 2} and set(table["skill"]) == {"0.3", "0.9"}
    assert table.groupby("model")["acc"].mean()["strong"] > table.groupby("model")["acc"].mean()["weak"]
    per_run = table.groupby(["run", "task"]).size()
    assert (per_run == len(SUMS)).all()


def test_the_table_holds_what_lm_eval_computed_for_each_document(lm_eval_run):
    logs, truth = lm_eval_run
    table = read_logs("lm-eval", [logs])
    table = table.assign(date=table["run"].str.rpartition("/")[2]).set_index(["date", "task", "item"])
    compared = 0
    for date, tasks in truth.items():
        for task, samples in tasks.items():
            filters = {sample["filter"] for sample in samples}
            for sample in samples:
                row = table.loc[(date, task, str(sample["doc_id"]))]
                for metric in set(sample) - {"doc_id", "filter"}:
                    column = metric if len(filters) == 1 else f"{metric}_{sample['filter'].replace('-', '_')}"
                    assert row[column] == float(sample[metric]), (date, task, sample["doc_id"], column)
                    compared += 1
    assert compared == 8 * len(SUMS) * (2 + 1 + 2 + 3)


def test_lm_eval_means_equal_the_harness_aggregates_when_imported(lm_eval_logs, tmp_path):
    checks = import_logs("lm-eval", [lm_eval_logs], tmp_path / "t.parquet").aggregates.to_dict()
    # per run: acc, acc_norm; exact_match; exact_match under both filters; prob, acc (floats and 0/1)
    assert (checks["exact"], checks["to_rounding"], checks["not_applicable"]) == (8 * 7, 0, 8)
    assert checks["not_checked"] == [{"task": "sums_prob", "metric": "prob_median", "runs": 8,
                                      "reason": "its aggregation 'median' is not a plain mean"}]
    prob = read_logs("lm-eval", [lm_eval_logs], metrics=["prob"])["prob"]
    assert (prob.round(6) != prob.round(0)).mean() > 0.5  # the float metric is not 0/1


def copy_logs(logs, folder):
    shutil.copytree(logs, folder)
    return folder


def test_an_edited_real_samples_file_is_refused(lm_eval_logs, tmp_path):
    logs = copy_logs(lm_eval_logs, tmp_path / "logs")
    samples = sorted(logs.rglob("samples_sums_prob_*.jsonl"))[0]
    lines = samples.read_text().splitlines(keepends=True)
    record = json.loads(lines[3])
    record["prob"] += 1e-6
    samples.write_text("".join(lines[:3] + [json.dumps(record) + "\n"] + lines[4:]))
    with pytest.raises(BayesreproError, match=r"task 'sums_prob', metric 'prob': the mean of its rows is .* but the "
                                              r"harness's own aggregate in .* is .*; the samples are not those"):
        read_logs("lm-eval", [logs])


def test_a_real_run_copied_under_another_date_repeats_a_configuration(lm_eval_logs, tmp_path):
    logs = copy_logs(lm_eval_logs, tmp_path / "logs")
    results = sorted(logs.rglob("results_*.json"))[0]
    date = results.stem.removeprefix("results_")
    for path in list(results.parent.glob(f"*_{date}.json*")):
        shutil.copy(path, path.with_name(path.name.replace(date, "2099-01-01T00-00-00.000000")))
    with pytest.raises(BayesreproError, match=rf"runs '.*/{date}' and '.*/2099-01-01T00-00-00.000000' both evaluated "
                                              r"task 'sums_\w+' with model '\w+'.*--replications"):
        read_logs("lm-eval", [logs])
    table = read_logs("lm-eval", [logs], replications=True)
    assert table.groupby("run")["replication"].max().value_counts().to_dict() == {1: 8, 2: 1}


def test_a_real_run_stopped_while_writing_its_samples_is_skipped(lm_eval_logs, tmp_path):
    logs = copy_logs(lm_eval_logs, tmp_path / "logs")
    samples = sorted(logs.rglob("samples_sums_gen_*.jsonl"))[0]
    samples.write_bytes(samples.read_bytes()[: samples.stat().st_size // 2])
    notes = []
    summary = import_logs("lm-eval", [logs], tmp_path / "t.parquet", notify=notes.append)
    assert (summary.runs, len(summary.skipped), len(notes)) == (7, 1, 1)
    assert "the run did not finish writing its samples" in notes[0]


def test_simulated_lm_eval_logs_have_the_real_logs_keys(lm_eval_logs, tmp_path):
    from bayesrepro.harness.simulate import simulate_grid

    simulate_grid(tmp_path, seeds=(1,), items=3)
    real = json.loads(next(lm_eval_logs.rglob("samples_sums_mc_*.jsonl")).read_text().splitlines()[0])
    simulated = json.loads(next(tmp_path.rglob("samples_*.jsonl")).read_text().splitlines()[0])
    assert list(simulated) == list(real)
    real_results = json.loads(next(lm_eval_logs.rglob("results_*.json")).read_text())
    simulated_results = json.loads(next(tmp_path.rglob("results_*.json")).read_text())
    assert set(simulated_results) <= set(real_results)
    assert set(simulated_results["config"]) <= set(real_results["config"])


def test_lm_eval_logs_feed_an_analysis_directly(lm_eval_logs):
    run = subprocess.run([sys.executable, "-m", "bayesrepro", "glrt", f"lm-eval:{lm_eval_logs}",
                          "--h0", "acc ~ 1 + (1|item) + (1|seed)", "--h1", "acc ~ model + (1|item) + (1|seed)",
                          "--where", "task == 'sums_mc'", "--json"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["p"] < 0.05


def test_inspect_runs_import_and_unfinished_runs_are_skipped(inspect_logs, tmp_path):
    notes = []
    summary = import_logs("inspect", [inspect_logs], tmp_path / "t.parquet", notify=notes.append)
    assert summary.runs == 7 and len(summary.skipped) == 1
    assert "ended in an error: RuntimeError" in summary.skipped[0].reason
    assert "the endpoint went away" in summary.skipped[0].reason
    assert summary.dropped_samples == 2
    assert len(notes) == 3
    table = read_logs("inspect", [inspect_logs], notify=lambda line: None)
    assert list(table.columns[:6]) == ["item", "task", "model", "run", "seed", "epoch"]
    assert {"match", "includes", "closeness"} <= set(table.columns)
    assert set(table["seed"]) == {1, 2, 3, 5, 6}
    assert len(table) == 4 * 2 * len(SUMS) + len(SUMS) + (len(SUMS) - 1) + (3 * len(SUMS) - 1)
    assert set(table.loc[table["seed"] == 1, "epoch"]) == {1, 2}


def test_inspect_means_equal_the_harness_metrics_when_imported(inspect_logs, tmp_path):
    checks = import_logs("inspect", [inspect_logs], tmp_path / "t.parquet", notify=lambda line: None).aggregates
    checks = checks.to_dict()
    # two scorers' accuracy in six runs; in the unbalanced run match's accuracy and closeness's mean under
    # the mean reducer (the max reducer's are not means)
    assert (checks["exact"], checks["to_rounding"], checks["not_applicable"]) == (6 * 2 + 2, 0, 2)
    assert sorted((c["metric"], c["reason"]) for c in checks["not_checked"]) == [
        ("closeness (max over epochs)", "the epoch reducer 'max' is not a mean"),
        ("match (max over epochs)", "the epoch reducer 'max' is not a mean"),
    ]


def test_the_table_holds_what_inspect_reads_for_each_sample_and_reduces_per_sample(inspect_logs):
    from inspect_ai.log import list_eval_logs, read_eval_log
    from inspect_ai.scorer import value_to_float

    table = read_logs("inspect", [inspect_logs], notify=lambda line: None).set_index(["run", "item", "epoch"])
    to_float, compared = value_to_float(), 0
    for info in list_eval_logs(str(inspect_logs)):
        log = read_eval_log(info)
        if log.status != "success":
            continue
        run = os.path.splitext(os.path.basename(log.location))[0]
        for sample in log.samples:
            if sample.error is None:
                for name, score in sample.scores.items():
                    assert table.loc[(run, str(sample.id), sample.epoch), name] == to_float(score.value)
                    compared += 1
        for reduction in log.reductions or []:
            if reduction.reducer in (None, "mean"):
                ours = table.loc[run].groupby(level="item")[reduction.scorer].apply(lambda v: statistics.mean(v))
                for reduced in reduction.samples:
                    assert ours[str(reduced.sample_id)] == to_float(reduced.value)
                    compared += 1
    assert compared > 8 * len(SUMS) * 2


@pytest.mark.parametrize("real_sized", [False, True])
def test_inspect_reads_the_simulated_eval_logs_as_we_do(tmp_path, real_sized):
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log, read_eval_log_sample_summaries
    from inspect_ai.scorer import value_to_float

    from bayesrepro.harness.simulate import TextSizes, simulate_grid

    simulate_grid(tmp_path, harness="inspect", seeds=(1,), items=5, texts=TextSizes() if real_sized else None)
    ours = read_logs("inspect", [tmp_path])
    for path in tmp_path.glob("*.eval"):
        log = read_eval_log(str(path))
        assert log.status == "success" and log.plan.config.seed == 1
        assert len(read_eval_log_sample_summaries(str(path))) == len(log.samples) == 5
        rows = ours[ours["run"] == path.stem].set_index("item")
        for sample in log.samples:
            assert rows.loc[str(sample.id), "choice"] == value_to_float()(sample.scores["choice"].value)
            if real_sized:
                assert len(sample.events) > 10 and sample.output.completion.endswith(f"ANSWER: {sample.scores['choice'].answer}")


@pytest.mark.parametrize("value", ["C", "P", "I", "N", True, False, 0, 2, 0.25, "yes", "TRUE", "no", "False",
                                   "0.5", "-3", "1e2", "c", "maybe", "nan", "inf", ""])
def test_score_values_map_as_inspects_own_value_to_float(value):
    inspect_metric = pytest.importorskip("inspect_ai.scorer._metric")
    theirs = inspect_metric.value_to_float()(value)
    try:
        assert score_to_float(value) == theirs
    except UnreadableScore:
        # Inspect warns and counts these as 0; we refuse them
        assert theirs == 0.0
