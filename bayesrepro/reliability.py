"""Reliability from variance components: VCA tables, φ, Koo & Li labels, D-studies.

Every function takes variance components as a mapping from component name to
a variance, either a float (REML estimates) or a numpy array (posterior
draws), so one set of formulas serves both engines. Component names follow
the formula: ``sentence``, ``sentence:rater``, and ``Residual``; a component
involves the facets named in it, and the residual involves every facet.

Binary scores (Bernoulli or binomial GLMMs) have two scales, and every φ of
theirs says which it is on:

- the latent scale: the components of the linear predictor and, as the
  residual, the variance of the latent variable whose threshold gives a
  success, π²/3 for the logit link and 1 for probit (Nakagawa & Schielzeth
  2010, Biol. Rev. 85; Nakagawa, Johnson & Schielzeth 2017, J. R. Soc.
  Interface 14). ``latent_variances`` adds that residual, after which ``phi``,
  ``vca_table`` and ``d_study`` apply unchanged;
- the observation scale: the correlation of two 0/1 scores of the same object
  that share nothing else (``phi_observed``), computed exactly by integrating
  over the normal level effects rather than by the delta-method approximation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import pandas as pd

from .errors import BayesreproError
from .links import get_link

RESIDUAL = "Residual"
# the fewest levels of an object of measurement chosen by default (see object_of_measurement)
MIN_OBJECT_LEVELS = 5

# Koo & Li (2016), J. Chiropr. Med. 15(2): guidelines for intraclass correlations.
KOO_LI_BANDS = (("poor", 0.0, 0.5), ("moderate", 0.5, 0.75), ("good", 0.75, 0.9), ("excellent", 0.9, 1.0))


def total_variance(variances: Mapping[str, float | np.ndarray]):
    return sum(variances.values())


def shares(variances: Mapping[str, float | np.ndarray]) -> dict:
    """Each component's share of the summed components."""
    total = total_variance(variances)
    return {name: value / total for name, value in variances.items()}


def phi(variances: Mapping[str, float | np.ndarray], object: str):
    """Reliability φ: the object of measurement's share of the total variance."""
    _require_component(variances, object)
    return variances[object] / total_variance(variances)


def latent_variances(components: Mapping[str, float | np.ndarray], link: str = "logit") -> dict:
    """The components of a binary model with the latent-scale residual added (π²/3 logit, 1 probit)."""
    if RESIDUAL in components:
        raise BayesreproError(
            f"the components of a binary model have no '{RESIDUAL}' of their own; its latent residual is added here"
        )
    return {**components, RESIDUAL: get_link(link).latent_residual}


def phi_observed(components: Mapping[str, float | np.ndarray], object: str, link: str = "logit",
                 eta=0.0, weights=None, nodes: int = 40):
    """φ on the observation scale: the correlation of two 0/1 scores of the same object level that share no
    other level effect (and no residual).

    ``components`` are the latent-scale variances without a residual (floats
    or arrays of draws). For linear predictor η (the fixed part), with
    b ~ N(0, σ²_object), z ~ N(0, σ²_others) and m(b) = E_z μ(η + b + z):
    the covariance of the two scores is Var_b m(b) and the variance of one is
    p̄(1 − p̄), p̄ = E_b m(b). ``eta`` may be a vector of linear predictors (the
    fixed cells of a design, the last axis) with ``weights``: then φ is the
    weighted covariance over the weighted variance (the object's share
    within cells of equal fixed effects). Integrals by Gauss–Hermite
    quadrature with ``nodes`` nodes per dimension.
    """
    _require_component(components, object)
    if RESIDUAL in components:
        raise BayesreproError(f"phi_observed takes the latent components without '{RESIDUAL}'")
    inverse = get_link(link).inverse
    z, w = np.polynomial.hermite_e.hermegauss(nodes)
    w = w / w.sum()
    object_sd = np.sqrt(np.asarray(components[object], dtype=float))[..., None, None, None]
    others = sum(np.asarray(v, dtype=float) for name, v in components.items() if name != object)
    others_sd = np.sqrt(np.asarray(others, dtype=float))[..., None, None, None]
    eta = np.atleast_1d(np.asarray(eta, dtype=float))
    weights = np.ones(eta.shape[-1]) if weights is None else np.asarray(weights, dtype=float)
    # axes: (draws…, cells, node of the object's effect, node of the others')
    latent = eta[..., None, None] + object_sd * z[:, None] + others_sd * z[None, :]
    conditional = inverse(latent) @ w                      # m(b) at each node of b
    mean = conditional @ w
    covariance = (conditional**2) @ w - mean**2
    return (covariance @ weights) / ((mean * (1.0 - mean)) @ weights)


def koo_li_label(value: float) -> str:
    """Koo & Li's label for a reliability coefficient."""
    if not np.isfinite(value):
        raise BayesreproError(f"reliability {value} is not a finite number")
    for label, low, high in KOO_LI_BANDS:
        if value < high:
            return label
    return KOO_LI_BANDS[-1][0]


def koo_li_probabilities(draws: np.ndarray) -> dict[str, float]:
    """Posterior probability of each Koo & Li band."""
    draws = np.asarray(draws).ravel()
    edges = [band[1] for band in KOO_LI_BANDS] + [np.inf]
    return {label: float(np.mean((draws >= edges[i]) & (draws < edges[i + 1]))) for i, (label, _, _) in enumerate(KOO_LI_BANDS)}


def default_object(variances: Mapping[str, float | np.ndarray], n_levels: Mapping[str, int]) -> str:
    """The object of measurement when none is named (``object_of_measurement``'s rule), among the components."""
    return object_of_measurement({name: n for name, n in n_levels.items() if name in variances}).name


@dataclass(frozen=True)
class ObjectChoice:
    """φ's object of measurement, and the note that says how it was chosen (empty when it was named)."""

    name: str
    note: str = ""


def object_of_measurement(n_levels: Mapping[str, int], named: str | None = None) -> ObjectChoice:
    """φ's object of measurement: ``named`` if given, else the default, which is never a guess.

    The default is the grouping factor of a single column with the most
    levels (φ is the share of one facet: an interaction such as
    ``sentence:rater`` is never chosen by default), and it is taken only when
    that choice is clear; otherwise the object must be named (``--object``):

    * no grouping factor is of a single column;
    * two factors tie for the most levels;
    * the factor has fewer than MIN_OBJECT_LEVELS levels (seeds, prompts,
      systems are facets, and φ between two or three objects means nothing);
    * an interaction grouping that does not contain it has more levels (in
      ``(1|item:seed) + (1|system)`` the objects are more likely the items
      within ``item:seed`` than the two systems).

    The note names the chosen factor and how to choose another.
    """
    if not n_levels:
        raise BayesreproError("the formula has no (1|g) term; add the object of measurement, e.g. (1|item)")
    if named is not None:
        if named not in n_levels:
            raise BayesreproError(f"--object '{named}' is not a grouping factor of the model; choose one of: "
                                  f"{', '.join(n_levels)}")
        return ObjectChoice(named)
    candidates = [name for name in n_levels if ":" not in name]
    listed = ", ".join(f"{name} ({n:,} levels)" for name, n in n_levels.items())
    refusal = "phi needs an object of measurement and the default would be a guess: {}; name it with --object " \
              f"(grouping factors: {listed})"
    if not candidates:
        raise BayesreproError(refusal.format("no grouping factor is of a single column"))
    chosen = max(candidates, key=lambda name: n_levels[name])
    most = n_levels[chosen]
    tied = [name for name in candidates if n_levels[name] == most and name != chosen]
    if tied:
        raise BayesreproError(refusal.format(f"{chosen} and {tied[0]} both have the most levels ({most:,})"))
    if most < MIN_OBJECT_LEVELS:
        raise BayesreproError(refusal.format(
            f"{chosen}, the single-column factor with most levels, has {most}, fewer than the "
            f"{MIN_OBJECT_LEVELS} an object of measurement needs"))
    larger = [name for name in n_levels if ":" in name and n_levels[name] > most and chosen not in name.split(":")]
    if larger:
        raise BayesreproError(refusal.format(
            f"the interaction grouping {larger[0]} has more levels ({n_levels[larger[0]]:,}) than {chosen} ({most:,})"))
    return ObjectChoice(chosen, f"phi's object of measurement is {chosen} ({most:,} levels), by default the single "
                                f"grouping factor with most levels; name another with --object")


def vca_table(variances: Mapping[str, float], object: str | None = None) -> pd.DataFrame:
    """Variance component table: component, variance, percent (and φ's object marked)."""
    table = pd.DataFrame(
        {
            "variance": [float(v) for v in variances.values()],
            "percent": [100.0 * float(s) for s in shares(variances).values()],
        },
        index=pd.Index(list(variances), name="component"),
    )
    if object is not None:
        _require_component(variances, object)
        table["object"] = [name == object for name in variances]
    return table


def facets_of(component: str, all_facets: set[str]) -> set[str]:
    return set(all_facets) if component == RESIDUAL else set(component.split(":"))


def d_study(variances: Mapping[str, float | np.ndarray], object: str, n: Mapping[str, int]) -> dict:
    """Brennan's D-study: reliability of scores averaged over n levels of facets.

    For each facet f the score is averaged over ``n[f]`` levels (default 1).
    A component's error contribution is its variance divided by the product of
    n over the facets it involves (the object excluded); the residual involves
    every facet. Absolute error (for Φ) counts every component but the
    object's; relative error (for Eρ²) only those that interact with the
    object. Returns ``{"phi": Φ, "e_rho2": Eρ², "absolute_error": …, "relative_error": …}``.
    """
    _require_component(variances, object)
    facets = _facets(variances) - {object}
    unknown = set(n) - facets
    if unknown:
        raise BayesreproError(
            f"D-study facet(s) {', '.join(sorted(unknown))} are not facets of the model; facets are: {', '.join(sorted(facets))}"
        )
    for facet, count in n.items():
        if int(count) < 1:
            raise BayesreproError(f"D-study needs at least 1 level of facet '{facet}', not {count}")
    absolute = relative = 0.0
    for name, variance in variances.items():
        if name == object:
            continue
        involved = facets_of(name, facets | {object})
        divisor = np.prod([n.get(f, 1) for f in involved - {object}]) if involved - {object} else 1
        contribution = variance / divisor
        absolute = absolute + contribution
        if object in involved:
            relative = relative + contribution
    universe = variances[object]
    return {
        "phi": universe / (universe + absolute),
        "e_rho2": universe / (universe + relative),
        "absolute_error": absolute,
        "relative_error": relative,
    }


def consistency_across(variances: Mapping[str, float | np.ndarray], facet: str):
    """Correlation of two scores of the same object that differ only in ``facet``.

    The share of the total variance held by the components that stay the same
    when only ``facet`` changes: those that do not involve it (the residual
    always changes). With facet ``occasion`` this is intra-rater reliability
    (same rater, another occasion); with facet ``rater`` it is inter-rater
    reliability (another rater, same occasion).
    """
    if facet not in _facets(variances):
        raise BayesreproError(f"'{facet}' is not a facet of the model; facets are: {', '.join(sorted(_facets(variances)))}")
    shared = sum(value for name, value in variances.items() if name != RESIDUAL and facet not in name.split(":"))
    return shared / total_variance(variances)


def _facets(variances: Mapping[str, object]) -> set[str]:
    return {part for name in variances if name != RESIDUAL for part in name.split(":")}


def _require_component(variances: Mapping[str, object], name: str) -> None:
    if name not in variances:
        raise BayesreproError(
            f"object of measurement '{name}' is not a variance component of the model; components are: "
            f"{', '.join(variances)}"
        )
