"""Convergence diagnostics that travel with every result and are never ignored."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..errors import NotConvergedError

R_HAT_MAX = 1.01      # Vehtari et al. (2021), rank-normalised split R-hat
ESS_PER_CHAIN = 100   # bulk and tail ESS of at least 100 per chain (Vehtari et al. 2021)


@dataclass(frozen=True)
class Diagnostics:
    table: pd.DataFrame   # per variable: r_hat, ess_bulk, ess_tail (NaN where not defined)
    divergences: int
    chains: int
    draws: int

    @property
    def r_hat_max(self) -> float:
        """The largest R-hat; NaN if any is not defined (a NaN is never skipped: it is the worst case)."""
        return float(self.table["r_hat"].max(skipna=False))

    @property
    def ess_bulk_min(self) -> float:
        return float(self.table["ess_bulk"].min(skipna=False))

    @property
    def ess_tail_min(self) -> float:
        return float(self.table["ess_tail"].min(skipna=False))

    @property
    def ess_required(self) -> float:
        return ESS_PER_CHAIN * self.chains

    @property
    def undefined(self) -> list[str]:
        """Variables whose R-hat or ESS is not defined: their draws do not vary, or are not finite."""
        return list(self.table.index[self.table.isna().any(axis=1)])

    @property
    def converged(self) -> bool:
        # comparisons with NaN are False: an undefined diagnostic never passes
        return (
            self.r_hat_max <= R_HAT_MAX
            and self.ess_bulk_min >= self.ess_required
            and self.ess_tail_min >= self.ess_required
            and self.divergences == 0
        )

    def line(self) -> str:
        undefined = self.undefined
        if undefined:
            return (f"R-hat and ESS are not defined for {', '.join(undefined)} (the draws do not vary or are not "
                    f"finite: the sampler did not move), {self.divergences} divergent transitions")
        worst = self.table["r_hat"].idxmax()
        return (
            f"R-hat max {self.r_hat_max:.4f} ({worst}; must not exceed {R_HAT_MAX}), bulk ESS min {self.ess_bulk_min:.0f}, "
            f"tail ESS min {self.ess_tail_min:.0f} (need >= {self.ess_required:.0f}), "
            f"{self.divergences} divergent transitions"
        )

    def as_dict(self) -> dict:
        return {
            "r_hat_max": self.r_hat_max,
            "ess_bulk_min": self.ess_bulk_min,
            "ess_tail_min": self.ess_tail_min,
            "divergences": self.divergences,
            "undefined": self.undefined,
            "converged": self.converged,
        }


def diagnose(draws, var_names: list[str]) -> Diagnostics:
    """R-hat, bulk and tail ESS of every variable (the worst over its elements), and the divergences, of a ``Draws``."""
    from .convergence import ess_bulk, ess_tail, r_hat

    rows = {}
    for name in var_names:
        values = np.asarray(draws[name], dtype=float)
        elements = values.reshape(*values.shape[:2], -1)
        with np.errstate(invalid="ignore", divide="ignore"):   # constant draws give NaN: not converged
            figures = np.array([(r_hat(e), ess_bulk(e), ess_tail(e)) for e in np.moveaxis(elements, -1, 0)])
        rows[name] = (float(np.max(figures[:, 0])), float(np.min(figures[:, 1])), float(np.min(figures[:, 2])))
    table = pd.DataFrame.from_dict(rows, orient="index", columns=["r_hat", "ess_bulk", "ess_tail"])
    divergences = int(np.sum(draws.stats["diverging"])) if "diverging" in draws.stats else 0
    chains, n_draws = draws.shape
    return Diagnostics(table, divergences, chains, n_draws)


def require_convergence(diagnostics: Diagnostics, allow_unconverged: bool) -> None:
    if not diagnostics.converged and not allow_unconverged:
        raise NotConvergedError(
            f"sampling did not converge: {diagnostics.line()}; run more --draws/--tune, "
            "or pass --allow-unconverged to keep the draws anyway"
        )


def quantile_agreement(idata_a, idata_b, var_names: list[str], probs=(0.05, 0.5, 0.95), k: float = 4.0):
    """Do two posteriors agree within Monte-Carlo error?

    For every variable and quantile: |q_a − q_b| ≤ k × sqrt(MCSE_a² + MCSE_b²),
    the MCSEs of the quantile estimates from ``arviz.mcse(method="quantile")``.
    Returns a table with the figures and a boolean column ``agree``.
    """
    import arviz as az

    rows = []
    for name in var_names:
        a = idata_a.posterior[[name]]
        b = idata_b.posterior[[name]]
        for p in probs:
            qa = float(np.quantile(a[name].values, p))
            qb = float(np.quantile(b[name].values, p))
            ma = float(az.mcse(a, method="quantile", prob=p)[name])
            mb = float(az.mcse(b, method="quantile", prob=p)[name])
            bound = k * np.hypot(ma, mb)
            rows.append((name, p, qa, qb, abs(qa - qb), bound, abs(qa - qb) <= bound))
    return pd.DataFrame(rows, columns=["variable", "quantile", "a", "b", "difference", "bound", "agree"])
