"""The Gaussian fast path's compiled functions made ready before sampling: on a first run, in two processes.

The first run after an installation compiles the marginal likelihood (``gaussian_density.compiled_marginal``),
the sampler's C entry points around ``gaussian_logp`` and ``gaussian_expand``, and the effect draws
(``compiled_small_block_draws``): seconds of one core, and numba compiles one function at a time in a process
(its compiler lock). The marginal likelihood, the largest, depends on none of the others (the entry points call
it through the address packed with the data), so where numba's cache does not hold it yet, a second process
compiles the entry points into the cache while this one compiles the marginal likelihood; this one then loads
them. The effect draws share the marginal likelihood's kernels, already compiled here: this process compiles
them after sampling (in a second process they took as long as the entry points). Once the cache holds the
marginal likelihood, no process is started.
"""

from __future__ import annotations

import functools
import subprocess

from ..compiled_cache import fill_cache_aside
from .compiled_density import compile_notice
from .gaussian_density import compiled_marginal, gaussian_expand, gaussian_logp, marginal_in_cache

# seconds the second process is waited for once the marginal likelihood is compiled; it takes seconds, minutes
# only on a machine loaded many times over
AFTER_MARGINAL_WAIT = 300


@functools.cache
def marginal_address() -> int:
    """The address of the compiled marginal likelihood; on a first run the rest is compiled meanwhile."""
    with compile_notice():
        aside = fill_cache_aside(__name__, "compile_entry_points") if marginal_in_cache() is False else None
        try:
            address = compiled_marginal().address
            if aside is not None:
                aside.wait(AFTER_MARGINAL_WAIT)
        except subprocess.TimeoutExpired:  # the rest is compiled (or loaded) here as it is needed
            pass
        finally:
            if aside is not None and aside.poll() is None:
                aside.kill()
                aside.wait()
        return address


def compile_entry_points() -> None:
    """The sampler's entry points, compiled into numba's cache (the second process's work)."""
    from .compiled_sampler import _c_functions

    _c_functions(gaussian_logp, gaussian_expand)
