"""Time of `bayesrepro rank` on a simulated binary leaderboard, whole and by stage.

    python benchmarks/bench_rank.py                          # 50 systems x 2,000 items, 300 replicates
    python benchmarks/bench_rank.py --systems 12 --items 400 --bootstrap 100

The leaderboard: every system answers every item once, logit P(correct) = system effect (evenly spaced over
one logit) + item effect (SD 1.5). Printed: the wall time of the whole command as a user runs it (start-up and
reading the CSV included), then of its stages in one process: the ML fit, the bootstrap's Hessian at the fit
and its replicates (seconds each), and the sampler. The machine's load average is printed beside them: on a
shared machine the times are noisy.
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
    start = time.perf_counter()
    model.sample(seed=0)
    times["sampler (4 chains x 1000 draws)"] = time.perf_counter() - start
    return times


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
    for stage, seconds in stages(data, args.stage_replicates).items():
        print(f"  {stage}: {seconds:.1f} s")


if __name__ == "__main__":
    main()
