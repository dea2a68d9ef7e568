"""R-hat and bulk/tail ESS without ArviZ: equal to ArviZ's own figures to rounding, whatever the draws."""

import arviz as az
import numpy as np
import pytest

from bayesrepro.bayes.convergence import ess_bulk, ess_tail, r_hat


def _ar1(rng, chains, draws, rho):
    x = np.empty((chains, draws))
    x[:, 0] = rng.normal(size=chains)
    for t in range(1, draws):
        x[:, t] = rho * x[:, t - 1] + np.sqrt(1 - rho**2) * rng.normal(size=chains)
    return x


def _cases():
    rng = np.random.default_rng(2021)
    return {
        "independent": rng.normal(size=(4, 1000)),
        "autocorrelated": _ar1(rng, 4, 1000, 0.9),
        "antithetic": _ar1(rng, 4, 500, -0.6),                      # negative autocorrelation: ESS above the draws
        "random walk": np.cumsum(rng.normal(size=(4, 1001)), axis=1),  # odd length: the middle draw is left out
        "chains apart": rng.normal(size=(4, 500)) + 0.3 * np.arange(4)[:, None],
        "heavy tails": rng.standard_t(1.5, size=(4, 400)),
        "ties": rng.integers(0, 5, size=(4, 300)).astype(float),
        "two short chains": rng.normal(size=(2, 7)),
        "one chain": rng.normal(size=(1, 200)),
        "constant": np.ones((4, 100)),
        "a NaN": np.where(np.arange(400).reshape(4, 100) == 17, np.nan, 1.0) * rng.normal(size=(4, 100)),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_each_figure_equals_arvizs(name):
    draws = _cases()[name]
    ours = [r_hat(draws), ess_bulk(draws), ess_tail(draws)]
    theirs = [float(az.rhat(draws, method="rank")), float(az.ess(draws, method="bulk")),
              float(az.ess(draws, method="tail"))]
    # the same float64 arithmetic in another order (FFT lengths, variance formulas): equal to ~1e-13
    np.testing.assert_allclose(ours, theirs, rtol=1e-10, equal_nan=True)


def test_a_chain_stuck_elsewhere_is_caught():
    rng = np.random.default_rng(3)
    draws = rng.normal(size=(4, 1000))
    draws[3] += 1.0
    assert r_hat(draws) > 1.05 and r_hat(draws[:3]) < 1.01
