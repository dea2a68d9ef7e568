"""Time of `bayesrepro rank` on a simulated binary leaderboard, whole and by stage.

    python benchmarks/bench_rank.py                          # 50 systems x 2,000 items, 300 replicates
    python benchmarks/bench_rank.py --systems 12 --items 400 --bootstrap 100

The leaderboard: every system answers every item once, logit P(correct) = system effect (evenly spaced over
one logit) + item effect (SD 1.5). Printed: the wall time of the whole command as a user runs it (start-up and
reading the CSV included), then of its stages in one process: the ML fit, the bootstrap's Hessian at the fit
and its replicates (seconds each), and the sampler with what bounds it: its CPU time, the gradient evaluations
NUTS makes per draw and the cost of one. The machine's load average is printed beside them: on a shared
machine the times are noisy.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
FORMULA = "correct ~ system + (1|item)"


def leaderboard(systems: int, items: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    effect = np.linspace(0.0, 1.0, systems)
    s, i = (a.ravel() for a in np.meshgrid(np.arange(systems), np.arange(items), indexing="ij"))
    eta = -0.2 + effect[s] + rng.normal(0, 1.5, items)[i]
    return pd.DataFrame({"system": [f"s{k:02d}" for k in s], "item": [f"q{k}" for k in i],
                         "correct": (rng.random(s.size) < 1 / (1 + np.exp(-eta))).astype(int)})


def stages(data: pd.DataFrame, replicates: int) -> dict[str, float]:
    sys.path.insert(0, str(ROOT))
    import bayesrepro as br
    from bayesrepro.frequentist.fixed_bootstrap import fixed_effect_replicates

    model = br.Model(FORMULA, data)
    times = {}
    start = time.perf_counter()
    fit = model.engine_fit("ml")
    times["fit"] = time.perf_counter() - start
    start = time.perf_counter()
    fixed_effect_replicates(fit, model.frame, True, replicates, np.random.default_rng(1))
    times[f"bootstrap ({replicates} replicates, Hessian included)"] = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    posterior = model.sample(seed=0)
    times["sampler (4 chains x 1000 draws)"] = time.perf_counter() - start
    times["  its CPU time (every thread)"] = time.process_time() - cpu
    steps = posterior.bayes.draws.stats["n_steps"]
    times[f"  gradient evaluations per draw after tuning (mean of {steps.size:,})"] = float(steps.mean())
    times["  one gradient evaluation at the posterior mode, microseconds"] = 1e6 * gradient_cost(model, posterior)
    return times


def gradient_cost(model, posterior) -> float:
    """Seconds of one evaluation of the binary fast path's compiled log density and gradient (called from Python,
    so a microsecond of call overhead is included), at the posterior mode where its chains start."""
    from bayesrepro.bayes.binary_layout import binary_layout
    from bayesrepro.bayes.binary_model import build_binary_model
    from bayesrepro.bayes.binary_priors import binary_priors

    frame = model.frame
    cells = frame.binomial()
    layout = binary_layout(cells.successes, cells.trials, cells.fixed_cell, cells.codes,
                           [len(levels) for levels in cells.levels], posterior.bayes.link)
    density = build_binary_model(layout, cells.X_fixed, binary_priors(frame), frame.group_names, cells.levels).density
    point = density.initial_point
    density.value_and_gradient(point)
    repeats = 2000
    start = time.perf_counter()
    for _ in range(repeats):
        density.value_and_gradient(point)
    return (time.perf_counter() - start) / repeats


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=50)
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--bootstrap", type=int, default=300)
    parser.add_argument("--stage-replicates", type=int, default=5,
                        help="replicates timed in the stage breakdown (default 5)")
    args = parser.parse_args()
    data = leaderboard(args.systems, args.items)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "leaderboard.csv"
        data.to_csv(path, index=False)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "bayesrepro", "rank", str(path), "--formula", FORMULA,
                               "--bootstrap", str(args.bootstrap), "--json"], capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
        whole = time.perf_counter() - start
    print(f"{args.systems} systems x {args.items} items ({len(data):,} rows), load average {os.getloadavg()[0]:.1f}")
    print(f"  bayesrepro rank --bootstrap {args.bootstrap}: {whole:.1f} s (exit status {done.returncode})")
    for stage, value in stages(data, args.stage_replicates).items():
        print(f"  {stage}: {value:.1f}" + ("" if "evaluation" in stage else " s"))


if __name__ == "__main__":
    main()
