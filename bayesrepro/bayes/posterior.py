"""Reliability and contrast posteriors: derived variables of the draws and their summaries.

Every function reads a ``draws.Draws`` (what a fit holds) or an ArviZ InferenceData.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import BayesreproError
from ..reliability import KOO_LI_BANDS, koo_li_probabilities, phi, shares
from .draws import Draws, as_draws


def add_reliability(draws: Draws, variances: dict, object: str, prefix: str = "", terms=()) -> None:
    """Store draws of every variance component, each share and φ.

    ``variances`` maps component name to an array (chain, draw). Variables:
    ``{prefix}variance`` and ``{prefix}share`` (dim ``component``) and ``{prefix}phi``;
    φ counts every one of the object's ``terms`` (``(x || g)``'s ``g`` and ``g.1``).
    """
    from ..design.random_design import factor_variances

    names = list(variances)
    component = {"component": names}
    share = shares(variances)
    draws.add(f"{prefix}variance", np.stack([np.asarray(variances[n]) for n in names], axis=-1), ("component",), component)
    draws.add(f"{prefix}share", np.stack([np.asarray(share[n]) for n in names], axis=-1), ("component",), component)
    draws.add(f"{prefix}phi", np.asarray(phi(factor_variances(variances, terms), object)), attrs={"object": object})


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


def reliability_summary(posterior, prob: float = 0.95, prefix: str = "") -> pd.DataFrame:
    """Median and interval of each component's variance and share, and of φ."""
    draws = as_draws(posterior)
    variance, share = draws[f"{prefix}variance"], draws[f"{prefix}share"]
    rows = []
    for k, name in enumerate(draws.labels(f"{prefix}variance")):
        rows.append((str(name), *interval(variance[..., k], prob), *interval(share[..., k], prob)))
    frame = pd.DataFrame(rows, columns=["component", "variance", "low", "high", "share", "share_low", "share_high"])
    return frame.set_index("component")


def phi_summary(posterior, prob: float = 0.95, prefix: str = "", variable: str = "phi") -> dict:
    """Median, central interval and Koo & Li band probabilities of ``{prefix}{variable}``."""
    draws = as_draws(posterior)
    values = draws[f"{prefix}{variable}"]
    median, low, high = interval(values, prob)
    return {
        "object": draws.attrs.get(f"{prefix}{variable}", {}).get("object"),
        "median": median,
        "low": low,
        "high": high,
        "prob": prob,
        "bands": koo_li_probabilities(values),
    }


def band_table(posterior, prefix: str = "") -> pd.DataFrame:
    """Posterior probability of each Koo & Li band of φ."""
    probs = koo_li_probabilities(as_draws(posterior)[f"{prefix}phi"])
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


def level_contrasts(posterior, fixed_names: list[str], term: str, reference: str = "(reference)", prob: float = 0.95,
                    rope: tuple[float, float] | None = None) -> pd.DataFrame:
    """Pairwise differences of a categorical fixed term's level means (treatment coding).

    The reference level has coefficient 0, every other level ``term[level]``
    its coefficient, so a difference of level means is a difference of
    coefficients, whatever the other terms are (no interactions with ``term``).
    """
    draws = as_draws(posterior)
    if "fixed" not in draws:
        raise BayesreproError("no fixed-effect draws in this fit; refit with backend='fast' and effects=True")
    columns = {name[len(term) + 1 : -1]: name for name in fixed_names if name.startswith(f"{term}[") and name.endswith("]")}
    if not columns:
        raise BayesreproError(
            f"'{term}' is not a categorical fixed term of the model; fixed effects are: {', '.join(fixed_names)}"
        )
    interacting = [n for n in fixed_names if ":" in n and n.split(":")[0].startswith(f"{term}[")]
    if interacting:
        raise BayesreproError(f"term '{term}' interacts with others ({interacting[0]}); contrasts of its main effect are not defined")
    fixed, labels = draws["fixed"], draws.labels("fixed")
    by_level = {level: fixed[..., labels.index(name)].ravel() for level, name in columns.items()}
    by_level = {reference: np.zeros_like(next(iter(by_level.values()))), **by_level}
    levels = list(by_level)
    rows = []
    for i, a in enumerate(levels):
        for b in levels[i + 1 :]:
            diff = by_level[b] - by_level[a]
            median, low, high = interval(diff, prob)
            row = {"contrast": f"{b} - {a}", "median": median, "low": low, "high": high,
                   "p_direction": direction_probability(diff)}
            if rope is not None:
                row["p_rope"] = rope_probability(diff, *rope)
            rows.append(row)
    return pd.DataFrame(rows).set_index("contrast")


def variance_draws(posterior, prefix: str = "") -> dict:
    """Variance-component draws as the mapping the reliability formulas take."""
    draws = as_draws(posterior)
    variance = draws[f"{prefix}variance"]
    return {str(name): variance[..., k] for k, name in enumerate(draws.labels(f"{prefix}variance"))}


def d_study_summary(posterior, n: dict, object: str | None = None, prob: float = 0.95, prefix: str = "",
                     terms=()) -> pd.DataFrame:
    """Brennan's D-study coefficients (Φ, Eρ²) for scores averaged over ``n`` levels of facets, with intervals;
    a factor's several ``terms`` (``(x || g)``'s ``g`` and ``g.1``) are one component."""
    from ..design.random_design import factor_variances
    from ..reliability import d_study

    draws = as_draws(posterior)
    object = object or draws.attrs[f"{prefix}phi"]["object"]
    result = d_study(factor_variances(variance_draws(draws, prefix), terms), object, n)
    rows = [(name, *interval(result[name], prob)) for name in ("phi", "e_rho2")]
    return pd.DataFrame(rows, columns=["coefficient", "median", "low", "high"]).set_index("coefficient")
