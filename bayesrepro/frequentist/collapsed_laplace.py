"""The Laplace criterion of a logit model with one grouping factor, its items collapsed by profile and total successes.

With one grouping factor (the items) and the logit link, an item's scores enter its part of the Laplace
criterion only through Σ_j y_j η_j, which adds up over the items per fixed-design row, and its total successes
s: its conditional mode û solves θ (s − Σ_j n_j μ(η_j + θ u)) = u over its *profile*, the fixed-design rows
it was scored in with their trials. Items with the same profile and total share û and their whole term, so on
a complete leaderboard of 50 systems × 2,000 items the criterion takes 51 one-dimensional modes over 50 rows
instead of a penalized IRLS over 100,000 cells. It is ``laplace.LaplaceDeviance``'s criterion (lme4's Laplace
deviance, spherical effects u, b = θ u) and gradient, as tests/test_collapsed_laplace.py checks.

Per item, with η_j = x_j'β, t_j = η_j + θ û, w_j = μ(t_j)(1 − μ(t_j)), D = 1 + θ² Σ_j n_j w_j:

    f = −2 [s θ û − Σ_j n_j log(1 + e^t_j)] + û² + log D,

and the criterion is Σ_items f − 2 Σ_cells y x'β + constant. The penalized part is stationary in û, so the
gradient is its explicit part plus that of log D through û, with dû/dη_j = −θ n_j w_j / D and
dû/dθ = (r − θ û Σ n w) / D, r = s − Σ n μ = û / θ (also at θ = 0, where û = 0).
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit

from ..errors import NotConvergedError

MODE_STEPS = 100          # safeguarded Newton steps for every û at once
MODE_TOLERANCE = 1e-13    # relative step below which û has converged


class ItemProfiles:
    """The profiles of a model's items (one grouping factor): computed once, shared by every replicate.

    ``cells`` is a ``design.BinomialCells`` with one grouping factor.
    """

    def __init__(self, cells):
        if len(cells.codes) != 1:
            raise ValueError("items collapse by profile only with one grouping factor")
        self.X_fixed = np.asarray(cells.X_fixed, dtype=float)
        self.fixed_cell = np.asarray(cells.fixed_cell, dtype=np.int64)
        self.item = np.asarray(cells.codes[0], dtype=np.int64)
        self.n_items = len(cells.levels[0])
        order = np.lexsort((self.fixed_cell, self.item))
        rows, trials, items = self.fixed_cell[order], np.asarray(cells.trials, dtype=float)[order], self.item[order]
        bounds = np.flatnonzero(np.diff(items)) + 1
        starts, stops = np.r_[0, bounds], np.r_[bounds, len(order)]
        self.present = items[starts]                      # the items with any cell, ascending
        keys: dict[bytes, int] = {}
        self.profile_of = np.empty(len(starts), dtype=np.int64)
        picked = []
        for k, (a, b) in enumerate(zip(starts, stops)):
            key = rows[a:b].tobytes() + trials[a:b].tobytes()
            if key not in keys:
                keys[key] = len(keys)
                picked.append(np.arange(a, b))
            self.profile_of[k] = keys[key]
        lengths = np.array([len(p) for p in picked], dtype=np.int64)
        self.profile_start = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        entries = np.concatenate(picked)
        self.profile_row, self.profile_trials = rows[entries], trials[entries]
        self.profile_total = np.add.reduceat(self.profile_trials, self.profile_start[:-1])

    def criterion(self, successes: np.ndarray, constant: float = 0.0) -> "CollapsedLaplace":
        """The criterion of the cells with ``successes`` (cell order) and −2 × their log binomial coefficients
        ``constant``."""
        successes = np.asarray(successes, dtype=float)
        totals = np.bincount(self.item, weights=successes, minlength=self.n_items)[self.present]
        top = int(totals.max(initial=0.0)) + 1
        pairs, counts = np.unique(self.profile_of * top + totals.astype(np.int64), return_counts=True)
        profile, pair_successes = pairs // top, (pairs % top).astype(float)
        lengths = np.diff(self.profile_start)[profile]
        entry_pair = np.repeat(np.arange(len(pairs)), lengths)
        entry = (np.arange(len(entry_pair)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
                 + np.repeat(self.profile_start[profile], lengths))
        row_successes = np.bincount(self.fixed_cell, weights=successes, minlength=len(self.X_fixed))
        return CollapsedLaplace(self.X_fixed, row_successes, pair_successes, counts.astype(float),
                                self.profile_total[profile], entry_pair, self.profile_row[entry],
                                self.profile_trials[entry], constant)


class CollapsedLaplace:
    """f(θ, β) and its gradient over the packed vector (θ, β), as ``LaplaceDeviance.value_and_gradient``."""

    def __init__(self, X_fixed, row_successes, pair_successes, pair_count, pair_trials, entry_pair, entry_row,
                 entry_trials, constant):
        self.X_fixed, self.row_successes = X_fixed, row_successes
        self.s, self.count, self.total = pair_successes, pair_count, pair_trials
        self.entry_pair, self.entry_row, self.entry_trials = entry_pair, entry_row, entry_trials
        self.constant = constant

    def _pair_sums(self, values: np.ndarray) -> np.ndarray:
        return np.bincount(self.entry_pair, weights=values, minlength=len(self.s))

    def mode(self, theta: float, eta: np.ndarray) -> np.ndarray:
        """û of every pair: Newton's method on g(u) = θ r(u) − u (decreasing, g' = −D), inside the bracket
        θ (s − Σ n) ≤ û ≤ θ s that always holds its root."""
        ends = theta * (self.s - self.total), theta * self.s
        low, high = np.minimum(*ends), np.maximum(*ends)
        u = np.zeros(len(self.s))
        for _ in range(MODE_STEPS):
            mu = expit(eta + theta * u[self.entry_pair])
            g = theta * (self.s - self._pair_sums(self.entry_trials * mu)) - u
            step = g / (1.0 + theta * theta * self._pair_sums(self.entry_trials * mu * (1.0 - mu)))
            low, high = np.where(g > 0, u, low), np.where(g > 0, high, u)
            proposal = u + step
            outside = (proposal < low) | (proposal > high)
            proposal[outside] = 0.5 * (low[outside] + high[outside])
            if np.all(np.abs(step) <= MODE_TOLERANCE * (1.0 + np.abs(u))):
                return proposal
            u = proposal
        raise NotConvergedError("the items' conditional modes did not converge in 100 Newton steps")

    def value_and_gradient(self, params: np.ndarray) -> tuple[float, np.ndarray]:
        """f and its gradient in (θ, β); infinite where the modes cannot be found."""
        params = np.asarray(params, dtype=float)
        theta, beta = float(params[0]), params[1:]
        rows = self.X_fixed @ beta
        eta = rows[self.entry_row]
        try:
            u = self.mode(theta, eta)
        except NotConvergedError:
            return np.inf, np.zeros(len(params))
        t = eta + theta * u[self.entry_pair]
        mu = expit(t)
        n = self.entry_trials
        w = mu * (1.0 - mu)
        w_slope = w * (1.0 - 2.0 * mu)
        sum_w, sum_slope = self._pair_sums(n * w), self._pair_sums(n * w_slope)
        r = self.s - self._pair_sums(n * mu)
        D = 1.0 + theta * theta * sum_w
        f = -2.0 * (self.s * theta * u - self._pair_sums(n * np.logaddexp(0.0, t))) + u * u + np.log(D)
        value = float(self.count @ f - 2.0 * self.row_successes @ rows + self.constant)
        through_mode = theta ** 3 * sum_slope / D / D      # ∂ log D/∂û divided by D, per pair
        d_theta = (-2.0 * u * r + (2.0 * theta * sum_w + theta * theta * u * sum_slope) / D
                   + through_mode * (r - theta * u * sum_w))
        d_eta = (2.0 * n * mu + theta * theta * n * w_slope / D[self.entry_pair]
                 - through_mode[self.entry_pair] * theta * n * w)
        d_rows = np.bincount(self.entry_row, weights=self.count[self.entry_pair] * d_eta,
                             minlength=len(rows)) - 2.0 * self.row_successes
        return value, np.concatenate([[self.count @ d_theta], self.X_fixed.T @ d_rows])
