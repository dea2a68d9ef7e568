"""NUTS over a compiled log density: nutpie's sampler calls C entry points, the Python interpreter is not involved.

A ``CompiledDensity`` is any log density with its gradient over an
unconstrained vector, given as two C functions (transforms and their
Jacobians are the density's business) and the one data array both read:

    logp(dim, x, grad, logp, data) -> int   0 = fine, > 0 = reject the point, < 0 = stop
    expand(dim, n_out, x, out, data) -> int  what one draw stores, ``variables`` in order

nutpie (Rust) runs the chains in threads, each calling the C functions without
the GIL. The C-pointer model class is nutpie's own (``nutpie._lib.PyMcModel``,
the one ``nutpie.compile_pymc_model`` builds for numba-compiled PyMC models);
the version range in pyproject.toml pins its interface.
"""

from __future__ import annotations

import functools
import sys
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..runtime import numerical_work
from .sampling import SamplingSettings, interrupts_raised, require_complete

PROGRESS_LINE_EVERY_MS = 2000  # progress written as lines when stderr is not a terminal


@dataclass(frozen=True)
class CompiledDensity:
    n_dim: int
    logp: object                                  # numba CFunc (or anything with ``.address``)
    expand: object
    data: np.ndarray                              # read-only input of both functions
    variables: list[tuple[str, tuple[int, ...]]]  # stored per draw: name, shape
    initial_point: Callable[[np.random.Generator], np.ndarray]
    dims: dict = field(default_factory=dict)      # variable name -> dimension names
    coords: dict = field(default_factory=dict)    # dimension name -> labels
    low_rank_mass_matrix: bool = False            # nutpie's low-rank-corrected mass matrix (posterior correlations)
    keep_alive: tuple = ()                        # arrays ``data`` points into, held as long as the density


def sample_density(density: CompiledDensity, settings: SamplingSettings):
    """Sample with nutpie's NUTS; an ``arviz.InferenceData`` with every draw asked for, or KeyboardInterrupt.

    With ``settings.progress``: nutpie's progress bar in a terminal or notebook, else a line on stderr
    every two seconds.
    """
    import nutpie
    from nutpie.sample import in_notebook

    lines = settings.progress and not sys.stderr.isatty() and not in_notebook()
    with numerical_work(), interrupts_raised():
        idata = nutpie.sample(
            _nutpie_model_class()(dims=density.dims, density=density, progress_lines=lines),
            draws=settings.draws,
            tune=settings.tune,
            chains=settings.chains,
            cores=settings.n_cores,
            seed=settings.seed,
            target_accept=settings.target_accept,
            progress_bar=settings.progress and not lines,
            save_warmup=False,
            low_rank_modified_mass_matrix=density.low_rank_mass_matrix,
        )
    require_complete(idata, settings)
    return idata


@functools.cache
def _nutpie_model_class():
    from nutpie import _lib
    from nutpie.sample import CompiledModel

    @dataclass(frozen=True)
    class NutpieModel(CompiledModel):
        """nutpie's view of a ``CompiledDensity``."""

        density: CompiledDensity
        progress_lines: bool = False

        @property
        def n_dim(self) -> int:
            return self.density.n_dim

        @property
        def shapes(self) -> dict:
            return dict(self.density.variables)

        @property
        def coords(self) -> dict:
            return self.density.coords

        def _make_sampler(self, settings, init_mean, cores, progress_type, store):
            if self.progress_lines:
                progress_type = _lib.ProgressType.template_callback(
                    PROGRESS_LINE_EVERY_MS, "{{ total_finished_draws }}/{{ total_draws }}", cores, _progress_line(),
                )
            return _lib.PySampler.from_pymc(settings, cores, self._make_model(init_mean), progress_type, store)

        def _make_model(self, init_mean):
            density = self.density
            address = density.data.ctypes.data
            n_expanded = sum(int(np.prod(shape)) for _, shape in density.variables)
            names = [name for name, _ in density.variables]
            shapes = [shape for _, shape in density.variables]
            dim_sizes = {name: len(labels) for name, labels in density.coords.items()}
            return _lib.PyMcModel(
                _lib.LogpFunc(density.logp.address, address, density),
                _lib.ExpandFunc(density.n_dim, n_expanded, density.expand.address, address, density),
                _lib.PyVariable.new_variables(names, ["float64"] * len(names), shapes, dim_sizes, density.dims),
                density.n_dim,
                dim_sizes,
                dict(density.coords),
                lambda seed: density.initial_point(np.random.default_rng(seed)),
                None,
            )

    return NutpieModel


def _progress_line():
    start = time.perf_counter()

    def write(draws: str) -> None:
        print(f"bayesrepro: sampling: {draws} draws, {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True)

    return write
