"""Type-I error of the binary GLRT (Laplace ML fits) on simulated null benchmarks (slow).

The full runs (benchmarks/glrt_type1_binary.py, 1,000 replicates each) measured, at alpha = 5 %,
for H1 ``correct ~ system + (1|item) + (1|system:seed)`` on 200 items x 2 systems x 5 seeds
(item SD 1.5, seed SD 0.3): 7.9 % (binomial SE 0.7 %); with 3 seeds per system 10.5 %, with 10
seeds 6.4 %. The systems' difference is informed by the seeds, not the 200 items, and with so
few levels the chi-square reference of a Laplace likelihood ratio is liberal. Where the compared
levels vary within items and nothing else varies between the systems, the test holds its level
(4.0 % in 1,000 replicates). The checks here use fewer replicates and tolerances of three
binomial standard errors.
"""

from concurrent.futures import ProcessPoolExecutor

import numpy as np
import pytest

from bayesrepro.frequentist import glrt
from bayesrepro.simulate import binary_grid

NULL_SYSTEMS = {"A": 0.0, "B": 0.0}


def paired_null(seed: int) -> float:
    data = binary_grid(items=200, systems=NULL_SYSTEMS, seeds=3, prompts=1, seed_sd=0.0, prompt_sd=0.0,
                       random_state=seed)
    return glrt("correct ~ 1 + (1|item)", "correct ~ system + (1|item)", data).p


def seeds_null(seed: int) -> float:
    data = binary_grid(items=200, systems=NULL_SYSTEMS, seeds=5, prompts=1, seed_sd=0.3, prompt_sd=0.0,
                       random_state=seed)
    return glrt("correct ~ 1 + (1|item) + (1|system:seed)", "correct ~ system + (1|item) + (1|system:seed)", data).p


def rejection_rate(replicate, replicates: int, seed: int) -> float:
    seeds = np.random.SeedSequence(seed).generate_state(replicates).tolist()
    with ProcessPoolExecutor(2) as pool:
        p_values = np.array(list(pool.map(replicate, seeds, chunksize=20)))
    return float(np.mean(p_values < 0.05))


@pytest.mark.slow
def test_glrt_holds_its_level_when_the_items_inform_the_test():
    replicates = 600
    rate = rejection_rate(paired_null, replicates, 101)
    assert abs(rate - 0.05) <= 3 * np.sqrt(0.05 * 0.95 / replicates)


@pytest.mark.slow
def test_glrt_with_five_seeds_per_system_is_liberal_as_measured():
    replicates, measured = 300, 0.079
    rate = rejection_rate(seeds_null, replicates, 202)
    assert abs(rate - measured) <= 3 * np.sqrt(measured * (1 - measured) / replicates)
