"""NUTS over a compiled log density: nutpie's sampler calls C entry points, the Python interpreter is not involved.

A ``CompiledDensity`` is any log density with its gradient over an
unconstrained vector, given as two C functions (transforms and their
Jacobians are the density's business) and the one data array both read:

    logp(dim, x, grad, logp, data) -> int   0 = fine, > 0 = reject the point, < 0 = stop
    expand(dim, n_out, x, out, data) -> int  what one draw stores, ``variables`` in order

nutpie (Rust) runs the chains in threads, each calling the C functions without
the GIL. This module drives nutpie's compiled core, ``nutpie._lib``, itself
(its C-pointer model class ``PyMcModel`` is the one ``nutpie.compile_pymc_model``
builds for numba-compiled PyMC models) and reads the draws from the Arrow
batches it returns: nutpie's Python package imports ArviZ and matplotlib (2–4 s)
to convert them into an InferenceData, which ``draws.Draws`` builds only when
asked. The version range in pyproject.toml pins this interface.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ..progress import in_notebook, sampling_lines
from ..runtime import numerical_work
from .draws import Draws
from .sampling import SamplingSettings, interrupts_held, interrupts_raised, require_complete

PROGRESS_BAR_EVERY_MS = 100    # nutpie's own bar in a terminal
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


def sample_density(density: CompiledDensity, settings: SamplingSettings) -> Draws:
    """Sample with nutpie's NUTS; the draws after tuning, every one asked for, or KeyboardInterrupt.

    Progress (``settings.show_progress``): nutpie's bar in a terminal, a line in a
    notebook, else a line on stderr every two seconds.
    """
    lib = nutpie_lib()
    nuts = (lib.PyNutsSettings.LowRank if density.low_rank_mass_matrix else lib.PyNutsSettings.Diag)(settings.seed)
    nuts.num_tune, nuts.num_draws, nuts.num_chains = settings.tune, settings.draws, settings.chains
    nuts.target_accept = settings.target_accept
    cores = settings.n_cores
    with numerical_work(), interrupts_raised():
        sampler = None
        try:
            with interrupts_held():   # the threads run from here on: the handle must be kept to stop them
                sampler = lib.PySampler.from_pymc(nuts, cores, _model(lib, density),
                                                  _progress(lib, settings, cores), lib.PyStorage.arrow())
            sampler.wait(None)
        except BaseException:
            if sampler is not None:
                sampler.abort()
            raise
        draw_batches, stat_batches = sampler.take_results().get_arrow_trace()
    draws = _draws(draw_batches, stat_batches, density)
    require_complete(draws.shape, settings)
    return draws


def nutpie_lib():
    """nutpie's compiled core, loaded without running its package's ``__init__`` (which imports ArviZ).

    Registered as ``nutpie._lib``: a later ``import nutpie`` (Bambi's nutpie
    sampler) finds it and uses the same module.
    """
    if "nutpie._lib" in sys.modules:
        return sys.modules["nutpie._lib"]
    package = importlib.util.find_spec("nutpie")
    if package is None or not package.submodule_search_locations:
        raise ImportError("nutpie is not installed; it samples the fast path (pip install nutpie)")
    directory = Path(next(iter(package.submodule_search_locations)))
    path = next((str(p) for p in directory.iterdir() if p.name.startswith("_lib.") and p.suffix in (".so", ".pyd")),
                None)
    if path is None:
        raise ImportError(f"nutpie's compiled core is missing from {directory}")
    loader = importlib.machinery.ExtensionFileLoader("nutpie._lib", path)
    spec = importlib.util.spec_from_file_location("nutpie._lib", path, loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules["nutpie._lib"] = module
    try:
        loader.exec_module(module)
    except BaseException:
        del sys.modules["nutpie._lib"]
        raise
    return module


def _model(lib, density: CompiledDensity):
    address = density.data.ctypes.data
    n_expanded = sum(int(np.prod(shape)) for _, shape in density.variables)
    names = [name for name, _ in density.variables]
    shapes = [shape for _, shape in density.variables]
    dim_sizes = {name: len(labels) for name, labels in density.coords.items()}
    return lib.PyMcModel(
        lib.LogpFunc(density.logp.address, address, density),
        lib.ExpandFunc(density.n_dim, n_expanded, density.expand.address, address, density),
        lib.PyVariable.new_variables(names, ["float64"] * len(names), shapes, dim_sizes, density.dims),
        density.n_dim,
        dim_sizes,
        dict(density.coords),
        lambda seed: density.initial_point(np.random.default_rng(seed)),
        None,
    )


def _draws(draw_batches, stat_batches, density: CompiledDensity) -> Draws:
    """The draws after tuning of every chain, as arrays (chain, draw, *shape), and the sampler's statistics."""
    from arro3.core import DataType

    shapes = dict(density.variables)
    chains, statistics = [], []
    for batch, stats in zip(draw_batches, stat_batches):
        tuning = int(np.count_nonzero(stats.column("tuning").to_numpy()))
        chains.append({name: _after_tuning(batch, name, shape, tuning) for name, shape in shapes.items()})
        # one number per draw; nutpie's vectors (gradients, mass matrices...) are empty unless asked for
        scalar = [field.name for field in stats.schema if field.name not in ("chain", "draw")
                  and (DataType.is_primitive(field.type) or DataType.is_boolean(field.type))]
        statistics.append({name: _after_tuning(stats, name, (), tuning) for name in scalar})
    if len({len(chain[name]) for chain in chains for name in shapes}) != 1:
        raise KeyboardInterrupt  # chains of different lengths: the run was stopped
    arrays = {name: np.stack([chain[name] for chain in chains]) for name in shapes}
    stats = {name: np.stack([chain[name] for chain in statistics]) for name in statistics[0]}
    dims = {name: tuple(density.dims.get(name, ())) for name in shapes}
    return Draws(arrays, dims, dict(density.coords), stats)


def _after_tuning(batch, name: str, shape: tuple[int, ...], tuning: int) -> np.ndarray:
    from arro3.core import list_flatten

    rows = batch.num_rows - tuning
    values = batch.column(name).slice(tuning, rows)
    if shape:
        values = list_flatten(values)
    return np.asarray(values.to_numpy()).reshape(rows, *shape)


def _progress(lib, settings: SamplingSettings, cores: int):
    if not settings.show_progress:
        return lib.ProgressType.none()
    if sys.stderr.isatty():
        return lib.ProgressType.indicatif(PROGRESS_BAR_EVERY_MS)
    template = "{{ total_finished_draws }}/{{ total_draws }}"
    if in_notebook():
        return lib.ProgressType.template_callback(PROGRESS_BAR_EVERY_MS * 5, template, cores, _notebook_line())
    return lib.ProgressType.template_callback(PROGRESS_LINE_EVERY_MS, template, cores, sampling_lines())


def _notebook_line():
    from IPython.display import Pretty, display

    start = time.perf_counter()
    handle = display(Pretty("sampling: starting"), display_id=True)

    def update(draws: str) -> None:
        handle.update(Pretty(f"sampling: {draws} draws, {time.perf_counter() - start:.0f} s"))

    return update
