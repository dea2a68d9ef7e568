"""Compilation is paid once: refits of other data and structures, and the several fits of one analysis, compile
nothing; a new process loads the machine code from numba's cache; whoever waits for a compilation is told why."""

import logging
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest
from numba.core import event

from bayesrepro.bayes import compiled_density, fit_bayes
from bayesrepro.bayes.compiled_density import CompiledDensity, Variable, pack
from bayesrepro.compare import compare
from bayesrepro.datasets import load_dataset
from bayesrepro.simulate import binary_grid

ROOT = Path(__file__).resolve().parents[1]
QUICK = dict(draws=100, tune=100, chains=2, seed=1, allow_unconverged=True)


def _grid(prompts: int, random_state: int):
    data = binary_grid(items=40, systems={"A": 0.0, "B": 0.4}, seeds=3, prompts=prompts, random_state=random_state)
    data["seed"] = data["system"].astype(str) + data["seed"].astype(str)
    return data


def test_a_second_binary_fit_of_other_data_and_another_structure_compiles_nothing():
    fit_bayes("correct ~ system + (1|item) + (1|seed)", _grid(1, 1), **QUICK)  # compiles or loads once
    with event.install_recorder("numba:compile") as recorder:
        fit_bayes("correct ~ system + (1|item) + (1|seed) + (1|prompt)", _grid(3, 2), **QUICK)
    assert recorder.buffer == []


def _compiled_functions(recorder) -> set[str]:
    return {f"{e.data['dispatcher'].py_func.__module__}.{e.data['dispatcher'].py_func.__qualname__}"
            for _, e in recorder.buffer if e.is_start}


def test_compare_compiles_nothing_after_a_first_fit():
    ter = load_dataset("kreutzer_ter")
    formula = "ter ~ system + (1|sentence_id)"
    fit_bayes(formula, ter.iloc[:600], **QUICK)
    with event.install_recorder("numba:compile") as recorder:  # H1 and H0 fits, their effects, LOO
        result = compare(formula, ter.iloc[600:1500], n_boot=100, **QUICK)
    assert "loo_elpd_diff" in result.tests[0]
    # ArviZ jit-compiles a helper of its own (a variance) the first time LOO runs in a process
    assert not {name for name in _compiled_functions(recorder) if name.startswith("bayesrepro")}
    with event.install_recorder("numba:compile") as recorder:
        compare(formula, ter.iloc[1500:2400], n_boot=100, **QUICK)
    assert recorder.buffer == []


@numba.njit
def _first_use_logp(x, floats, ints):
    return -0.5 * (x @ x), -x


@numba.njit
def _first_use_expand(x, floats, ints, out):
    out[:] = x


def test_the_first_use_of_a_compiled_density_is_logged_whether_or_not_progress_is_on(monkeypatch, caplog, capfd):
    monkeypatch.setattr(compiled_density, "COMPILE_NOTE_AFTER", 0.0)  # whatever the wait, as if it were long
    floats, ints = pack([np.zeros(1)], [])
    density = CompiledDensity(_first_use_logp, _first_use_expand, floats, ints, 2, (Variable("x", ("k",)),),
                              {"k": ["a", "b"]})
    with caplog.at_level(logging.INFO, logger="bayesrepro"):
        value, gradient = density.value_and_gradient(np.ones(2))  # its first call: compiled here
        assert value == -1.0 and list(gradient) == [-1.0, -1.0]
        assert [(r.name, r.levelno) for r in caplog.records if "loading the compiled posterior density" in r.message] \
            == [("bayesrepro", logging.INFO)]
        assert capfd.readouterr().err == ""  # a log record: a Python caller's stderr stays clean
        caplog.clear()
        density.value_and_gradient(np.ones(2))
        assert not caplog.records  # compiled: nothing to announce


def _run(script: str, cache: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env |= {"PYTHONPATH": str(ROOT), "NUMBA_CACHE_DIR": str(cache)}
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], capture_output=True, text=True, env=env,
                            cwd=ROOT, timeout=1800)
    assert result.returncode == 0, result.stderr
    return result


@pytest.mark.slow
def test_a_new_process_loads_the_binary_path_from_the_cache(tmp_path):
    script = """
        import logging
        from numba.core import event
        from bayesrepro.bayes import fit_bayes
        logging.basicConfig(level=logging.INFO)   # the note is a log record
        from bayesrepro.simulate import binary_grid
        data = binary_grid(items=30, systems={"A": 0.0, "B": 0.4}, seeds=2, prompts=2, random_state=1)
        with event.install_recorder("numba:compile") as recorder:
            fit_bayes("correct ~ system + (1|item) + (1|prompt)", data, draws=100, tune=100, chains=2, seed=1,
                      allow_unconverged=True, progress=False)
        print(len(recorder.buffer))
    """
    first = _run(script, tmp_path)
    assert int(first.stdout.split()[-1]) > 0
    assert "loading the compiled posterior density" in first.stderr  # progress off, the compilation announced
    assert int(_run(script, tmp_path).stdout.split()[-1]) == 0


@pytest.mark.slow
def test_a_first_gaussian_fit_compiles_the_entry_points_in_a_second_process_and_a_later_one_starts_none(tmp_path):
    script = """
        from numba.core import event
        from bayesrepro.bayes import gaussian_compile
        from bayesrepro.bayes.compiled_sampler import _c_functions
        from bayesrepro.bayes.gaussian_density import gaussian_expand, gaussian_logp
        started = []
        start = gaussian_compile.fill_cache_aside
        gaussian_compile.fill_cache_aside = lambda *args: started.append(start(*args)) or started[-1]
        assert gaussian_compile.marginal_address() > 0
        with event.install_recorder("numba:compile") as recorder:   # loaded from what the second process cached
            _c_functions(gaussian_logp, gaussian_expand)
        print([process.returncode for process in started], len(recorder.buffer))
    """
    assert _run(script, tmp_path).stdout.split()[-2:] == ["[0]", "0"]
    assert _run(script, tmp_path).stdout.split()[-2:] == ["[]", "0"]  # all cached: no second process


@pytest.mark.slow
def test_a_changed_model_file_is_compiled_again_not_loaded_stale(tmp_path):
    model = tmp_path / "model" / "changing_model.py"
    model.parent.mkdir()
    source = textwrap.dedent("""
        import numba
        @numba.njit(cache=True)
        def logp(x, floats, ints):
            return -0.5 * (x @ x) * SCALE, -x * SCALE
        @numba.njit(cache=True)
        def expand(x, floats, ints, out):
            out[:] = x
        SCALE = {scale}
    """)
    script = f"""
        import ctypes, sys
        import numpy as np
        sys.path.insert(0, {str(model.parent)!r})
        from changing_model import logp, expand
        from bayesrepro.bayes.compiled_sampler import _c_functions
        c_logp, _ = _c_functions(logp, expand)
        x, gradient, value = np.ones(2), np.empty(2), np.empty(1)
        header = np.zeros(4, dtype=np.uint64)
        pointer = lambda a: a.ctypes.data_as(ctypes.POINTER(ctypes.c_double))
        assert c_logp.ctypes(2, pointer(x), pointer(gradient), pointer(value), header.ctypes.data) == 0
        print(value[0])
    """
    model.write_text(source.format(scale=1.0))
    assert float(_run(script, tmp_path / "cache").stdout.split()[-1]) == -1.0
    model.write_text(source.format(scale=3.25))
    assert float(_run(script, tmp_path / "cache").stdout.split()[-1]) == -3.25
