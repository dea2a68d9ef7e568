"""Compiling a numba function with numba's on-disk cache, and without it where the cache cannot be used.

Kept apart from the sampler's modules, so that the frequentist fits that compile a kernel of their own do not
import the Bayesian engine.
"""

from __future__ import annotations

import warnings
from typing import Callable, TypeVar

T = TypeVar("T")


def compile_cached(compile: Callable[[bool], T], what: str = "the compiled posterior density") -> T:
    """``compile(cache=True)``; where numba's cache cannot be used, ``compile(cache=False)`` and a warning.

    numba's cache fails when no location is writable ("no locator available") or a
    cache file cannot be read or written; an error of the code itself raises again
    from the second call.
    """
    try:
        return compile(True)
    except Exception as error:
        from .errors import BayesreproWarning

        compiled = compile(False)
        warnings.warn(
            f"{what} is not cached ({error}); every process compiles it again. "
            "Set NUMBA_CACHE_DIR to a writable directory to keep it.",
            BayesreproWarning,
        )
        return compiled


def keyed(factory: Callable[[str], T], *modules) -> T:
    """``factory(key)``: a function to compile whose closure holds ``key``, a digest of the source files of
    ``factory`` and of ``modules`` (the modules whose numba functions it calls).

    numba's cache tells versions of a function apart by its own file's time stamp, its bytecode and the values
    it closes over, not by the functions it calls: the digest in the closure makes an edit of a callee's file
    compile the caller again instead of loading stale machine code. Where a file cannot be read (code not
    loaded from files), the key is unique to the process, so nothing stale is ever loaded.
    """
    import hashlib
    import inspect
    import sys
    import uuid
    from pathlib import Path

    digest = hashlib.sha256()
    for module in (sys.modules[factory.__module__], *modules):
        path = inspect.getsourcefile(module) if hasattr(module, "__file__") else None
        if path is None or not Path(path).is_file():
            return factory(uuid.uuid4().hex)
        digest.update(Path(path).read_bytes())
    return factory(digest.hexdigest())


def fill_cache_aside(module: str, function: str):
    """``module.function()`` started in a second Python process, to compile into numba's cache meanwhile.

    numba compiles one function at a time in a process (its compiler lock), so a thread cannot overlap two
    compilations; a second process can. The caller compiles something else, waits for the returned
    ``subprocess.Popen`` and then loads the function from the cache (where the second process failed, it
    compiles it itself: the cache only ever saves time). None where no process could be started.
    """
    import os
    import subprocess
    import sys

    if not sys.executable:
        return None
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in sys.path if path))  # the same modules
    try:
        return subprocess.Popen([sys.executable, "-c", f"import {module}; {module}.{function}()"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                env=env)
    except OSError:
        return None
