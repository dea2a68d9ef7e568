"""Every command imports only what it uses: the modules a command loads, not its timings, are checked.

Importing the Bayesian stack (PyMC, PyTensor, Bambi, ArviZ with matplotlib) costs
seconds, numba about half a second; a REML command needs none of them, and the
posterior of the fast path needs numba and nutpie's compiled core alone.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DYESTUFF = str(ROOT / "tests" / "data" / "dyestuff.csv.gz")
PENICILLIN = str(ROOT / "tests" / "data" / "penicillin.csv.gz")
ONE_FACTOR = ["--formula", "Yield ~ 1 + (1|Batch)", "--categorical", "Batch"]
SCRIPT = """
import json, sys
from bayesrepro.cli import main
try:
    status = main(sys.argv[1:])
except SystemExit as stop:  # --help
    status = stop.code
print("MODULES " + json.dumps({"status": status, "modules": sorted(sys.modules)}))
"""
BAYESIAN = {"pymc", "pytensor", "bambi", "arviz", "xarray", "matplotlib"}
ENGINES = {"duckdb", "pyspark"}


def modules_of(*argv: str) -> tuple[int, set[str]]:
    """Exit status of ``bayesrepro argv`` in a fresh interpreter, and the top-level packages it imported."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", SCRIPT, *argv], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=900)
    line = next(line for line in result.stdout.splitlines() if line.startswith("MODULES "))
    payload = json.loads(line.removeprefix("MODULES "))
    return payload["status"], set(payload["modules"])


def top_level(modules: set[str]) -> set[str]:
    return {name.split(".")[0] for name in modules}


@pytest.mark.parametrize("command", ["vca", "glrt", "phi", "compare", "report", "plan", "import"])
def test_help_imports_no_numerical_library(command):
    status, modules = modules_of(command, "--help")
    assert status == 0
    assert not top_level(modules) & {"numpy", "pandas", "scipy", "numba", "nutpie", *BAYESIAN, *ENGINES}


PENICILLIN_GLRT = ["glrt", PENICILLIN, "--h0", "diameter ~ 1 + (1|plate)",
                   "--h1", "diameter ~ 1 + (1|plate) + (1|sample)", "--categorical", "plate,sample", "--json"]


@pytest.mark.parametrize("argv", [
    ["vca", DYESTUFF, *ONE_FACTOR, "--json"],
    [*PENICILLIN_GLRT, "--reference", "chi2"],
    PENICILLIN_GLRT,
], ids=["vca", "glrt-chi2", "glrt-auto"])
def test_reml_commands_import_no_bayesian_library_numba_engine_or_slow_scipy_package(argv):
    status, modules = modules_of(*argv)
    assert status == 0
    assert not top_level(modules) & {"numba", "nutpie", *BAYESIAN, *ENGINES}
    # scipy.interpolate (formulae's splines), scipy.optimize and scipy.stats cost ~0.4 s of the start-up
    assert not modules & {"scipy.interpolate", "scipy.optimize", "scipy.stats", "scipy.spatial"}


CBPP = str(ROOT / "tests" / "data" / "cbpp.csv.gz")
# modules of the binary models alone (their Laplace and quadrature criteria and start values)
BINARY_MODULES = {f"bayesrepro.frequentist.{name}" for name in
                  ("glmm", "glmm_start", "laplace", "quadrature", "sparse_laplace", "penalized_system")}


@pytest.mark.parametrize("method", ["reml", "ml"])
def test_a_gaussian_vca_imports_neither_scipy_special_nor_the_binary_models_nor_the_sparse_core(method):
    """A small Gaussian fit printed as tables needs none of them: the binary models' modules and the sparse core
    (SciPy's sparse solvers) cost tens of milliseconds of start-up, scipy.special as much again, numpy.f2py and
    numpy.testing 0.1 s. (--json needs scipy.special: it holds the p-values of the fixed effects, from the t and
    normal tails.)"""
    status, modules = modules_of("vca", DYESTUFF, *ONE_FACTOR, "--method", method)
    assert status == 0
    assert "scipy.special" not in modules
    assert not modules & BINARY_MODULES
    assert "bayesrepro.frequentist.sparse_deviance" not in modules
    assert "scipy.sparse.linalg" not in modules or _sparse_matrices_import_sparse_solvers()
    assert not modules & {"numpy.f2py", "numpy.testing"}   # SciPy's array-API layer without them (formulae_loader)


def _sparse_matrices_import_sparse_solvers() -> bool:
    """Whether this SciPy loads its sparse solvers with its sparse matrices (1.13 does, through scipy.sparse.csgraph;
    1.17 does not)."""
    code = "import sys, scipy.sparse; print('scipy.sparse.linalg' in sys.modules)"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          timeout=120).stdout.strip() == "True"


def test_a_binary_vca_imports_scipy_special_and_the_laplace_criterion():
    """The control of the test above: the names it looks for are those a binary fit imports."""
    status, modules = modules_of("vca", CBPP, "--formula", "p(incidence, size) ~ period + (1|herd)",
                                 "--categorical", "herd,period", "--json")
    assert status == 0
    assert {"scipy.special", "bayesrepro.frequentist.glmm", "bayesrepro.frequentist.laplace"} <= modules


def test_the_posterior_of_the_fast_path_needs_numba_and_nutpies_core_alone():
    status, modules = modules_of("phi", DYESTUFF, *ONE_FACTOR, "--json", "--seed", "1", "--draws", "100",
                                 "--tune", "100", "--chains", "2", "--allow-unconverged")
    assert status in (0, 3)  # 3: not converged, printed anyway
    assert {"numba", "nutpie._lib"} <= modules
    assert "nutpie" not in modules  # nutpie's package imports ArviZ and matplotlib
    assert not top_level(modules) & (BAYESIAN | ENGINES)


def test_the_sparse_laplace_fit_of_a_binary_crowd_imports_neither_scipy_optimize_numba_nor_the_bayesian_engine(tmp_path):
    """Its quasi-Newton search needs no L-BFGS-B where it ends inside the bounds, and its compiled selected
    inverse needs llvmlite alone, not numba."""
    from bayesrepro.simulate import simulate_crowd

    scores, _ = simulate_crowd(5000, 2500, 1200, binary=True, random_state=5)   # raters beyond a dense factor
    scores.to_csv(tmp_path / "crowd.csv", index=False)
    script = "from bayesrepro.frequentist import cell_products\ncell_products.COUPLING_LIMIT = 1000\n" + SCRIPT
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", script, "vca", str(tmp_path / "crowd.csv"), "--formula",
                             "score ~ 1 + (1|item) + (1|rater)", "--family", "bernoulli", "--json"],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    payload = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("MODULES "))
                         .removeprefix("MODULES "))
    fit = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("{")))
    assert payload["status"] == 0 and fit["approximation"] == "Laplace"
    modules = set(payload["modules"])
    assert "bayesrepro.frequentist.selected_inverse" in modules and "numba" not in modules   # the sparse path ran
    assert not modules & {"scipy.optimize", "bayesrepro.bayes"}
    assert not top_level(modules) & (BAYESIAN | ENGINES)


def test_the_sparse_core_fit_of_a_gaussian_crowd_imports_neither_scipy_optimize_nor_scipy_special(tmp_path):
    """Its Newton steps on central differences need no L-BFGS-B where they end inside the bounds, and the p-value
    of its fixed effect (no df for a fit this large) is a normal tail from the standard library."""
    from bayesrepro.simulate import simulate_crowd

    scores, _ = simulate_crowd(6000, 3000, 1500, skew=1.0, random_state=8)
    scores.to_csv(tmp_path / "crowd.csv", index=False)
    # the sparse core, items eliminated and SuperLU on the raters, and no Satterthwaite df (as for 8,000 raters)
    script = ("from bayesrepro.frequentist import block_factor, general_lmm, reml_derivatives\n"
              "general_lmm.DENSE_SCHUR_LEVELS = 1000\nblock_factor.COUPLING_LIMIT = 0\n"
              "reml_derivatives.DENSE_LIMIT = 1000\n" + SCRIPT)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", script, "vca", str(tmp_path / "crowd.csv"), "--formula",
                             "score ~ 1 + (1|item) + (1|rater)", "--json"],
                            capture_output=True, text=True, env=env, cwd=ROOT, timeout=900)
    payload = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("MODULES "))
                         .removeprefix("MODULES "))
    fit = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("{")))
    assert payload["status"] == 0 and fit["converged"]
    assert any("sparse core" in note for note in fit["notes"])
    assert fit["fixed_effects"][0]["df"] is None and 0.0 < fit["fixed_effects"][0]["p"] < 1.0
    modules = set(payload["modules"])
    assert "bayesrepro.frequentist.stencil_newton" in modules and "scipy.sparse.linalg" in modules
    assert not modules & {"scipy.optimize", "scipy.special", "scipy.stats"}
