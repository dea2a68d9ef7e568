"""The Laplace criterion with the items collapsed by profile and total successes (``collapsed_laplace``) against the
general one on the cells (``laplace.LaplaceDeviance``): the same value and gradient wherever they are evaluated."""

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.frequentist.collapsed_laplace import ItemProfiles
from bayesrepro.frequentist.laplace import LaplaceDeviance
from bayesrepro.links import get_link


def leaderboard(systems, items, missing=0.0, trials=1, seed=0):
    """0/1 scores (``trials`` rows per cell) of ``systems`` on ``items``, a share ``missing`` of the cells absent."""
    rng = np.random.default_rng(seed)
    s, i = (a.ravel() for a in np.meshgrid(np.arange(systems), np.arange(items), indexing="ij"))
    kept = rng.random(s.size) >= missing
    s, i = np.repeat(s[kept], trials), np.repeat(i[kept], trials)
    eta = np.linspace(-1.0, 1.0, systems)[s] + rng.normal(0.0, 1.2, items)[i]
    return pd.DataFrame({"system": [f"s{k}" for k in s], "item": [f"q{k}" for k in i],
                         "y": (rng.random(s.size) < 1.0 / (1.0 + np.exp(-eta))).astype(int)})


@pytest.mark.parametrize("systems, items, missing, trials", [(6, 40, 0.0, 1), (8, 60, 0.3, 1), (5, 30, 0.2, 3)])
def test_value_and_gradient_equal_the_general_criterions(systems, items, missing, trials):
    cells = br.Model("y ~ system + (1|item)", leaderboard(systems, items, missing, trials)).frame.binomial()
    profiles = ItemProfiles(cells)
    if missing:
        assert len(profiles.profile_start) > 2   # items scored on different systems: several profiles
    rng = np.random.default_rng(systems)
    for theta in [0.0, 0.3, 1.2, 2.5]:
        params = np.r_[theta, rng.normal(0.0, 0.7, cells.n_fixed)]
        # a fresh general criterion each time: it starts its search for the modes where the last one ended
        general = LaplaceDeviance(cells, get_link("logit"))
        expected, expected_gradient = general.value_and_gradient(params)
        value, gradient = profiles.criterion(cells.successes, general.constant).value_and_gradient(params)
        assert value == pytest.approx(expected, rel=1e-12)
        assert gradient == pytest.approx(expected_gradient, rel=1e-9, abs=1e-9 * np.abs(expected_gradient).max())


def test_items_with_equal_profiles_and_totals_share_one_mode():
    cells = br.Model("y ~ system + (1|item)", leaderboard(10, 500)).frame.binomial()
    criterion = ItemProfiles(cells).criterion(cells.successes)
    assert len(criterion.s) <= 11                 # one profile: at most one mode per total from 0 to 10
    assert criterion.count.sum() == 500
