"""NUTS over a compiled log density: nutpie's sampler calls C entry points, the Python interpreter is not involved.

``compiled_sampler`` hands over a ``compiled_density.CompiledDensity`` with the two C functions it
wrapped around the density's numba functions and the one data array both read:

    logp(dim, x, grad, logp, data) -> int   0 = fine, > 0 = reject the point, < 0 = stop
    expand(dim, n_out, x, out, data) -> int  what one draw stores, the density's ``variables`` in order

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
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from ..progress import in_notebook, sampling_lines
from ..runtime import numerical_work
from .draws import Draws
from .sampling import SamplingSettings, interrupts_held, interrupts_raised, require_complete

if TYPE_CHECKING:
    from .compiled_density import CompiledDensity

PROGRESS_BAR_EVERY_MS = 100    # nutpie's own bar in a terminal
PROGRESS_LINE_EVERY_MS = 2000  # progress written as lines when stderr is not a terminal
INIT_JITTER = 1.0  # chains start at the density's point plus Uniform(-1, 1) on every coordinate, as PyMC's jitter


def sample_density(density: CompiledDensity, c_logp, c_expand, data: np.ndarray, settings: SamplingSettings) -> Draws:
    """Sample ``density`` with nutpie's NUTS through ``c_logp`` and ``c_expand`` (numba CFuncs) reading ``data``
    (held as long as the density); the draws after tuning, every one asked for, or KeyboardInterrupt.

    Progress (``settings.show_progress``): nutpie's bar in a terminal, a line in a
    notebook, else a line on stderr every two seconds.
    """
    lib = nutpie_lib()
    nuts = (lib.PyNutsSettings.LowRank if density.low_rank_mass_matrix else lib.PyNutsSettings.Diag)(settings.seed)
    nuts.num_tune, nuts.num_draws, nuts.num_chains = settings.tune, settings.draws, settings.chains
    nuts.target_accept = settings.target_accept
    cores = settings.n_cores
    stopped = threading.Event()   # set when the run is stopped: no progress line may follow the interruption's
    with numerical_work(), interrupts_raised():
        sampler = None
        try:
            with interrupts_held():   # the threads run from here on: the handle must be kept to stop them
                sampler = lib.PySampler.from_pymc(nuts, cores, _model(lib, density, c_logp, c_expand, data),
                                                  _progress(lib, settings, cores, stopped), lib.PyStorage.arrow())
            sampler.wait(None)
        except BaseException:
            stopped.set()
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


def _model(lib, density: CompiledDensity, c_logp, c_expand, data: np.ndarray):
    address = data.ctypes.data
    keep_alive = (density, data)  # the arrays ``data`` points into belong to the density
    names = [v.name for v in density.variables]
    shapes = [density.shape(v) for v in density.variables]
    dims = {v.name: v.dims for v in density.variables}
    dim_sizes = {name: len(labels) for name, labels in density.coords.items()}
    start = density.initial_point if density.initial_point is not None else np.zeros(density.n_dim)

    def initial_point(seed) -> np.ndarray:
        jitter = np.random.default_rng(seed).uniform(-INIT_JITTER, INIT_JITTER, density.n_dim)
        return np.asarray(start + jitter, dtype=np.float64)

    return lib.PyMcModel(
        lib.LogpFunc(c_logp.address, address, keep_alive),
        lib.ExpandFunc(density.n_dim, density.n_expanded, c_expand.address, address, keep_alive),
        lib.PyVariable.new_variables(names, ["float64"] * len(names), shapes, dim_sizes, dims),
        density.n_dim,
        dim_sizes,
        dict(density.coords),
        initial_point,
        None,
    )


def _draws(draw_batches, stat_batches, density: CompiledDensity) -> Draws:
    """The draws after tuning of every chain, as arrays (chain, draw, *shape), and the sampler's statistics."""
    from arro3.core import DataType

    shapes = {v.name: density.shape(v) for v in density.variables}
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
    dims = {v.name: v.dims for v in density.variables}
    return Draws(arrays, dims, dict(density.coords), stats)


def _after_tuning(batch, name: str, shape: tuple[int, ...], tuning: int) -> np.ndarray:
    from arro3.core import list_flatten

    rows = batch.num_rows - tuning
    values = batch.column(name).slice(tuning, rows)
    if shape:
        values = list_flatten(values)
    return np.asarray(values.to_numpy()).reshape(rows, *shape)


def _progress(lib, settings: SamplingSettings, cores: int, stopped: threading.Event):
    """nutpie's progress: its bar in a terminal, else a line (notebook, stderr) from its threads' callback, which
    writes nothing once ``stopped`` is set (a callback of the aborted threads may still come)."""
    if not settings.show_progress:
        return lib.ProgressType.none()
    if sys.stderr.isatty():
        return lib.ProgressType.indicatif(PROGRESS_BAR_EVERY_MS)
    template = "{{ total_finished_draws }}/{{ total_draws }}"
    if in_notebook():
        return lib.ProgressType.template_callback(PROGRESS_BAR_EVERY_MS * 5, template, cores,
                                                  _until(stopped, _notebook_line()))
    return lib.ProgressType.template_callback(PROGRESS_LINE_EVERY_MS, template, cores,
                                              _until(stopped, sampling_lines()))


def _until(stopped: threading.Event, write):
    def write_while_running(draws: str) -> None:
        if not stopped.is_set():
            write(draws)

    return write_while_running


def _notebook_line():
    from IPython.display import Pretty, display

    start = time.perf_counter()
    handle = display(Pretty("sampling: starting"), display_id=True)

    def update(draws: str) -> None:
        handle.update(Pretty(f"sampling: {draws} draws, {time.perf_counter() - start:.0f} s"))

    return update
