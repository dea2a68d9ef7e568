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
"""

from __future__ import annotations

import sys
import types

INTERPOLATE = "scipy.interpolate"


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


def _splev(*args, **kwargs):
    from scipy.interpolate import splev

    return splev(*args, **kwargs)
