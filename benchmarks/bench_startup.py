"""Start-up of the command line: a small `bayesrepro vca`, `--help`, against the numpy + pandas import floor.

Usage:
    python benchmarks/bench_startup.py [--repeats 9] [--importtime] [--top 15] [--json-out FILE]

Every figure is a whole process as a user starts it, timed from outside:
wall time, and CPU time (user + system, of the process and every process it
started, from the operating system's accounting of waited-for children), the
best of --repeats runs. The best run is the one least disturbed by other work
on the machine; CPU time is reported too because it depends less on that load
than wall time does (the load average is printed with the figures).

Commands timed:

- `bayesrepro vca rows.csv --formula 'score ~ 1 + (1|item)'`: a Gaussian REML
  fit of a 30-row CSV (written to a temporary folder), printed as tables, and
  the same with --json;
- `bayesrepro --help` and `bayesrepro vca --help`: the parser alone;
- the floor: `python -c "import numpy, pandas"`, the two libraries every fit
  reads its data with (pandas 3 imports pyarrow with them), and `python -c pass`,
  the interpreter alone (the floors end as the command line does, with
  ``gc.freeze()``, which spares the interpreter's exit a collection of every
  object the libraries made);
- the libraries a formula fit needs, loaded as bayesrepro loads them: numpy,
  pandas, formulae (with scipy.sparse, through ``formulae_loader``) and
  scipy.linalg; and those with scipy.special, which --json needs for the
  p-values of the fixed effects (its import rewrites the docstrings of 171
  functions in this SciPy).

The lines printed give each command's seconds and its ratio to the floor, and
the command's start-up beyond the floor (vca minus the numpy + pandas import)
and beyond the libraries (what bayesrepro's own modules, reading 30 rows and
the fit cost).
--importtime reruns the small vca once under `python -X importtime` and prints
the modules imported at the top level that cost most (cumulative, so a
package's own imports are inside its figure) and the total number of modules.

Modules are imported from byte code, as from an installed package: the
script unsets PYTHONDONTWRITEBYTECODE for its runs, so that the untimed first
run of each command writes the __pycache__ files the timed runs read (with the
variable set every run compiles bayesrepro's modules from source again, 0.05-0.1
s of CPU; --as-set keeps it as set, to measure that).

Target (issue "start-up"): the small vca at most 0.5 s wall on a quiet
two-core machine.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TARGET_SECONDS = 0.5
ROWS, ITEMS = 30, 10
LIBRARIES = ("from bayesrepro.design.formulae_loader import load_formulae; load_formulae(); "
             "import scipy.linalg, scipy.sparse")
NUMPY_PANDAS, LIBRARIES_NAME, WITH_SPECIAL = ("floor: import numpy, pandas", "libraries of a formula fit",
                                              "the same + scipy.special")
FLOORS = {NUMPY_PANDAS: "import numpy, pandas", LIBRARIES_NAME: LIBRARIES, WITH_SPECIAL: LIBRARIES + ", scipy.special"}
# The command line ends as bayesrepro's does (cli.console_main): the objects left are frozen out of the collector's
# sight, which spares the interpreter's tear-down a collection of everything pandas and SciPy created (~0.1 s)
EXIT_AS_THE_COMMAND = "; import gc; gc.freeze()"


def write_rows(path: Path) -> None:
    """30 scores of 10 items by 3 systems, from a seeded generator."""
    generator = random.Random(1)
    lines = ["item,system,score"] + [f"i{k % ITEMS},s{k // ITEMS},{generator.gauss(0, 1):.4f}" for k in range(ROWS)]
    path.write_text("\n".join(lines) + "\n")


def bayesrepro(*argv: str) -> list[str]:
    return [sys.executable, "-m", "bayesrepro", *argv]


def timed(command: list[str], env: dict) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, with every descendant) of one run; a failed run ends the benchmark.

    The run's working directory is the checkout on its PYTHONPATH (``python -m`` looks there first)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
                          cwd=env["PYTHONPATH"].split(os.pathsep)[0])
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed (status {done.returncode}): {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def best_of_rounds(commands: dict[str, tuple[list[str], dict]], repeats: int) -> dict[str, dict]:
    """Best wall and best CPU time of every command over ``repeats`` rounds that run each command once in turn (so
    that a change of the machine's load touches every command alike), after one untimed round that writes the byte
    code and warms the file cache."""
    for command, env in commands.values():
        timed(command, env)
    runs = {name: [] for name in commands}
    for _ in range(repeats):
        for name, (command, env) in commands.items():
            runs[name].append(timed(command, env))
    return {name: {"wall": min(w for w, _ in times), "cpu": min(c for _, c in times),
                   "wall_median": sorted(w for w, _ in times)[len(times) // 2]} for name, times in runs.items()}


def import_times(command: list[str], env: dict) -> tuple[list[tuple[float, str]], int]:
    """The top-level imports of one run under ``-X importtime`` (cumulative seconds, module), most costly first,
    and the number of modules imported."""
    done = subprocess.run([command[0], "-X", "importtime", *command[1:]], stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, env=env, cwd=REPO)
    top, count = [], 0
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s*(\d+)\s*\|\s*(\d+)\s*\|( *)(\S+)", line)
        if match:
            count += 1
            if len(match.group(3)) == 1:
                top.append((int(match.group(2)) / 1e6, match.group(4)))
    return sorted(top, reverse=True), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=9, help="timed runs of each command (default 9)")
    parser.add_argument("--baseline", metavar="CHECKOUT",
                        help="another checkout of bayesrepro (e.g. a git worktree of the commit before a change): its "
                             "vca and --help are timed in the same rounds, and the ratios printed")
    parser.add_argument("--importtime", action="store_true", help="print the costliest top-level imports of vca")
    parser.add_argument("--top", type=int, default=15, help="how many imports --importtime prints (default 15)")
    parser.add_argument("--as-set", action="store_true",
                        help="keep PYTHONDONTWRITEBYTECODE as the environment sets it (default: unset)")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    env = environment(REPO, args.as_set)
    with tempfile.TemporaryDirectory() as scratch:
        data = Path(scratch) / "rows.csv"
        write_rows(data)
        vca = ["vca", str(data), "--formula", "score ~ 1 + (1|item)"]
        ours = {
            "vca (30 rows)": bayesrepro(*vca),
            "vca --json (30 rows)": bayesrepro(*vca, "--json"),
            "bayesrepro --help": bayesrepro("--help"),
            "bayesrepro vca --help": bayesrepro("vca", "--help"),
        }
        commands = {name: (command, env) for name, command in ours.items()}
        if args.baseline:
            baseline = environment(Path(args.baseline).resolve(), args.as_set)
            commands.update({f"{name} [baseline]": (command, baseline) for name, command in ours.items()})
        commands.update({name: ([sys.executable, "-c", code + EXIT_AS_THE_COMMAND], env)
                         for name, code in FLOORS.items()})
        commands["python -c pass"] = ([sys.executable, "-c", "pass"], env)
        load = os.getloadavg()
        results = best_of_rounds(commands, args.repeats)
        traced = import_times(bayesrepro(*vca), env) if args.importtime else None
    floor = results[NUMPY_PANDAS]
    print(f"best of {args.repeats} runs; load average before {load[0]:.2f}, after {os.getloadavg()[0]:.2f} "
          f"on {os.cpu_count()} cores (figures on a loaded machine are noisy); modules "
          f"{'compiled from source at every run' if env.get('PYTHONDONTWRITEBYTECODE') else 'read from byte code'}")
    print(f"{'command':<40}{'wall s':>8}{'CPU s':>8}{'median wall':>13}{'wall/floor':>12}{'CPU/floor':>11}")
    for name, result in results.items():
        print(f"{name:<40}{result['wall']:8.3f}{result['cpu']:8.3f}{result['wall_median']:13.3f}"
              f"{result['wall'] / floor['wall']:12.2f}{result['cpu'] / floor['cpu']:11.2f}")
    small = results["vca (30 rows)"]
    print(f"vca beyond the numpy + pandas floor: {small['wall'] - floor['wall']:.3f} s wall, "
          f"{small['cpu'] - floor['cpu']:.3f} s CPU; target {TARGET_SECONDS} s wall on a quiet machine: "
          f"{'met' if small['wall'] <= TARGET_SECONDS else 'NOT met'} here")
    for command, floor_name in (("vca (30 rows)", LIBRARIES_NAME), ("vca --json (30 rows)", WITH_SPECIAL)):
        mine, below = results[command], results[floor_name]
        print(f"{command} beyond '{floor_name}' (bayesrepro's modules, reading, fitting, printing): "
              f"{mine['wall'] - below['wall']:.3f} s wall, {mine['cpu'] - below['cpu']:.3f} s CPU")
    if args.baseline:
        for name in ours:
            before, after = results[f"{name} [baseline]"], results[name]
            print(f"baseline/ours, {name}: {before['wall'] / after['wall']:.2f} wall, "
                  f"{before['cpu'] / after['cpu']:.2f} CPU ({before['cpu'] - after['cpu']:+.3f} s CPU saved)")
    if traced:
        top, count = traced
        print(f"\nvca under -X importtime: {count} modules; costliest top-level imports (cumulative s):")
        for seconds, module in top[:args.top]:
            print(f"  {seconds:7.3f}  {module}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"load": load, "repeats": args.repeats, "results": results,
                                                   "importtime": traced and traced[0][:args.top]}, indent=2))


def environment(checkout: Path, as_set: bool) -> dict:
    """The environment of a run of ``checkout``'s sources (on PYTHONPATH), with byte code written unless
    ``as_set``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(checkout), os.environ.get("PYTHONPATH")])))
    if not as_set:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


if __name__ == "__main__":
    main()
