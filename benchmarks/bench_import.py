"""Import of harness logs at scale: runs × items into Parquet, its time and peak memory, against the peers.

Usage:
    python benchmarks/bench_import.py [--harness lm-eval,inspect] [--runs 1000] [--items 15000]
        [--lm-eval-tasks 15] [--peer-runs 10] [--folder DIR] [--clean] [--json-out FILE]

The logs are simulated in the harnesses' own formats by
bayesrepro.harness.simulate (10 models × runs/20 seeds × 2 few-shot
settings): lm-eval writes, per run, a results file and one samples file per
task (items split over --lm-eval-tasks tasks; multiple-choice lines with the
document, the four prompts and the log-likelihoods, about 1 kB each);
Inspect writes one .eval archive per run with the header, the journal and
a summary per item, but without the full sample per item that Inspect also
writes (15 M of them take an hour to simulate; the reader never opens them:
it reads only the archive's directory, searched as bytes, and two members).
--sample-members writes them too. The logs are written once to
benchmarks/.cache/ (or --folder) and reused; --clean removes them afterwards.

Ours is the whole command as a user runs it, start-up included:
    bayesrepro import HARNESS FOLDER --out FILE.parquet --json
under /usr/bin/time -v (wall time, CPU time, peak resident memory).
Targets: under 120 s and under 2 GB for 1,000 runs × 15,000 items.

The logs were just written or read, so they may be in the page cache: the
script says how large they are next to the memory of the machine, and
--drop-caches asks the kernel to drop its caches first (root only; the
script says whether it could).

Peers, on the first --peer-runs runs, in this process, scaled to all runs
per row: for lm-eval (which has no reader of its samples files), pandas'
read_json(lines=True) of each samples file, which is what one writes by
hand; for Inspect, its own read_eval_log_sample_summaries (the part of a
log we read; needs the harness extra). Ours is timed on the same runs in
the same process, so the ratio is like for like.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_frequentist import CACHE, bayesrepro_command, last_json_line, run_command  # noqa: E402

from bayesrepro.harness import import_logs  # noqa: E402
from bayesrepro.harness.simulate import Truth, simulate_grid  # noqa: E402

MODELS, SHOTS = 10, (0, 5)
TARGET_SECONDS, TARGET_MB = 120, 2048


def logs_folder(args, harness: str) -> Path:
    tasks = args.lm_eval_tasks if harness == "lm-eval" else 1
    root = Path(args.folder) if args.folder else CACHE
    members = "-members" if harness == "inspect" and args.sample_members else ""
    return root / f"harness-{harness}-{args.runs}x{args.items}x{tasks}{members}"


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
                  items=args.items // tasks, tasks=tasks, truth=truth, sample_members=args.sample_members)
    done.write_text(json.dumps({"runs": args.runs, "items": args.items, "tasks": tasks,
                                "seconds": time.perf_counter() - start}))
    return folder


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def drop_caches() -> str:
    try:
        os.sync()
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
        return "dropped"
    except OSError as exc:
        return f"not dropped ({exc.strerror})"


def run_ours(folder: Path, harness: str, out: Path) -> dict:
    run = run_command([*bayesrepro_command(), "import", harness, str(folder / "logs"), "--out", str(out), "--json"])
    if run.status != "ok":
        raise SystemExit(f"bayesrepro import failed: {run.stderr.strip()[-2000:]}")
    summary = last_json_line(run.stdout)
    return {"seconds": run.seconds, "cpu_seconds": run.cpu_seconds, "peak_mb": run.peak_mb, "rows": summary["rows"],
            "runs": summary["runs"], "out_mb": out.stat().st_size / 2**20}


def peer_lm_eval(folder: Path, runs: int) -> dict:
    import pandas as pd

    results = sorted((folder / "logs").rglob("results_*.json"))[:runs]
    samples = [s for r in results for s in r.parent.glob(f"samples_*_{r.stem.removeprefix('results_')}.jsonl")]
    start = time.perf_counter()
    rows = len(pd.concat([pd.read_json(path, lines=True) for path in samples], ignore_index=True))
    peer = time.perf_counter() - start
    return {"peer": "pandas.read_json(lines=True)", "rows": rows, "peer_seconds": peer,
            "ours_seconds": time_ours("lm-eval", results)}


def peer_inspect(folder: Path, runs: int) -> dict:
    logs = sorted((folder / "logs").glob("*.eval"))[:runs]
    try:
        from inspect_ai.log import read_eval_log_sample_summaries
    except ImportError:
        return {"peer": "inspect_ai not installed (pip install '.[harness]')"}
    start = time.perf_counter()
    rows = sum(len(read_eval_log_sample_summaries(str(path))) for path in logs)
    peer = time.perf_counter() - start
    return {"peer": "inspect_ai.log.read_eval_log_sample_summaries", "rows": rows, "peer_seconds": peer,
            "ours_seconds": time_ours("inspect", logs)}


def time_ours(harness: str, paths: list[Path]) -> float:
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        import_logs(harness, paths, Path(scratch) / "out.parquet")
        return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--harness", default="lm-eval,inspect")
    parser.add_argument("--runs", type=int, default=1000, help="a multiple of 20 (10 models × 2 few-shot settings)")
    parser.add_argument("--items", type=int, default=15000)
    parser.add_argument("--lm-eval-tasks", type=int, default=15)
    parser.add_argument("--peer-runs", type=int, default=10)
    parser.add_argument("--sample-members", action="store_true", help="write Inspect's full samples too (slow)")
    parser.add_argument("--folder", help="where the simulated logs go (default benchmarks/.cache/)")
    parser.add_argument("--drop-caches", action="store_true")
    parser.add_argument("--clean", action="store_true", help="remove the simulated logs afterwards")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    if args.runs % (MODELS * len(SHOTS)):
        parser.error(f"--runs must be a multiple of {MODELS * len(SHOTS)}")
    CACHE.mkdir(exist_ok=True)
    memory_gb = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    report = {}
    for harness in args.harness.split(","):
        folder = ensure_logs(args, harness)
        size = folder_bytes(folder / "logs")
        caches = drop_caches() if args.drop_caches else "not asked to drop"
        with tempfile.TemporaryDirectory(dir=CACHE) as scratch:
            ours = run_ours(folder, harness, Path(scratch) / "table.parquet")
        peer = (peer_lm_eval if harness == "lm-eval" else peer_inspect)(folder, args.peer_runs)
        report[harness] = {"logs_gb": size / 2**30, "page_cache": caches, **ours, "peers": peer}
        met = ours["seconds"] < TARGET_SECONDS and ours["peak_mb"] < TARGET_MB
        print(f"\n{harness}: {ours['runs']} runs, {ours['rows']:,} rows from {size / 2**30:.1f} GB of logs "
              f"(machine memory {memory_gb:.0f} GB; page cache {caches})")
        print(f"  bayesrepro import   {ours['seconds']:7.1f} s wall  {ours['cpu_seconds']:7.1f} s CPU  "
              f"{ours['peak_mb']:7.0f} MB peak  {ours['rows'] / ours['seconds'] / 1e6:5.2f} M rows/s  "
              f"{size / 2**20 / ours['seconds']:6.0f} MB/s   target (<{TARGET_SECONDS} s, <{TARGET_MB} MB): "
              f"{'met' if met else 'NOT met'}")
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
