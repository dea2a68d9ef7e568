"""Index ranges expanded without a Python loop: the sparse core's plans enumerate, for many starts at once,
every position from a start to its count's end (the entries of a CSR row, the pairs in a row of B, the
columns of a group)."""

from __future__ import annotations

import numpy as np


def expand_ranges(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For ranges [starts[i], starts[i] + counts[i]): which range each position belongs to, and the position."""
    owner = np.repeat(np.arange(len(starts)), counts)
    within = np.arange(len(owner)) - np.repeat(np.cumsum(counts) - counts, counts)
    return owner, np.asarray(starts)[owner] + within
