"""Binary responses drawn with given probabilities: the simulated scores of the binary bootstraps and checks."""

from __future__ import annotations

import numpy as np


def draw_successes(probability: np.ndarray, trials: np.ndarray | None, rng: np.random.Generator) -> np.ndarray:
    """Every row's 0/1 score (``trials`` None) or successes out of its trials, with the given probabilities."""
    if trials is None:
        return (rng.uniform(size=len(probability)) < probability).astype(float)
    return rng.binomial(trials.astype(np.int64), probability).astype(float)
