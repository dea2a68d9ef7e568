"""The compiled-density driver: nutpie's NUTS on numba functions samples what it is given, reproducibly,
and an interrupt never passes for a finished run."""

import os
import signal
import threading

import numba
import numpy as np
import pytest

from bayesrepro.bayes.compiled_density import CompiledDensity, Variable, pack
from bayesrepro.bayes.compiled_sampler import _c_functions, sample_compiled
from bayesrepro.bayes.sampling import SamplingSettings

COVARIANCE = np.array([[1.0, 1.8, 0.0], [1.8, 4.0, 0.0], [0.0, 0.0, 0.25]])  # correlation 0.9 between the first two


@numba.njit(nogil=True)
def gaussian_logp(x, floats, ints):
    precision = floats[: 9].reshape(3, 3)
    gradient = -precision @ x
    return 0.5 * (x @ gradient), gradient


@numba.njit(nogil=True)
def identity_expand(x, floats, ints, out):
    out[:] = x


@numba.njit(nogil=True)
def slow_logp(x, floats, ints):
    total = 0.0
    for i in range(200_000):  # about a millisecond per evaluation
        total += np.sin(i * 1e-9)
    return -0.5 * (x @ x) + total * 0.0, -x


def gaussian_density(logp=gaussian_logp):
    floats, ints = pack([np.linalg.inv(COVARIANCE)], [])
    return CompiledDensity(logp, identity_expand, floats, ints, 3, (Variable("x", ("k",)),), {"k": ["a", "b", "c"]})


def test_a_correlated_gaussian_is_sampled_with_its_covariance():
    posterior = sample_compiled(gaussian_density(), SamplingSettings(seed=3, draws=2000))
    draws = posterior["x"].reshape(-1, 3)
    assert posterior.shape == (4, 2000)
    # 8,000 draws with ESS in the thousands: means within 0.1 SD, covariances within 10 %
    np.testing.assert_allclose(draws.mean(axis=0) / np.sqrt(np.diag(COVARIANCE)), 0.0, atol=0.1)
    np.testing.assert_allclose(np.cov(draws.T), COVARIANCE, rtol=0.1, atol=0.02)
    assert int(posterior.stats["diverging"].sum()) == 0


def test_the_same_seed_gives_the_same_draws():
    settings = SamplingSettings(seed=9, draws=200, tune=200)
    first = sample_compiled(gaussian_density(), settings)["x"]
    second = sample_compiled(gaussian_density(), settings)["x"]
    np.testing.assert_array_equal(first, second)


def test_packed_arrays_keep_their_positions():
    floats, ints = pack([np.arange(3.0), np.array([7.0])], [np.array([4, 5]), np.array([6])])
    assert (ints[0], ints[1]) == (2, 2)
    assert list(floats[ints[2] : ints[3]]) == [0.0, 1.0, 2.0] and list(floats[ints[4] : ints[5]]) == [7.0]
    assert list(ints[ints[6] : ints[7]]) == [4, 5] and list(ints[ints[8] : ints[9]]) == [6]


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT to its own process")
def test_an_interrupt_is_raised_not_returned_as_a_short_posterior():
    density = gaussian_density(slow_logp)
    _c_functions(slow_logp, identity_expand)  # compiled first, so the interrupt reaches the sampler
    timer = threading.Timer(2.0, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            sample_compiled(density, SamplingSettings(seed=1, draws=100_000, tune=1000, chains=2))
    finally:
        timer.cancel()


class _StoppableSampler:
    """nutpie's sampler, recording whether it was stopped."""

    def __init__(self, sampler):
        self.sampler, self.aborted = sampler, False

    def wait(self, timeout):
        return self.sampler.wait(timeout)

    def abort(self):
        self.aborted = True
        return self.sampler.abort()


@pytest.mark.skipif(os.name != "posix", reason="sends SIGINT to its own process")
def test_an_interrupt_as_the_chains_start_stops_them_before_it_is_raised(monkeypatch):
    from types import SimpleNamespace

    from bayesrepro.bayes import nuts

    lib = nuts.nutpie_lib()
    started = []

    def start_then_interrupt(*args):   # Ctrl-C arrives once the threads run, before the caller holds their handle
        started.append(_StoppableSampler(lib.PySampler.from_pymc(*args)))
        os.kill(os.getpid(), signal.SIGINT)
        return started[-1]

    patched = SimpleNamespace(**{name: getattr(lib, name) for name in dir(lib) if not name.startswith("__")})
    patched.PySampler = SimpleNamespace(from_pymc=start_then_interrupt)
    monkeypatch.setattr(nuts, "nutpie_lib", lambda: patched)
    try:
        with pytest.raises(KeyboardInterrupt):
            sample_compiled(gaussian_density(slow_logp), SamplingSettings(seed=1, draws=100_000, tune=1000, chains=2))
        assert started and started[0].aborted
    finally:
        for sampler in started:
            sampler.sampler.abort()
