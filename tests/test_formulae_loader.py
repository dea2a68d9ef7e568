"""formulae imported with scipy.interpolate deferred: splines still evaluate, and SciPy's package stays SciPy's."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_fresh(code: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_splines_built_through_the_deferred_import_equal_scipys():
    out = run_fresh("""
import sys
import numpy as np, pandas as pd
from bayesrepro.design.formulae_loader import load_formulae
formulae = load_formulae()
assert "scipy.interpolate" not in sys.modules
data = pd.DataFrame({"y": np.arange(40.0), "x": np.linspace(0, 1, 40) ** 2})
deferred = np.asarray(formulae.design_matrices("y ~ bs(x, df=5)", data).common)
import scipy.interpolate
assert scipy.interpolate.splev.__module__.startswith("scipy.interpolate"), scipy.interpolate.splev
import formulae.transforms
formulae.transforms.splev = scipy.interpolate.splev
direct = np.asarray(formulae.design_matrices("y ~ bs(x, df=5)", data).common)
print(deferred.shape, float(np.max(np.abs(deferred - direct))))
""")
    assert out == "(40, 6) 0.0"


def test_a_formulae_that_needs_more_of_scipy_interpolate_is_imported_for_real():
    # as if formulae imported a second name: the stand-in steps aside and the real package is imported
    out = run_fresh("""
import sys, types, importlib.abc, importlib.machinery
import numpy, pandas
from bayesrepro.design import formulae_loader

class MoreOfInterpolate(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "formulae.transforms" and not getattr(self, "busy", False):
            self.busy = True
            try:
                spec = importlib.util.find_spec(name)
            finally:
                self.busy = False
            original = spec.loader.exec_module
            def exec_module(module):
                from scipy.interpolate import BSpline  # noqa: F401
                original(module)
            spec.loader.exec_module = exec_module
            return spec
        return None

import importlib.util
sys.meta_path.insert(0, MoreOfInterpolate())
formulae = formulae_loader.load_formulae()
import scipy.interpolate
print(type(sys.modules["scipy.interpolate"].BSpline).__name__, hasattr(formulae, "design_matrices"))
""")
    assert out == "type True"


def test_scipys_array_api_layer_is_imported_without_numpy_f2py_and_testing_which_stay_numpys_own():
    out = run_fresh("""
import sys
import numpy as np
from bayesrepro.design.formulae_loader import load_formulae
load_formulae()
assert "scipy._lib._array_api" in sys.modules        # formulae imported SciPy's array-API layer ...
print(sorted(m for m in ("numpy.f2py", "numpy.testing", "unittest") if m in sys.modules))   # ... without these
assert "testing" not in vars(np) and "f2py" not in vars(np)   # the stand-ins are gone from NumPy
np.testing.assert_allclose(1.0, 1.0)                  # NumPy's own lazy import, at first use
assert np.testing is sys.modules["numpy.testing"] and np.testing.__file__.endswith("__init__.py")
import scipy._lib.array_api_compat.numpy as xp        # SciPy's clone of the namespace reads through to the module
assert xp.testing.assert_allclose is np.testing.assert_allclose
from scipy._lib._array_api import array_namespace
import scipy.sparse
print(float(array_namespace(np.ones(3)).sum(np.ones(3))), scipy.sparse.eye(2).nnz)
""")
    assert out == "[]\n3.0 2"


def test_numpy_submodules_imported_before_formulae_are_left_as_they_are():
    out = run_fresh("""
import sys
import numpy as np, numpy.testing
from bayesrepro.design.formulae_loader import load_formulae
load_formulae()
import scipy._lib.array_api_compat.numpy as xp
print(xp.testing is np.testing, "numpy.f2py" in sys.modules)
""")
    assert out == "True False"
