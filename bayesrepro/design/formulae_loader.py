"""formulae, imported without SciPy's interpolation package.

formulae imports ``scipy.interpolate`` for one function, ``splev``, which only
its ``bs()`` spline transform calls. Importing that package pulls in
``scipy.optimize``, ``scipy.spatial`` and ``scipy.fft``: about 0.25 s, a
quarter of a model command's whole run on a small file. While formulae is
imported, ``scipy.interpolate`` is stood in for by a module whose ``splev``
imports the real function when first called; the stand-in is removed as soon
as formulae is imported, so every later import of ``scipy.interpolate`` gets
SciPy's own package. A formulae that imports anything else from it is
imported as usual.

formulae imports ``scipy.sparse``, and with it (as every SciPy package) SciPy's
array-API layer, which clones NumPy's namespace: ``from numpy import *`` and a
look-up of every name ``dir(numpy)`` lists, which imports each submodule NumPy
loads lazily. Two of them no computation here uses: ``numpy.f2py`` (the Fortran
wrapper generator) and ``numpy.testing`` (with ``unittest``), 0.1 s of CPU,
more than a third of the start-up a small model command spends beyond NumPy and
pandas. While formulae is imported they are NumPy attributes that import the
real module when anything is first read from them; the attributes are removed
afterwards, so that ``numpy.testing`` is NumPy's own again at its first use.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
import types

INTERPOLATE = "scipy.interpolate"
ARRAY_API = "scipy._lib._array_api"
DEFERRED_NUMPY = ("f2py", "testing")


def load_formulae() -> types.ModuleType:
    """The formulae package, imported at most once, with ``scipy.interpolate`` deferred to the first spline."""
    if "formulae" in sys.modules or INTERPOLATE in sys.modules:
        import formulae

        return formulae
    import numpy  # noqa: F401  imported before the stand-in, so nothing but formulae can see it
    import pandas  # noqa: F401

    stand_in = types.ModuleType(INTERPOLATE)
    stand_in.splev = _splev
    sys.modules[INTERPOLATE] = stand_in
    try:
        with _numpy_submodules_deferred():
            import formulae
    except ImportError:
        formulae = None
    finally:
        if sys.modules.get(INTERPOLATE) is stand_in:
            del sys.modules[INTERPOLATE]
    if formulae is None:      # it needs more of scipy.interpolate than splev: import everything for real
        for name in [name for name in sys.modules if name == "formulae" or name.startswith("formulae.")]:
            del sys.modules[name]
        import formulae
    return formulae


@contextlib.contextmanager
def _numpy_submodules_deferred():
    """NumPy's ``DEFERRED_NUMPY`` submodules stood in for (``_Deferred``) while SciPy's array-API layer is first
    imported; nothing is stood in for where that layer or the submodule is imported already."""
    import numpy

    names = [] if ARRAY_API in sys.modules else [
        name for name in DEFERRED_NUMPY if f"numpy.{name}" not in sys.modules and name not in vars(numpy)]
    for name in names:
        setattr(numpy, name, _Deferred(f"numpy.{name}"))
    try:
        yield
    finally:
        for name in names:
            if isinstance(vars(numpy).get(name), _Deferred):
                delattr(numpy, name)


class _Deferred(types.ModuleType):
    """Stands for the module of its name: imports it when an attribute is first read, and answers from it."""

    def __getattr__(self, attribute):
        return getattr(importlib.import_module(self.__name__), attribute)


def _splev(*args, **kwargs):
    from scipy.interpolate import splev

    return splev(*args, **kwargs)
