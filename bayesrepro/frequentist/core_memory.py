"""The memory of a fit on the sparse core, estimated from its random-effects design before any factorisation.

Where the term with most columns is eliminated blockwise (``block_factor.py``)
the dense arrays are known from the column counts alone. Otherwise SuperLU
factorises what is left after the largest random-intercept factor: its factor
is bounded by the dense matrix of those columns, kept as L and U.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..design.memory_estimate import BYTES_PER_NUMBER, format_bytes, require_within
from ..design.random_design import RandomDesign
from .block_factor import block_bytes
from .sparse_deviance import block_lead

SPARSE_FACTOR_COPIES = 2     # SuperLU keeps L and U
REMEDY = ("fit fewer levels (--where a subset), drop a slope or a term, or raise --max-memory if the machine has "
          "the memory")


@dataclass(frozen=True)
class CoreEstimate:
    """What the sparse core would allocate for a design; ``engine`` and ``describe`` as ``DenseEstimate``'s."""

    bytes: int
    what: str
    engine: str = "gaussian"

    def describe(self) -> str:
        return f"{self.what}, about {format_bytes(self.bytes)}"


def core_estimate(design: RandomDesign) -> CoreEstimate:
    lead = block_lead(design)
    if lead is not None:
        columns = lead.n_levels * lead.nc
        rest = design.q - columns
        return CoreEstimate(block_bytes(lead.n_levels, lead.nc, rest),
                            f"the sparse core's {lead.n_levels:,} blocks of {lead.group} and a dense {rest:,} x "
                            f"{rest:,} Schur complement")
    diagonal = max((b.n_levels for b in design.blocks if b.nc == 1), default=0)
    rest = design.q - diagonal
    return CoreEstimate(SPARSE_FACTOR_COPIES * BYTES_PER_NUMBER * rest * rest,
                        f"a sparse factor of up to {rest:,} x {rest:,} on the sparse core")


def require_core_memory(design: RandomDesign, max_memory) -> None:
    """Refuse, in one line, a design whose sparse-core fit would pass the memory limit (``--max-memory``)."""
    require_within(core_estimate(design), max_memory, REMEDY)
