"""Reliability and contrast posteriors: derived variables in the InferenceData and their summaries."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import BayesreproError
from ..reliability import KOO_LI_BANDS, koo_li_probabilities, phi, shares


def add_reliability(idata, variances: dict, object: str, prefix: str = "") -> None:
    """Store draws of every variance component, each share and φ in ``idata.posterior``.

    ``variances`` maps component name to an array (chain, draw). Variables:
    ``{prefix}variance`` and ``{prefix}share`` (dim ``component``) and ``{prefix}phi``.
    """
    import xarray as xr

    names = list(variances)
    coords = {"chain": idata.posterior.chain, "draw": idata.posterior.draw, "component": names}
    stacked = np.stack([np.asarray(variances[n]) for n in names], axis=-1)
    share = shares(variances)
    idata.posterior[f"{prefix}variance"] = xr.DataArray(stacked, coords=coords, dims=("chain", "draw", "component"))
    idata.posterior[f"{prefix}share"] = xr.DataArray(
        np.stack([np.asarray(share[n]) for n in names], axis=-1), coords=coords, dims=("chain", "draw", "component")
    )
    idata.posterior[f"{prefix}phi"] = xr.DataArray(
        np.asarray(phi(variances, object)), coords={k: coords[k] for k in ("chain", "draw")}, dims=("chain", "draw")
    )
    idata.posterior[f"{prefix}phi"].attrs["object"] = object


def check_probability(prob) -> float:
    """An interval probability (the command line's ``--prob``), refused unless strictly between 0 and 1."""
    if isinstance(prob, bool) or not isinstance(prob, (int, float, np.floating)) or not 0 < prob < 1:
        raise BayesreproError(f"--prob must lie strictly between 0 and 1, e.g. 0.9 for 90 % intervals; got {prob!r}")
    return float(prob)


def interval(draws, prob: float = 0.95) -> tuple[float, float, float]:
    """Median and central ``prob`` interval."""
    check_probability(prob)
    draws = np.asarray(draws).ravel()
    low, median, high = np.quantile(draws, [(1 - prob) / 2, 0.5, (1 + prob) / 2])
    return float(median), float(low), float(high)


def reliability_summary(idata, prob: float = 0.95, prefix: str = "") -> pd.DataFrame:
    """Median and interval of each component's variance and share, and of φ."""
    post = idata.posterior
    rows = []
    for name in post[f"{prefix}variance"].component.values:
        v = interval(post[f"{prefix}variance"].sel(component=name), prob)
        s = interval(post[f"{prefix}share"].sel(component=name), prob)
        rows.append((str(name), *v, *s))
    frame = pd.DataFrame(rows, columns=["component", "variance", "low", "high", "share", "share_low", "share_high"])
    return frame.set_index("component")


def phi_summary(idata, prob: float = 0.95, prefix: str = "", variable: str = "phi") -> dict:
    """Median, central interval and Koo & Li band probabilities of ``{prefix}{variable}``."""
    draws = idata.posterior[f"{prefix}{variable}"].values
    median, low, high = interval(draws, prob)
    return {
        "object": idata.posterior[f"{prefix}{variable}"].attrs.get("object"),
        "median": median,
        "low": low,
        "high": high,
        "prob": prob,
        "bands": koo_li_probabilities(draws),
    }


def band_table(idata, prefix: str = "") -> pd.DataFrame:
    """Posterior probability of each Koo & Li band of φ."""
    probs = koo_li_probabilities(idata.posterior[f"{prefix}phi"].values)
    return pd.DataFrame(
        [(label, low, high, probs[label]) for label, low, high in KOO_LI_BANDS],
        columns=["band", "from", "to", "probability"],
    )


def direction_probability(draws) -> float:
    """Probability of direction: the posterior mass on the dominant side of zero."""
    draws = np.asarray(draws).ravel()
    return float(max(np.mean(draws > 0), np.mean(draws < 0)))


def rope_probability(draws, low: float, high: float) -> float:
    """Posterior probability that a quantity lies in the region of practical equivalence [low, high]."""
    if not low < high:
        raise BayesreproError(f"ROPE needs low < high, got [{low}, {high}]")
    draws = np.asarray(draws).ravel()
    return float(np.mean((draws >= low) & (draws <= high)))


def level_contrasts(idata, fixed_names: list[str], term: str, reference: str = "(reference)", prob: float = 0.95,
                    rope: tuple[float, float] | None = None) -> pd.DataFrame:
    """Pairwise differences of a categorical fixed term's level means (treatment coding).

    The reference level has coefficient 0, every other level ``term[level]``
    its coefficient, so a difference of level means is a difference of
    coefficients, whatever the other terms are (no interactions with ``term``).
    """
    if "fixed" not in idata.posterior:
        raise BayesreproError("no fixed-effect draws in this fit; refit with backend='fast' and effects=True")
    columns = {name[len(term) + 1 : -1]: name for name in fixed_names if name.startswith(f"{term}[") and name.endswith("]")}
    if not columns:
        raise BayesreproError(
            f"'{term}' is not a categorical fixed term of the model; fixed effects are: {', '.join(fixed_names)}"
        )
    interacting = [n for n in fixed_names if ":" in n and n.split(":")[0].startswith(f"{term}[")]
    if interacting:
        raise BayesreproError(f"term '{term}' interacts with others ({interacting[0]}); contrasts of its main effect are not defined")
    fixed = idata.posterior["fixed"]
    draws = {level: fixed.sel(fixed_effect=name).values.ravel() for level, name in columns.items()}
    draws = {reference: np.zeros_like(next(iter(draws.values()))), **draws}
    levels = list(draws)
    rows = []
    for i, a in enumerate(levels):
        for b in levels[i + 1 :]:
            diff = draws[b] - draws[a]
            median, low, high = interval(diff, prob)
            row = {"contrast": f"{b} - {a}", "median": median, "low": low, "high": high,
                   "p_direction": direction_probability(diff)}
            if rope is not None:
                row["p_rope"] = rope_probability(diff, *rope)
            rows.append(row)
    return pd.DataFrame(rows).set_index("contrast")


def variance_draws(idata, prefix: str = "") -> dict:
    """Variance-component draws as the mapping the reliability formulas take."""
    variance = idata.posterior[f"{prefix}variance"]
    return {str(name): variance.sel(component=name).values for name in variance.component.values}


def d_study_summary(idata, n: dict, object: str | None = None, prob: float = 0.95, prefix: str = "") -> pd.DataFrame:
    """Brennan's D-study coefficients (Φ, Eρ²) for scores averaged over ``n`` levels of facets, with intervals."""
    from ..reliability import d_study

    object = object or idata.posterior[f"{prefix}phi"].attrs["object"]
    result = d_study(variance_draws(idata, prefix), object, n)
    rows = [(name, *interval(result[name], prob)) for name in ("phi", "e_rho2")]
    return pd.DataFrame(rows, columns=["coefficient", "median", "low", "high"]).set_index("coefficient")
