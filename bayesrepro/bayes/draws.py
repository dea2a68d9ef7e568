"""Posterior draws as NumPy arrays; an ArviZ InferenceData is built from them only when asked for.

A Bayesian fit's summaries, diagnostics and the command line read the arrays
directly: building an InferenceData costs about 0.1 s per fit and importing
ArviZ seconds, more than the sampling of a small model. ``Draws.idata`` builds
the InferenceData on first use (every variable, drawn-on-demand ones included)
and keeps it, so changes a user makes to it stay.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Iterator

import numpy as np

# draws × levels of one block of level effects read at a time (8 MB; a block's summary needs ~15 times that)
LEVEL_BLOCK_VALUES = 1 << 20


@dataclass
class Draws:
    """Every posterior variable as an array (chain, draw, *shape), labelled as InferenceData labels it.

    ``dims[name]`` names the dimensions after (chain, draw), each a key of
    ``coords``; ``stats`` holds the sampler's statistics per draw (``diverging``…);
    ``attrs[name]`` the attributes of a variable (φ's object of measurement).
    A variable added with ``add_deferred`` is computed on its first use. Level effects can also be read a block
    of levels at a time (``level_blocks``) without holding draws × levels: from a source registered with
    ``add_level_blocks`` (which need not be a variable at all), else from the variable's array.
    """

    arrays: dict[str, np.ndarray]
    dims: dict[str, tuple[str, ...]] = field(default_factory=dict)
    coords: dict[str, list] = field(default_factory=dict)
    stats: dict[str, np.ndarray] = field(default_factory=dict)
    attrs: dict[str, dict] = field(default_factory=dict)
    source: object = None                     # the sampler's own InferenceData (PyMC, Bambi), if any
    _deferred: dict[str, Callable[[], np.ndarray]] = field(default_factory=dict, repr=False)
    _blocks: dict[str, Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]] = field(default_factory=dict, repr=False)
    _idata: object = field(default=None, repr=False)

    @classmethod
    def from_idata(cls, idata) -> "Draws":
        """The posterior and sampler statistics of an InferenceData (kept as ``source`` for ``idata``)."""
        post = idata.posterior
        arrays = {name: np.asarray(post[name].values) for name in post.data_vars}
        dims = {name: tuple(post[name].dims[2:]) for name in post.data_vars}
        coords = {dim: list(post[dim].values) for names in dims.values() for dim in names}
        stats = {}
        if "sample_stats" in idata.groups():
            stats = {name: np.asarray(idata.sample_stats[name].values) for name in idata.sample_stats.data_vars}
        attrs = {name: dict(post[name].attrs) for name in post.data_vars if post[name].attrs}
        return cls(arrays, dims, coords, stats, attrs, source=idata)

    def __getitem__(self, name: str) -> np.ndarray:
        if name not in self.arrays and name in self._deferred:
            self.arrays[name] = self._deferred.pop(name)()
        return self.arrays[name]

    def __contains__(self, name: str) -> bool:
        return name in self.arrays or name in self._deferred

    @property
    def names(self) -> list[str]:
        """Every variable, in the order added."""
        labelled = [name for name in self.dims if name in self]
        return labelled + [name for name in [*self.arrays, *self._deferred] if name not in self.dims]

    @property
    def shape(self) -> tuple[int, int]:
        """(chains, draws per chain)."""
        return next(iter(self.arrays.values())).shape[:2]

    def add(self, name: str, values, dims: tuple[str, ...] = (), coords: dict | None = None,
            attrs: dict | None = None) -> None:
        self.arrays[name] = np.asarray(values)
        self._label(name, dims, coords, attrs)

    def add_deferred(self, name: str, compute: Callable[[], np.ndarray], dims: tuple[str, ...] = (),
                     coords: dict | None = None, attrs: dict | None = None) -> None:
        """A variable computed by ``compute()`` when first read (large arrays few users look at, or costly ones
        that not every answer reads)."""
        self._deferred[name] = compute
        self._label(name, dims, coords, attrs)

    def add_level_blocks(self, name: str, blocks: Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]],
                         dims: tuple[str, ...] = (), coords: dict | None = None) -> None:
        """Register ``blocks()``, yielding (level indices, draws (chain, draw, levels, ...)) that cover every level
        of ``name`` once, the same draws on every call; ``dims`` and ``coords`` label a name that is no variable."""
        self._blocks[name] = blocks
        if name not in self.dims:
            self.dims[name] = tuple(dims)
            self.coords.update(coords or {})

    def has_levels(self, name: str) -> bool:
        """Whether level effects ``name`` can be read (as a variable or by blocks)."""
        return name in self or name in self._blocks

    def level_blocks(self, name: str, block_values: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """The draws of ``name`` (chain, draw, level, ...) about ``block_values`` values at a time: its array
        when it is held, else its registered source."""
        if name in self.arrays or name not in self._blocks:
            values = self[name]
            size = max(1, block_values // max(1, values.size // max(values.shape[2], 1)))
            for start in range(0, values.shape[2], size):
                stop = min(start + size, values.shape[2])
                yield np.arange(start, stop), values[:, :, start:stop]
            return
        yield from self._blocks[name]()

    def labels(self, name: str) -> list:
        """The labels of the one dimension of a vector variable (e.g. the components of ``variance``)."""
        (dim,) = self.dims[name]
        return list(self.coords[dim])

    @property
    def idata(self):
        """An ``arviz.InferenceData`` of every variable and the sampler's statistics (built once)."""
        if self._idata is None:
            self._idata = self._to_idata()
        return self._idata

    def _label(self, name, dims, coords, attrs) -> None:
        self.dims[name] = tuple(dims)
        self.coords.update(coords or {})
        if attrs:
            self.attrs[name] = dict(attrs)
        self._idata = None

    def _to_idata(self):
        import arviz as az

        names = self.names
        if self.source is not None:
            idata = self.source
            new = [name for name in names if name not in idata.posterior.data_vars]
            extra = az.from_dict(posterior={name: self[name] for name in new},
                                 dims={name: list(self.dims[name]) for name in new},
                                 coords=self._coords_of(new)) if new else None
            if extra is not None:
                idata.posterior = idata.posterior.assign(extra.posterior.data_vars)
        else:
            idata = az.from_dict(posterior={name: self[name] for name in names},
                                 sample_stats=self.stats or None,
                                 dims={name: list(self.dims[name]) for name in names},
                                 coords=self._coords_of(names))
        for name, attrs in self.attrs.items():
            idata.posterior[name].attrs.update(attrs)
        return idata

    def _coords_of(self, names) -> dict:
        return {dim: self.coords[dim] for name in names for dim in self.dims[name]}


def as_draws(posterior) -> Draws:
    """``posterior`` itself if it is a ``Draws``, else the draws of an ArviZ InferenceData."""
    return posterior if isinstance(posterior, Draws) else Draws.from_idata(posterior)
