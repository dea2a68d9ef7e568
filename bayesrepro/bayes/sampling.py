"""How posteriors are sampled: one settings object, validated before any work, and one guarded NUTS run.

Every run is reproducible from its seed and runs under ``runtime.numerical_work``
(one BLAS thread per process; chains run in separate processes). PyMC ends a
run quietly when Ctrl-C arrives and returns the draws made so far; a truncated
posterior must never pass for a finished one, so an interrupt is re-raised
after PyMC returns and a run with fewer draws than asked is refused.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
from dataclasses import dataclass

from .. import limits
from ..choices import SAMPLERS
from ..errors import BayesreproError
from ..runtime import numerical_work

CROSSED_GIBBS = "crossed-gibbs"   # the crossed designs' Gibbs sampler: chosen automatically, not a --backend


@dataclass(frozen=True)
class SamplingSettings:
    """NUTS settings shared by every Bayesian fit: ``SamplingSettings(draws=2000, seed=1)``.

    ``progress``: True shows the sampler's progress on stderr (a line every two
    seconds when stderr is not a terminal), False never; None (the default)
    shows it in a terminal or a notebook.
    """

    draws: int = 1000
    tune: int = 1000
    chains: int = 4
    seed: int | None = None
    cores: int | None = None
    sampler: str = "auto"
    target_accept: float = 0.95
    progress: bool | None = None  # None: shown where someone watches (a terminal's stderr, a notebook)
    allow_unconverged: bool = False

    def __post_init__(self):
        for limit in (limits.DRAWS, limits.TUNE, limits.CHAINS):
            _checked_int(limit, getattr(self, limit.option.removeprefix("--")))
        if self.seed is not None:
            _checked_int(limits.SEED, self.seed)
        limits.check_product(self.chains * (self.tune + self.draws), limits.MAX_NUTS_STEPS,
                             "--chains x (--tune + --draws) NUTS steps", "lower --draws, --tune or --chains")
        if self.cores is not None and (not _is_int(self.cores) or self.cores < 1):
            raise BayesreproError(f"--cores must be a whole number of at least 1, got {self.cores!r}")
        if self.sampler not in SAMPLERS:
            raise BayesreproError(f"--sampler '{self.sampler}' is unknown; choose one of: {', '.join(SAMPLERS)}")
        if not 0.5 <= self.target_accept < 1:
            raise BayesreproError(f"--target-accept must lie in [0.5, 1), got {self.target_accept!r}")

    @classmethod
    def of(cls, settings: "SamplingSettings | None" = None, **overrides) -> "SamplingSettings":
        """``settings`` (default settings if None) with keyword overrides; unknown names are refused."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            raise BayesreproError(
                f"unknown sampling setting '{unknown[0]}'; the settings are: {', '.join(sorted(known))}"
            )
        return dataclasses.replace(settings or cls(), **overrides)

    def sampler_or(self, default: str) -> str:
        """The sampler asked for, or ``default`` (the model's own choice) for "auto"."""
        return default if self.sampler == "auto" else self.sampler

    @property
    def n_cores(self) -> int:
        return self.cores if self.cores is not None else min(self.chains, 2)

    @property
    def show_progress(self) -> bool:
        from ..progress import shown_by_default

        return self.progress if self.progress is not None else shown_by_default()


def run_nuts(model, settings: SamplingSettings):
    """Sample a PyMC model with NUTS; returns an ``arviz.InferenceData`` with every draw asked for."""
    import pymc as pm

    with numerical_work(), interrupts_raised(), library_progress(settings) as progressbar:
        idata = pm.sample(
            draws=settings.draws,
            tune=settings.tune,
            chains=settings.chains,
            cores=settings.n_cores,
            random_seed=settings.seed,
            model=model,
            nuts_sampler=settings.sampler_or("pymc"),
            target_accept=settings.target_accept,
            progressbar=progressbar,
            compute_convergence_checks=False,
            mp_ctx="fork",  # children inherit the BLAS thread limit and warning filters
        )
    require_complete(sampled_shape(idata), settings)
    return idata


@contextlib.contextmanager
def library_progress(settings: SamplingSettings):
    """The ``progressbar`` flag for PyMC's and Bambi's samplers inside the block: their own bar where someone
    watches (a terminal, a notebook); on a pipe, asked for with --progress, the package's lines instead, as the
    compiled sampler prints them (a library's redrawn table would fill a log with its frames)."""
    from ..progress import sampling_lines, shown_by_default

    if not settings.show_progress or shown_by_default():
        yield settings.show_progress
        return
    total, write = settings.chains * (settings.tune + settings.draws), sampling_lines()
    write(f"0/{total}")
    yield False
    write(f"{total}/{total}")


@contextlib.contextmanager
def interrupts_held():
    """A Ctrl-C inside the block is raised when the block ends, not in the middle of it.

    Starting native sampler threads is one such block: an interrupt raised
    between the start and the assignment of its handle would leave threads
    running that nobody can stop, while the interpreter shuts down under them.
    """
    held = []
    try:
        previous = signal.signal(signal.SIGINT, lambda signum, frame: held.append(signum))
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupts_raised():
    """Re-raise a Ctrl-C that a library caught and swallowed inside the block."""
    interrupted = []

    def handler(signum, frame):
        interrupted.append(signum)
        raise KeyboardInterrupt

    try:
        previous = signal.signal(signal.SIGINT, handler)
    except ValueError:  # not the main thread: signals cannot be handled here
        yield
        return
    try:
        yield
    except Exception:
        # PyMC may fail on what an interrupt left ("Not enough samples to build a trace"): the interrupt wins
        if interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        signal.signal(signal.SIGINT, previous)
    if interrupted:
        raise KeyboardInterrupt


def require_complete(shape: tuple[int, int], settings: SamplingSettings) -> None:
    """Refuse a posterior of ``shape`` (chains, draws) smaller than asked for (a run stopped early)."""
    if tuple(shape) != (settings.chains, settings.draws):
        raise KeyboardInterrupt


def check_posterior_size(settings: SamplingSettings, values_per_draw: int) -> None:
    """Refuse, before sampling, a posterior too large for memory: chains x draws x the values stored per draw."""
    limits.check_product(settings.chains * settings.draws * values_per_draw, limits.MAX_POSTERIOR_VALUES,
                         f"--chains x --draws x the {values_per_draw:,} values stored per draw (level effects "
                         "included)", "lower --draws or --chains", bound="that fit in memory")


def _checked_int(limit: limits.Count, value) -> None:
    """A setting given as a whole number within its range (a text such as "1000" is refused: settings are numbers)."""
    if not _is_int(value):
        raise BayesreproError(limit.refusal(value))
    limit.check(value)


def sampled_shape(idata) -> tuple[int, int]:
    """(chains, draws) of an InferenceData's posterior."""
    sizes = idata.posterior.sizes
    return sizes.get("chain", 0), sizes.get("draw", 0)


def _is_int(value) -> bool:
    import numpy as np

    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
