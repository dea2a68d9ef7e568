"""The memory and work of a dense block, estimated from level counts before any block is built.

The exact intercept-only engines eliminate the factor with most levels (a
diagonal block) and keep a dense matrix for the levels of all the other
factors plus the fixed effects: its size m = q_rest + p is known as soon as
the levels are counted, and its memory grows with m², its work per
evaluation with m³. Two crossed factors of 50,000 and 100,000 levels ask for
several 20 GB matrices; such a design is refused here, in the time it took to
count its levels, with the size it would need, instead of being killed by the
operating system minutes later.

``dense_estimate`` is the one estimate every path chooser calls;
``require_within`` refuses past the limit (``--max-memory``, by default half
of the machine's memory).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Sequence

from ..errors import BayesreproError

BYTES_PER_NUMBER = 8
# Dense m×m matrices alive at once in each engine (measured peaks of the current code, rounded up):
#   gaussian: Z_r'Z_r in the statistics, the Schur complement factored in place, its inverse for the gradient,
#             and the products subtracted from it;
#   binomial: Z_r'WZ_r, the Schur complement, S⁻¹ and its symmetrised copy;
#   bayes:    the statistics' Z_r'Z_r and the density's Schur complement, factor and inverse, plus one m×m
#             matrix per distinct observation count of the dominant factor (the marginal's G).
DENSE_COPIES = {"gaussian": 5, "binomial": 4, "bayes": 4}
# Work: a Cholesky factor (m³/3) and, for the gradient, its inverse (2m³/3) per evaluation of the criterion.
FLOPS_PER_CUBE = 1.0
# The rate of the dense factorisations on a small machine (1.3e10 measured for a criterion and its gradient at
# m = 5,428 on 2 cores, OpenBLAS) and the evaluations a REML fit takes per variance component beyond the
# first (6 to 12 for two crossed factors, about 30 for three); they set the order of magnitude of a fit's time,
# which decides between paths, not a promise.
ASSUMED_FLOPS_PER_SECOND = 1e10
EVALUATIONS_PER_COMPONENT = 10
ENGINES = tuple(DENSE_COPIES)
# Above this estimated time the exact dense path is not worth waiting for where a path linear in the rows exists
# (issue 23 asks resource-hungry cases to finish within 120 s; the estimate is good to a factor of about 2).
DENSE_SECONDS_LIMIT = 60.0

_SIZE = re.compile(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([kmgt]?)i?b?\s*", re.IGNORECASE)
_UNIT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


@dataclass(frozen=True)
class DenseEstimate:
    """What the dense path of ``engine`` would allocate and compute for a design."""

    engine: str
    dense_size: int         # m: rows of the dense block (levels of the non-dominant factors + fixed effects)
    bytes: int              # peak bytes of the dense blocks alive at once
    flops_per_evaluation: float
    n_factors: int = 1

    @property
    def seconds(self) -> float:
        """Order of magnitude of a fit's time: typical evaluations at an assumed rate (not a measurement)."""
        evaluations = EVALUATIONS_PER_COMPONENT * max(1, self.n_factors - 1)
        return evaluations * self.flops_per_evaluation / ASSUMED_FLOPS_PER_SECOND

    def describe(self) -> str:
        return (f"a dense {self.dense_size:,} x {self.dense_size:,} block, about {format_bytes(self.bytes)} "
                f"and ~{self.seconds:.0f} s")


def dense_estimate(level_counts: Sequence[int], n_fixed: int, engine: str = "gaussian",
                   distinct_counts: int = 1, dominant_coupling: int = 0) -> DenseEstimate:
    """The dense path's memory and work for grouping factors of ``level_counts`` levels and ``n_fixed`` fixed effects.

    ``distinct_counts`` (bayes): distinct observation counts of the dominant factor's levels;
    ``dominant_coupling`` (binomial): entries of the dense (dominant levels × other levels) block it keeps.
    """
    if engine not in DENSE_COPIES:
        raise ValueError(f"engine must be one of {ENGINES}")
    counts = sorted((int(c) for c in level_counts), reverse=True)
    m = sum(counts[1:]) + int(n_fixed)
    copies = DENSE_COPIES[engine] + (int(distinct_counts) if engine == "bayes" else 0)
    numbers = copies * m * m + (2 * int(dominant_coupling) if engine == "binomial" else 0)
    return DenseEstimate(engine, m, BYTES_PER_NUMBER * numbers, FLOPS_PER_CUBE * float(m) ** 3, len(counts))


def machine_memory() -> int:
    """Physical memory of the machine in bytes (0 when the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 0


def default_max_memory() -> int:
    """Half of the machine's memory (4 GiB when the system does not say)."""
    total = machine_memory()
    return total // 2 if total > 0 else 4 << 30


def parse_memory(text, option: str = "--max-memory") -> int:
    """A size such as ``4G``, ``500M``, ``1.5GB`` or ``2000000000`` (bytes) as bytes; one error line otherwise."""
    if isinstance(text, bool):
        raise BayesreproError(f"{option} must be a size such as 4G or 500M, not {text!r}")
    if isinstance(text, (int, float)):
        value = float(text)
        unit = ""
    else:
        match = _SIZE.fullmatch(str(text))
        if not match:
            raise BayesreproError(f"{option} must be a size such as 4G, 500M or 2000000000 (bytes), not {str(text)!r}")
        value, unit = float(match.group(1)), match.group(2).lower()
    size = value * _UNIT[unit]
    if not 64 << 20 <= size <= 1 << 50:
        raise BayesreproError(f"{option} must be from 64M to 1024T, not {text!r}")
    return int(size)


def format_bytes(size: float) -> str:
    for unit, scale in (("TB", 1 << 40), ("GB", 1 << 30), ("MB", 1 << 20)):
        if size >= scale:
            return f"{size / scale:.1f} {unit}"
    return f"{size / (1 << 10):.1f} KB"


def resolve_limit(max_memory) -> int:
    """``max_memory`` (bytes, a size text or None for the default) as bytes."""
    return default_max_memory() if max_memory is None else parse_memory(max_memory)


def beyond_dense_path(estimate: DenseEstimate, max_memory) -> bool:
    """Would the dense path pass the memory limit or take minutes? (Then a path linear in the rows is taken.)"""
    return estimate.bytes > resolve_limit(max_memory) or estimate.seconds > DENSE_SECONDS_LIMIT


def require_within(estimate: DenseEstimate, max_memory, remedy: str = "") -> None:
    """Refuse, in one line, a dense block past the memory limit: the size needed, the limit, what to do."""
    limit = resolve_limit(max_memory)
    if estimate.bytes <= limit:
        return
    advice = remedy or ("fit fewer levels (aggregate the smaller factors, or --where a subset), raise --max-memory "
                        "if the machine has the memory, or, for an intercept-only formula with its rows in memory "
                        "(--engine memory), let 'bayesrepro vca' estimate the components by moments")
    raise BayesreproError(
        f"this design needs {estimate.describe()} in the {estimate.engine} engine, past the memory limit of "
        f"{format_bytes(limit)} (--max-memory); {advice}"
    )
