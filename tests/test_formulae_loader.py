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
