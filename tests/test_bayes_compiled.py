"""The compiled density of the fast path: PyMC's model of the same posterior, finite differences, compile once."""

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from bayesrepro.bayes import fit_bayes
from bayesrepro.bayes.gaussian_model import build_pymc_model, gaussian_density
from bayesrepro.bayes.marginal import marginal_stats
from bayesrepro.bayes.priors import default_priors
from bayesrepro.datasets import load_dataset
from bayesrepro.design import build_model_frame
from conftest import gaussian_cases

ROOT = Path(__file__).resolve().parents[1]


def _log_density(x, density):
    """The compiled log density's value and gradient at x."""
    value, grad = density.value_and_gradient(x)
    return float(value), grad


def _expanded(x, density):
    out = np.empty(density.n_expanded)
    density.expand(np.ascontiguousarray(x, dtype=float), density.floats, density.ints, out)
    return out


def _setup(case, family):
    formula, data = gaussian_cases()[case]
    frame = build_model_frame(formula, data)
    priors = default_priors(frame, family)
    stats = marginal_stats(frame, priors)
    return stats, priors, gaussian_density(stats, priors)


def _points(n_dim, seed, k=4):
    rng = np.random.default_rng(seed)  # both sides of every transform's bend, SDs from about 1e-3 to 5
    return [rng.normal(-1.0, 2.0, n_dim) for _ in range(k)]


@pytest.mark.parametrize("family", ["scaled", "r2d2"])
@pytest.mark.parametrize("case", (0, 2))   # the G-study and the unbalanced design
def test_compiled_density_equals_the_log_density_of_pymcs_model(case, family):
    stats, priors, density = _setup(case, family)
    model = build_pymc_model(stats, priors)
    logp = model.compile_logp()  # priors, transforms' Jacobians and the marginal likelihood, as PyMC states them
    components = [*stats.group_names, "Residual"]
    names = {"Residual": "sigma"} | {g: f"1|{g}_sigma" for g in stats.group_names}
    for x in _points(len(components), case):
        jacobian = 0.0  # log |∂(PyMC's coordinates) / ∂x|
        if family == "r2d2":
            point = {"total_sigma_log__": x[0], "shares_simplex__": x[1:]}
        else:  # factors: σ = s softplus(x), PyMC's coordinate log σ; the residual: log σ in both
            softplus = np.log1p(np.exp(x[:-1]))
            scales = np.array([priors.group_sigma[g] for g in stats.group_names])
            log_sd = np.concatenate([np.log(scales * softplus), x[-1:]])
            jacobian = float(np.sum(np.log(1 / (1 + np.exp(-x[:-1])) / softplus)))
            point = {f"{names[c]}_log__": log_sd[k] for k, c in enumerate(components)}
        value, _ = _log_density(x, density)
        # the same float64 expression evaluated in two orders: agreement to rounding
        assert value == pytest.approx(float(logp(point)) + jacobian, rel=1e-10, abs=1e-8)


@pytest.mark.parametrize("family", ["scaled", "r2d2"])
@pytest.mark.parametrize("case", (0, 2))   # the G-study and the unbalanced design
def test_gradient_equals_central_finite_differences(case, family):
    stats, priors, density = _setup(case, family)
    step = 1e-5
    for x in _points(len(stats.group_names) + 1, 10 + case):
        _, grad = _log_density(x, density)
        numeric = np.array([
            (_log_density(x + step * e, density)[0] - _log_density(x - step * e, density)[0])
            / (2 * step)
            for e in np.eye(len(x))
        ])
        # central differences: O(step²) truncation plus ~1e-16·|logp|/step rounding, both far below 1e-6
        assert np.allclose(grad, numeric, rtol=1e-6, atol=1e-6), (grad, numeric)


def test_each_draw_stores_the_sds_and_for_r2d2_the_total_and_the_shares():
    for family in ("scaled", "r2d2"):
        stats, priors, density = _setup(0, family)
        n = len(stats.group_names) + 1
        x = _points(n, 5, 1)[0]
        assert density.n_expanded == (n if family == "scaled" else 2 * n + 1)
        out = _expanded(x, density)
        if family == "scaled":
            scales = np.array([priors.group_sigma[g] for g in stats.group_names])
            assert np.allclose(out, np.concatenate([scales * np.log1p(np.exp(x[:-1])), np.exp(x[-1:])]))
        else:
            zeta = np.concatenate([x[1:], [-x[1:].sum()]])
            shares = np.exp(zeta) / np.exp(zeta).sum()
            assert np.allclose(out[:n], np.exp(x[0]) * np.sqrt(shares))
            assert out[n] == pytest.approx(np.exp(x[0]))
            assert np.allclose(out[n + 1 :], shares)


def test_refits_with_other_data_priors_and_formulas_compile_nothing():
    from numba.core import event

    ter = load_dataset("kreutzer_ter")
    common = dict(draws=100, tune=100, chains=2, seed=1, allow_unconverged=True)
    fit_bayes("ter ~ system + (1|sentence_id)", ter.iloc[:600], **common)  # compiles or loads once
    with event.install_recorder("numba:compile") as recorder:
        fit_bayes("ter ~ system + (1|sentence_id)", ter.iloc[600:1500], prior="bambi", **common)
        fit_bayes("ter ~ 1 + (1|sentence_id) + (1|system)", ter.iloc[:900], prior="r2d2", **common)
    assert recorder.buffer == []


def test_ctrl_c_while_sampling_ends_the_run_with_keyboard_interrupt():
    script = textwrap.dedent("""
        import os, signal, threading, time
        from bayesrepro.bayes import fit_bayes
        from bayesrepro.bayes.compiled_sampler import _c_functions
        from bayesrepro.bayes.gaussian_density import gaussian_expand, gaussian_logp
        from bayesrepro.datasets import load_dataset
        import nutpie  # imported before the clock starts, as the entry points are
        data = load_dataset("kreutzer_ter").iloc[:900]
        _c_functions(gaussian_logp, gaussian_expand)
        threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT)).start()
        start = time.perf_counter()
        try:
            fit = fit_bayes("ter ~ system + (1|sentence_id)", data, draws=100_000, tune=100_000, chains=2, seed=1)
        except KeyboardInterrupt:
            print(f"interrupted after {time.perf_counter() - start:.1f} s")
        else:
            print("finished", fit.idata.posterior.sizes)
    """)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr
    line = result.stdout.strip().splitlines()[-1]
    assert line.startswith("interrupted after"), line
    assert float(line.split()[2]) < 10  # 2 × 200,000 steps take minutes; the interrupt ended them at once


@pytest.mark.slow
def test_an_unwritable_install_caches_in_the_user_cache_dir_and_works_with_no_cache_at_all(tmp_path):
    package = tmp_path / "install" / "bayesrepro"
    shutil.copytree(ROOT / "bayesrepro", package, ignore=shutil.ignore_patterns("__pycache__"))
    # a file where the cache directory would go: no directory can be made there, whoever runs the test
    (package / "bayes" / "__pycache__").write_text("")
    script = textwrap.dedent("""
        from numba.core import event
        from bayesrepro.bayes.compiled_sampler import _c_functions
        from bayesrepro.bayes.gaussian_density import gaussian_expand, gaussian_logp
        with event.install_recorder("numba:compile") as recorder:
            assert _c_functions(gaussian_logp, gaussian_expand)[0].address > 0
        print(len(recorder.buffer))
    """)

    def compilations(cache_home) -> int:
        env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
        env |= {"PYTHONPATH": str(package.parent), "XDG_CACHE_HOME": str(cache_home)}
        result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=900,
                                cwd=tmp_path)  # not the checkout, whose package would come first on sys.path
        assert result.returncode == 0, result.stderr
        warnings.append(result.stderr)
        return int(result.stdout.split()[-1])

    warnings = []
    user_cache = tmp_path / "cache"
    assert compilations(user_cache) > 0
    assert list((user_cache / "numba").rglob("*.nbi")), "nothing cached in the user cache directory"
    assert compilations(user_cache) == 0  # a second process loads the machine code
    for index in (user_cache / "numba").rglob("*.nbi"):
        index.write_bytes(b"not a cache index")
    assert compilations(user_cache) > 0  # an unreadable cache index: compiled again
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    (blocked / "numba").write_text("")  # no cache location at all: compiled in memory, still works
    assert compilations(blocked) > 0
    assert "not cached" in warnings[-1] and "NUMBA_CACHE_DIR" in warnings[-1]


def test_prior_sensitivity_refits_share_one_compiled_density():
    from numba.core import event

    from bayesrepro.bayes.sensitivity import prior_sensitivity

    ter = load_dataset("kreutzer_ter").iloc[:900]
    fit_bayes("ter ~ system + (1|sentence_id)", ter.iloc[:300], draws=100, tune=100, chains=2, seed=3,
              allow_unconverged=True)  # compiles or loads the density once
    with event.install_recorder("numba:compile") as recorder:
        table = prior_sensitivity("ter ~ system + (1|sentence_id)", ter, draws=200, tune=200, chains=2, seed=3,
                                  allow_unconverged=True)
    assert recorder.buffer == []
    assert list(table.index) == [0.5, 1.0, 2.0] and table["phi"].between(0, 1).all()


def test_pymcs_own_sampler_still_samples_the_fast_path_when_asked():
    ter = load_dataset("kreutzer_ter").iloc[:900]
    common = dict(draws=200, tune=200, chains=2, seed=4, allow_unconverged=True, effects=False)
    pymc = fit_bayes("ter ~ system + (1|sentence_id)", ter, sampler="pymc", **common)
    compiled = fit_bayes("ter ~ system + (1|sentence_id)", ter, **common)
    for fit in (pymc, compiled):
        assert {"sigma", "1|sentence_id_sigma", "phi"} <= set(fit.idata.posterior.data_vars)
        assert fit.idata.posterior.sizes["draw"] == 200
