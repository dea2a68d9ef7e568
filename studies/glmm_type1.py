"""Type-I error of the binary GLRT (Laplace ML fits) on simulated null benchmarks.

The full runs (benchmarks/glrt_type1_binary.py, 1,000 replicates each) measured, at alpha = 5 %,
for H1 ``correct ~ system + (1|item) + (1|system:seed)`` on 200 items x 2 systems x 5 seeds
(item SD 1.5, seed SD 0.3): 7.9 % (binomial SE 0.7 %); with 3 seeds per system 10.5 %, with 10
seeds 6.4 %. The systems' difference is informed by the seeds, not the 200 items, and with so
few levels the chi-square reference of a Laplace likelihood ratio is liberal. Where the compared
levels vary within items and nothing else varies between the systems, the test holds its level
(4.0 % in 1,000 replicates). This study repeats both with fewer replicates (a few minutes on two
cores) and writes the rates to ``studies/results/glmm_type1.json``, which ``tests/test_studies.py``
checks for freshness and holds to three binomial standard errors:

    python studies/glmm_type1.py [--processes 2]
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the checkout's bayesrepro and studies

from studies.record import write_record  # noqa: E402

NULL_SYSTEMS = {"A": 0.0, "B": 0.0}
# what the figures depend on: the study, the simulated grid, the GLMM fits, the GLRT and the model frames
SOURCES = ["studies/glmm_type1.py", "bayesrepro/simulate.py", "bayesrepro/frequentist/*.py", "bayesrepro/design/*.py"]


def paired_null(seed: int) -> float:
    from bayesrepro.frequentist.glrt import glrt
    from bayesrepro.simulate import binary_grid

    data = binary_grid(items=200, systems=NULL_SYSTEMS, seeds=3, prompts=1, seed_sd=0.0, prompt_sd=0.0,
                       random_state=seed)
    return glrt("correct ~ 1 + (1|item)", "correct ~ system + (1|item)", data).p


def seeds_null(seed: int) -> float:
    from bayesrepro.frequentist.glrt import glrt
    from bayesrepro.simulate import binary_grid

    data = binary_grid(items=200, systems=NULL_SYSTEMS, seeds=5, prompts=1, seed_sd=0.3, prompt_sd=0.0,
                       random_state=seed)
    return glrt("correct ~ 1 + (1|item) + (1|system:seed)", "correct ~ system + (1|item) + (1|system:seed)", data).p


def rejection_rate(replicate, replicates: int, seed: int, processes: int) -> float:
    seeds = np.random.SeedSequence(seed).generate_state(replicates).tolist()
    with ProcessPoolExecutor(processes) as pool:
        p_values = np.array(list(pool.map(replicate, seeds, chunksize=20)))
    return float(np.mean(p_values < 0.05))


def main() -> int:
    parser = argparse.ArgumentParser(description="type-I error of the binary GLRT")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    figures = {
        "paired": {"replicates": 600, "rate": rejection_rate(paired_null, 600, 101, args.processes)},
        "seeds": {"replicates": 300, "rate": rejection_rate(seeds_null, 300, 202, args.processes),
                  "measured_in_1000": 0.079},
    }
    print(figures)
    write_record("glmm_type1", SOURCES, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
