"""A package's names loaded from their modules when first read (PEP 562), so that importing it imports none."""

import importlib


def lazy_names(package: str, exports: dict[str, str], namespace: dict):
    """The ``__getattr__`` and ``__dir__`` of ``package``.

    Parameters
    ----------
    package : str
        The package's name (its ``__name__``).
    exports : dict of str to str
        Each name and the module that defines it, absolute or relative to ``package`` (a leading dot).
    namespace : dict
        The package's ``globals()``: a name read once is kept there, so it is loaded once.

    Returns
    -------
    tuple of callables
        ``__getattr__`` and ``__dir__`` for the package's module.
    """

    def __getattr__(name: str):
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(exports[name], package), name)
        namespace[name] = value
        return value

    def __dir__():
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__
