"""Import of harness logs at scale: runs × items into Parquet, its time and peak memory, against the peers.

Usage:
    python benchmarks/bench_import.py [--harness lm-eval,inspect] [--runs 1000] [--items 15000]
        [--lm-eval-tasks 15] [--peer-runs 10] [--question-chars 600] [--choice-chars 40]
        [--completion-chars 400] [--sample-members] [--cold] [--calibrate] [--folder DIR] [--clean]
        [--json-out FILE]

The logs are simulated in the harnesses' own formats by
bayesrepro.harness.simulate (10 models × runs/20 seeds × 2 few-shot
settings): lm-eval writes, per run, a results file and one samples file per
task (items split over --lm-eval-tasks tasks; multiple-choice lines with the
document, the four prompts and the log-likelihoods, about 1 kB each);
Inspect writes one .eval archive per run the size of a real one: per sample
a question, four choices and a completion of the given lengths (made-up
words that compress about as text does), metadata, token usage, Inspect's
timing and ids, in the summaries, the journal and the reductions;
--sample-members adds the full samples (messages, output, the events of
solver and scorer), which the reader never opens and which make a log about
2.5 times larger (and take long to write). --calibrate writes a 300-sample
log with Inspect itself (mockllm, the same text lengths) next to a simulated
one and prints the bytes per sample of each kind of member, so the sizes can
be checked against the harness. The logs are written once to
benchmarks/.cache/ (or --folder) and reused; --clean removes them
afterwards.

Ours is the whole command as a user runs it, start-up included:
    bayesrepro import HARNESS FOLDER --out FILE.parquet --json
under /usr/bin/time -v (wall time, CPU time, peak resident memory).
Targets: under 120 s and under 2 GB for 1,000 runs × 15,000 items.

Page cache: the logs were just written or read and may be in memory. The
script prints their size next to the machine's memory; --cold evicts them
before every timed read, by posix_fadvise(DONTNEED) on every log file
(no privilege needed, and the program and its libraries stay cached, as
they are for a user), and prints how much of them was still resident
afterwards (when util-linux's fincore is installed).

Peers, on the first --peer-runs runs, in this process, scaled to all runs
per row: for lm-eval (which has no reader of its samples files), pandas'
read_json(lines=True) of each samples file, which is what one writes by
hand; for Inspect, its own read_eval_log_sample_summaries (the part of a
log we read), run when inspect-ai is installed (pip install '.[harness]').
Ours is timed on the same runs in the same process, so the ratio is like
for like.

What to record: the lines starting with "harness", "bayesrepro import",
"peer" and, with --calibrate, "calibration".
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time
import zipfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_frequentist import CACHE, bayesrepro_command, last_json_line, run_command  # noqa: E402

from bayesrepro.harness import import_logs  # noqa: E402
from bayesrepro.harness.simulate import TextSizes, Truth, simulate_grid  # noqa: E402

MODELS, SHOTS = 10, (0, 5)
TARGET_SECONDS, TARGET_MB = 120, 2048
CALIBRATION_SAMPLES = 300


def logs_folder(args, harness: str) -> Path:
    root = Path(args.folder) if args.folder else CACHE
    if harness == "lm-eval":
        return root / f"harness-lm-eval-{args.runs}x{args.items}x{args.lm_eval_tasks}"
    texts = text_sizes(args)
    members = "-members" if args.sample_members else ""
    return root / f"harness-inspect-{args.runs}x{args.items}-{texts.question}-{texts.choice}-{texts.completion}{members}"


def text_sizes(args) -> TextSizes:
    return TextSizes(args.question_chars, args.choice_chars, args.completion_chars)


def ensure_logs(args, harness: str) -> Path:
    folder = logs_folder(args, harness)
    done = folder / "complete.json"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    tasks = args.lm_eval_tasks if harness == "lm-eval" else 1
    truth = Truth(model_effects={f"model{k}": 0.1 * k for k in range(MODELS)},
                  shot_effects={shots: 0.2 * i for i, shots in enumerate(SHOTS)})
    print(f"writing {args.runs} simulated {harness} runs of {args.items} items to {folder} ...", flush=True)
    start = time.perf_counter()
    simulate_grid(folder / "logs", harness=harness, seeds=range(args.runs // (MODELS * len(SHOTS))),
                  items=args.items // tasks, tasks=tasks, truth=truth, sample_members=args.sample_members,
                  texts=text_sizes(args) if harness == "inspect" else None)
    done.write_text(json.dumps({"runs": args.runs, "items": args.items, "tasks": tasks,
                                "seconds": time.perf_counter() - start}))
    return folder


def log_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


def evict(files: list[Path]) -> str:
    """Take the files (only they: the program and its libraries stay cached) out of the page cache, and say how
    much of them stayed resident."""
    os.sync()
    for path in files:
        descriptor = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(descriptor)
    return f"evicted (posix_fadvise DONTNEED); {resident(files)}"


def resident(files: list[Path]) -> str:
    """How much of the files is in the page cache, by util-linux's fincore."""
    if not shutil.which("fincore"):
        return "residency not measured (no fincore)"
    cached = total = 0
    for start in range(0, len(files), 500):
        done = subprocess.run(["fincore", "--bytes", "--noheadings", "--raw", "--output", "RES,SIZE",
                               *map(str, files[start:start + 500])], capture_output=True, text=True)
        for line in done.stdout.split("\n"):
            if line.strip():
                res, size = map(int, line.split())
                cached, total = cached + res, total + size
    return f"{cached / max(total, 1):.1%} of the logs resident"


def run_ours(folder: Path, harness: str, out: Path) -> dict:
    run = run_command([*bayesrepro_command(), "import", harness, str(folder / "logs"), "--out", str(out), "--json"])
    if run.status != "ok":
        raise SystemExit(f"bayesrepro import failed: {run.stderr.strip()[-2000:]}")
    summary = last_json_line(run.stdout)
    return {"seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "peak_mb": run.peak_mb, "rows": summary["rows"],
            "runs": summary["runs"], "out_mb": out.stat().st_size / 2**20, "aggregates": summary["aggregates"]}


def peer_lm_eval(folder: Path, runs: int, cold: bool) -> dict:
    import pandas as pd

    results = sorted((folder / "logs").rglob("results_*.json"))[:runs]
    samples = [s for r in results for s in r.parent.glob(f"samples_*_{r.stem.removeprefix('results_')}.jsonl")]
    if cold:
        evict(results + samples)
    start = time.perf_counter()
    rows = len(pd.concat([pd.read_json(path, lines=True) for path in samples], ignore_index=True))
    peer = time.perf_counter() - start
    if cold:
        evict(results + samples)
    return {"peer": "pandas.read_json(lines=True)", "rows": rows, "peer_seconds": peer,
            "ours_seconds": time_ours("lm-eval", results)}


def peer_inspect(folder: Path, runs: int, cold: bool) -> dict:
    logs = sorted((folder / "logs").glob("*.eval"))[:runs]
    try:
        from inspect_ai.log import read_eval_log_sample_summaries
    except ImportError:
        return {"peer": "inspect_ai not installed (pip install '.[harness]')"}
    if cold:
        evict(logs)
    start = time.perf_counter()
    rows = sum(len(read_eval_log_sample_summaries(str(path))) for path in logs)
    peer = time.perf_counter() - start
    if cold:
        evict(logs)
    return {"peer": "inspect_ai.log.read_eval_log_sample_summaries", "rows": rows, "peer_seconds": peer,
            "ours_seconds": time_ours("inspect", logs)}


def time_ours(harness: str, paths: list[Path]) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        import_logs(harness, paths, Path(scratch) / "out.parquet")
        return time.perf_counter() - start


INSPECT_CALIBRATION = textwrap.dedent('''
    import random, string, sys
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, ModelUsage, get_model
    from inspect_ai.scorer import choice
    from inspect_ai.solver import multiple_choice

    log_dir, samples, question, option, completion = sys.argv[1], *map(int, sys.argv[2:])
    rng = random.Random(0)
    words = ["".join(rng.choice(string.ascii_lowercase) for _ in range(rng.randint(2, 9))) for _ in range(5000)]

    def text(characters):
        return " ".join(rng.choice(words) for _ in range(max(1, characters // 6)))

    dataset = [Sample(input=text(question) + "?", choices=[text(option) for _ in range(4)], target="ABCD"[i % 4],
                      id=f"q{i}", metadata={"subject": "sim_mc_0"}) for i in range(samples)]

    def outputs():
        while True:
            output = ModelOutput.from_content(model="mockllm/model",
                                              content=text(completion) + "\\n\\nANSWER: " + rng.choice("ABCD"))
            output.usage = ModelUsage(input_tokens=question // 4 + 60, output_tokens=completion // 4,
                                      total_tokens=question // 4 + completion // 4 + 60)
            yield output

    eval(Task(dataset=MemoryDataset(dataset), solver=multiple_choice(), scorer=choice()),
         model=get_model("mockllm/model", custom_outputs=outputs()), seed=1, log_dir=log_dir, display="none")
''')


def calibrate(args) -> dict:
    """Bytes per sample of each kind of member: a log Inspect wrote, and a simulated one with the same text lengths."""
    texts = text_sizes(args)
    with tempfile.TemporaryDirectory() as scratch:
        scratch = Path(scratch)
        script = scratch / "inspect_log.py"
        script.write_text(INSPECT_CALIBRATION)
        env = {**os.environ, "INSPECT_DISABLE_TELEMETRY": "1", "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([sys.executable, str(script), str(scratch / "inspect"), str(CALIBRATION_SAMPLES),
                               str(texts.question), str(texts.choice), str(texts.completion)],
                              capture_output=True, text=True, env=env)
        if done.returncode != 0:
            return {"calibration": f"Inspect could not write a log ({done.stderr.strip().splitlines()[-1:]})"}
        simulate_grid(scratch / "simulated", harness="inspect", seeds=(0,), items=CALIBRATION_SAMPLES, texts=texts,
                      truth=Truth(model_effects={"model": 0.0}, shot_effects={0: 0.0}))
        return {"inspect": member_bytes(next((scratch / "inspect").glob("*.eval"))),
                "simulated": member_bytes(next((scratch / "simulated").glob("*.eval")))}


def member_bytes(path: Path) -> dict:
    """Compressed bytes per sample by kind of member (summaries, journal, samples, reductions) and in all."""
    sizes = Counter()
    with zipfile.ZipFile(path) as archive:  # the directory only: zipfile lists Zstandard members it cannot inflate
        for member in archive.infolist():
            sizes[member.filename.split("/")[0]] += member.compress_size
    sizes["whole file"] = path.stat().st_size
    return {kind: round(size / CALIBRATION_SAMPLES) for kind, size in sizes.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harness", default="lm-eval,inspect")
    parser.add_argument("--runs", type=int, default=1000, help="a multiple of 20 (10 models × 2 few-shot settings)")
    parser.add_argument("--items", type=int, default=15000)
    parser.add_argument("--lm-eval-tasks", type=int, default=15)
    parser.add_argument("--peer-runs", type=int, default=10)
    defaults = TextSizes()
    parser.add_argument("--question-chars", type=int, default=defaults.question, help="Inspect: characters per question")
    parser.add_argument("--choice-chars", type=int, default=defaults.choice, help="Inspect: characters per choice")
    parser.add_argument("--completion-chars", type=int, default=defaults.completion,
                        help="Inspect: characters per completion (the model's reasoning before its answer)")
    parser.add_argument("--sample-members", action="store_true", help="write Inspect's full samples too (slow)")
    parser.add_argument("--cold", action="store_true", help="evict the logs from the page cache before every timed read")
    parser.add_argument("--calibrate", action="store_true",
                        help="compare the simulated Inspect log's size per sample with one Inspect writes")
    parser.add_argument("--folder", help="where the simulated logs go (default benchmarks/.cache/)")
    parser.add_argument("--clean", action="store_true", help="remove the simulated logs afterwards")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if args.runs % (MODELS * len(SHOTS)):
        parser.error(f"--runs must be a multiple of {MODELS * len(SHOTS)}")
    CACHE.mkdir(exist_ok=True)
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    report = {}
    if args.calibrate:
        report["calibration"] = calibrate(args)
        for source, sizes in report["calibration"].items():
            print(f"calibration, bytes per sample ({source}): {sizes}")
    for harness in args.harness.split(","):
        folder = ensure_logs(args, harness)
        files = log_files(folder / "logs")
        size = sum(p.stat().st_size for p in files)
        caches = evict(files) if args.cold else f"warm ({resident(files)})"
        with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
            ours = run_ours(folder, harness, Path(scratch) / "table.parquet")
        peer = (peer_lm_eval if harness == "lm-eval" else peer_inspect)(folder, args.peer_runs, args.cold)
        report[harness] = {"logs_gb": size / 2**30, "bytes_per_row": size / ours["rows"], "page_cache": caches,
                           **ours, "peers": peer}
        met = ours["seconds"] < TARGET_SECONDS and ours["peak_mb"] < TARGET_MB
        checks = ours["aggregates"]
        print(f"\nharness {harness}: {ours['runs']} runs, {ours['rows']:,} rows from {size / 2**30:.2f} GB of logs "
              f"({size / ours['rows']:.0f} bytes per row; machine memory {memory_gb:.0f} GB; page cache {caches})")
        print(f"  bayesrepro import   {ours['seconds']:7.1f} s wall  {ours['cpu_seconds']:7.1f} s CPU  "
              f"{ours['peak_mb']:7.0f} MB peak  {ours['rows'] / ours['seconds'] / 1e6:5.2f} M rows/s  "
              f"{size / 2**20 / ours['seconds']:6.0f} MB/s   target (<{TARGET_SECONDS} s, <{TARGET_MB} MB): "
              f"{'met' if met else 'NOT met'}; means checked: {checks['exact']} exact, "
              f"{checks['to_rounding']} to rounding")
        if "peer_seconds" in peer:
            print(f"  peer on {args.peer_runs} runs ({peer['rows']:,} rows): {peer['peer']} {peer['peer_seconds']:.2f} s, "
                  f"ours {peer['ours_seconds']:.2f} s: peer/ours = {peer['peer_seconds'] / peer['ours_seconds']:.1f}")
        else:
            print(f"  peer: {peer['peer']}")
        if args.clean:
            shutil.rmtree(folder)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
