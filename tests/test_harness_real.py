"""The readers on logs written by the harnesses themselves, offline (needs the ``harness`` extra).

lm-eval: a seeded model that answers sums right with probability ``skill``
runs two local JSON tasks (multiple choice and generation) through
lm-eval's own evaluation and its ``EvaluationTracker`` writers, as its
command line does. Inspect: ``mockllm`` models with set outputs (and token
usage, so that no tokenizer is downloaded) run a task with two scorers over
two epochs, plus a run that fails and a run with one failing sample. Both
write into a temporary folder at test time; nothing leaves the machine.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

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
            a, b = context.rsplit("\\n\\n", 1)[-1].rstrip("=").split("+")
            return str(int(a) + int(b))

        def loglikelihood(self, requests, disable_tqdm=False):
            out = []
            for request in requests:
                context, continuation = request.args
                right = continuation.strip() == self._sum(context)
                out.append((-0.1 if right else -2.0, right) if self._knows(context) else (-self.rng.random(), False))
            return out

        def generate_until(self, requests, disable_tqdm=False):
            return [self._sum(r.args[0]) if self._knows(r.args[0]) else "0" for r in requests]

        def loglikelihood_rolling(self, requests, disable_tqdm=False):
            return [-1.0 for _ in requests]

    tasks_folder, out, grid = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    manager = TaskManager(include_path=tasks_folder, include_defaults=False)
    for model, skill, seed, shots in grid:
        # what `lm_eval run --log_samples --output_path OUT` does after parsing its options
        tracker = EvaluationTracker(output_path=out)
        results = simple_evaluate(
            model="seeded", model_args={"pretrained": model, "skill": skill, "seed": seed},
            tasks=["sums_mc", "sums_gen"], num_fewshot=shots, log_samples=True, evaluation_tracker=tracker,
            task_manager=manager, random_seed=seed, numpy_random_seed=seed, torch_random_seed=seed,
            fewshot_random_seed=seed)
        samples = results.pop("samples")
        tracker.save_results_aggregated(results=results, samples=samples)
        for task in results["configs"]:
            tracker.save_results_samples(task_name=task, samples=samples[task])
''')

INSPECT_SCRIPT = textwrap.dedent('''
    import random, sys
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import includes, match
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
    def failing(sample_id=None):
        async def solve(state, generate_answer):
            if sample_id is None or state.sample_id == sample_id:
                raise RuntimeError("the endpoint went away")
            return state
        return solve

    def task(extra=()):
        return Task(dataset=MemoryDataset(list(dataset)), solver=[*extra, answer_key()], scorer=[match(), includes()])

    for name, skill in (("weak", 0.3), ("strong", 0.8)):
        for seed in (1, 2):
            model = get_model(f"mockllm/{name}", custom_outputs=outputs(f"mockllm/{name}", skill, seed, 2 * len(sums)))
            eval(task(), model=model, epochs=2, seed=seed, log_dir=log_dir, display="none")
    model = get_model("mockllm/weak", custom_outputs=outputs("mockllm/weak", 0.3, 9, 2 * len(sums)))
    eval(task(), model=model, seed=3, log_dir=log_dir, log_format="json", display="none")
    eval(task([failing()]), model=get_model("mockllm/weak"), seed=4, log_dir=log_dir, display="none")
    model = get_model("mockllm/weak", custom_outputs=outputs("mockllm/weak", 0.3, 5, 2 * len(sums)))
    eval(task([failing(sample_id="3+3")]), model=model, seed=5, log_dir=log_dir, display="none", fail_on_error=False)
''')


def run_script(script, *args, cwd):
    env = {**os.environ, **OFFLINE, "HF_HOME": str(cwd / "hf"), "PYTHONPATH": os.pathsep.join(sys.path)}
    path = cwd / "make_logs.py"
    path.write_text(script)
    done = subprocess.run([sys.executable, str(path), *map(str, args)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.fixture(scope="module")
def lm_eval_logs(tmp_path_factory):
    pytest.importorskip("lm_eval")
    folder = tmp_path_factory.mktemp("lm_eval")
    tasks = folder / "tasks"
    tasks.mkdir()
    data = tasks / "sums.jsonl"
    data.write_text("".join(json.dumps({"question": f"{a}+{b}=", "choices": [str(a + b + d) for d in (0, 1, -1)],
                                        "answer": 0, "gold": str(a + b)}) + "\n" for a, b in SUMS))
    common = f"dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\ntest_split: test\ndoc_to_text: '{{{{question}}}}'\n"
    (tasks / "sums_mc.yaml").write_text(
        f"task: sums_mc\n{common}output_type: multiple_choice\ndoc_to_choice: '{{{{choices}}}}'\n"
        "doc_to_target: '{{answer}}'\nmetric_list:\n  - metric: acc\n  - metric: acc_norm\n")
    (tasks / "sums_gen.yaml").write_text(
        f"task: sums_gen\n{common}output_type: generate_until\ndoc_to_target: '{{{{gold}}}}'\n"
        "generation_kwargs:\n  until: ['\\n']\nmetric_list:\n  - metric: exact_match\n")
    grid = [[model, skill, seed, shots] for model, skill in (("weak", 0.3), ("strong", 0.9))
            for seed in (1, 2) for shots in (0, 2)]
    run_script(LM_EVAL_SCRIPT, tasks, folder / "out", json.dumps(grid), cwd=folder)
    return folder / "out"


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory):
    pytest.importorskip("inspect_ai")
    folder = tmp_path_factory.mktemp("inspect")
    run_script(INSPECT_SCRIPT, folder / "logs", ",".join(f"{a}+{b}" for a, b in SUMS), cwd=folder)
    return folder / "logs"


def test_lm_eval_runs_import_with_their_settings(lm_eval_logs, tmp_path):
    summary = import_logs("lm-eval", [lm_eval_logs], tmp_path / "t.parquet", notify=pytest.fail)
    assert (summary.runs, summary.rows, summary.tasks, summary.items) == (8, 8 * 2 * len(SUMS), 2, 2 * len(SUMS))
    table = read_logs("lm-eval", [lm_eval_logs])
    assert set(table["model"]) == {"weak", "strong"} and set(table["seed"]) == {1, 2}
    assert set(table["num_fewshot"]) == {0, 2} and set(table["skill"]) == {"0.3", "0.9"}
    assert table.groupby("model")["acc"].mean()["strong"] > table.groupby("model")["acc"].mean()["weak"]
    per_run = table.groupby(["run", "task"]).size()
    assert (per_run == len(SUMS)).all()


def test_lm_eval_run_means_equal_the_harness_aggregates_exactly(lm_eval_logs):
    table = read_logs("lm-eval", [lm_eval_logs])
    checked = 0
    for results in lm_eval_logs.rglob("results_*.json"):
        payload = json.loads(results.read_text())
        run = f"{payload['model_name_sanitized']}/{results.stem.removeprefix('results_')}"
        for task, aggregates in payload["results"].items():
            rows = table[(table["run"] == run) & (table["task"] == task)]
            for key, value in aggregates.items():
                metric, _, name = key.partition(",")
                if name == "none" and not metric.endswith("_stderr"):
                    values = rows[metric].tolist()
                    assert sum(values) / len(values) == value, (run, task, metric)
                    checked += 1
    assert checked == 8 * 3


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
    assert summary.runs == 6 and len(summary.skipped) == 1
    assert "ended in an error: RuntimeError" in summary.skipped[0].reason
    assert "the endpoint went away" in summary.skipped[0].reason
    assert summary.dropped_samples == 1
    assert len(notes) == 2
    table = read_logs("inspect", [inspect_logs], notify=lambda line: None)
    assert list(table.columns[:6]) == ["item", "task", "model", "run", "seed", "epoch"]
    assert {"match", "includes"} <= set(table.columns)
    assert set(table["seed"]) == {1, 2, 3, 5}
    assert len(table) == 4 * 2 * len(SUMS) + len(SUMS) + (len(SUMS) - 1)
    assert set(table.loc[table["seed"] == 1, "epoch"]) == {1, 2}


def test_inspect_run_means_equal_the_harness_accuracy_exactly(inspect_logs):
    from inspect_ai.log import list_eval_logs, read_eval_log

    table = read_logs("inspect", [inspect_logs], notify=lambda line: None)
    checked = 0
    for info in list_eval_logs(str(inspect_logs)):
        log = read_eval_log(info, header_only=True)
        if log.status != "success":
            continue
        rows = table[table["run"] == os.path.splitext(os.path.basename(log.location))[0]]
        for score in log.results.scores:
            # epochs are balanced, so the mean of the rows is the mean of the per-sample means
            values = rows[score.name].tolist()
            assert sum(values) / len(values) == score.metrics["accuracy"].value, (log.location, score.name)
            checked += 1
    assert checked == 6 * 2


def test_inspect_reads_the_simulated_eval_logs_as_we_do(tmp_path):
    pytest.importorskip("inspect_ai")
    from inspect_ai.log import read_eval_log
    from inspect_ai.scorer import value_to_float

    from bayesrepro.harness.simulate import simulate_grid

    simulate_grid(tmp_path, harness="inspect", seeds=(1,), items=5)
    ours = read_logs("inspect", [tmp_path])
    for path in tmp_path.glob("*.eval"):
        log = read_eval_log(str(path))
        assert log.status == "success" and log.plan.config.seed == 1
        rows = ours[ours["run"] == path.stem].set_index("item")
        for sample in log.samples:
            assert rows.loc[str(sample.id), "choice"] == value_to_float()(sample.scores["choice"].value)


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
