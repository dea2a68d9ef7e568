"""Each level's random effects at a frequentist fit: conditional modes and conditional SDs (lme4's
``ranef(condVar = TRUE)``), built from what the fit's core works on.

- Gaussian random intercepts: Z'Z and Z'(y − Xβ) from the model frame's grouped sums (rows in memory or a
  producer's sums alike), the largest factor's diagonal block eliminated first;
- Gaussian random slopes: the sparse Z and Λθ of lme4's formulation on the rows;
- binary scores: penalized IRLS at the ML estimates, on the binomial cells, or on the rows where the fit used
  the sparse Laplace core (slopes, crowd designs);
- fits that are not the criterion's exact optimum (moment estimates, Monte Carlo traces: too many levels for an
  exact factor): modes by conjugate gradients (Gaussian) or by the Monte Carlo path's own Newton steps (0/1
  scores), no conditional SDs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ..design.random_terms import RandomTerm
from ..errors import BayesreproError
from ..runtime import numerical_work
from .conditional_modes import TermLayout, binary_modes, gaussian_modes, iterative_gaussian_modes

MOMENTS_NOTE = ("conditional SDs are not computed where the exact factor of the design is out of reach (moment "
                "estimates, Monte Carlo traces): sd is NaN; the estimates are the modes at the fitted variances")
COLUMNS = ("group", "term", "level", "estimate", "sd", "low", "high")


@dataclass(frozen=True)
class LevelTerm:
    """One random-effect term at the fit: its levels' conditional modes and SDs, (levels × columns) arrays."""

    term: RandomTerm
    columns: tuple[str, ...]        # lme4's names: "(Intercept)", then the slopes
    levels: pd.Index                # labels as text
    estimate: np.ndarray
    sd: np.ndarray                  # NaN where not computed
    covariance: np.ndarray          # the term's fitted covariance matrix Σ (nc × nc)


@dataclass(frozen=True)
class FittedEffects:
    terms: tuple[LevelTerm, ...]
    notes: tuple[str, ...] = ()


def fitted_effects(frame, family, fit) -> FittedEffects:
    """The conditional modes and SDs of every term of ``fit`` (an ``LmmFit``, ``MomentFit`` or ``GlmmFit``)."""
    with numerical_work():
        if family.binary:
            return _binary_effects(frame, family, fit) if fit.exact else _monte_carlo_binary_effects(frame, fit)
        if frame.spec.has_slopes:
            return _row_effects(frame, fit)
        return _sums_effects(frame, fit, iterative=not fit.exact)


def effects_table(effects: FittedEffects, groups: list[str], prob: float) -> pd.DataFrame:
    """One row per level and term of the ``groups`` factors: estimate, SD and the normal ``prob`` interval."""
    from scipy.special import ndtri

    z = float(ndtri(0.5 + prob / 2.0))
    parts = []
    for term in effects.terms:
        if term.term.group not in groups:
            continue
        for j, column in enumerate(term.columns):
            estimate, sd = term.estimate[:, j], term.sd[:, j]
            parts.append(pd.DataFrame({"group": term.term.group, "term": column, "level": term.levels.astype(str),
                                       "estimate": estimate, "sd": sd, "low": estimate - z * sd,
                                       "high": estimate + z * sd}))
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(COLUMNS))


def chosen_groups(spec, group) -> list[str]:
    """The grouping factors asked for: all for None, else ``group`` (a name or a list) checked against the formula."""
    names = list(spec.group_names)
    if group is None:
        return names
    asked = [group] if isinstance(group, str) else [str(g) for g in group]
    for name in asked:
        if name not in names:
            raise BayesreproError(f"--group '{name}' is not a grouping factor of --formula {spec.formula!r}; "
                                  f"choose one of: {', '.join(names)}")
    return asked


def lme4_name(column: str) -> str:
    """A random term's column as lme4 names it: "(Intercept)", a slope "x", a factor's contrast "condb"
    (formulae's "cond[b]")."""
    return "(Intercept)" if column == "Intercept" else re.sub(r"\[([^\]]*)\]", r"\1", column)


def _intercept_terms(frame) -> list[RandomTerm]:
    by_group = {term.group: term for term in frame.spec.random_terms}
    return [by_group[g.name] for g in frame.groups]


def _sums_effects(frame, fit, iterative: bool) -> FittedEffects:
    """Random intercepts from the grouped sums: Z'Z from the level counts and pair counts, Z'(y − Xβ) from the
    level totals less the fixed part of their cells."""
    sums = frame.sums
    sizes = np.array(sums.sizes, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    q = int(offsets[-1])
    cell_eta = frame.X_cells @ np.asarray(fit.beta, dtype=float)
    rows, cols, values, z_residual = [], [], [], np.zeros(q)
    for k, part in enumerate(sums.factors):
        level = part.level + offsets[k]
        counts = np.bincount(level, weights=part.n, minlength=q)
        present = np.flatnonzero(counts)
        rows.append(present)
        cols.append(present)
        values.append(counts[present])
        z_residual += np.bincount(level, weights=part.total - part.n * cell_eta[part.cell], minlength=q)
    for (i, j), pair in sums.pairs.items():
        first, second = pair.first + offsets[i], pair.second + offsets[j]
        rows += [first, second]
        cols += [second, first]
        values += [pair.n, pair.n]
    gram = sp.csc_matrix((np.concatenate(values), (np.concatenate(rows), np.concatenate(cols))), shape=(q, q))
    sigma2 = fit.residual_variance
    variances = [fit.variances[g.name] for g in frame.groups]
    lam = sp.diags(np.repeat(np.sqrt(np.asarray(variances) / sigma2), sizes))
    layouts = [TermLayout(int(offsets[k]), 1, int(sizes[k])) for k in range(len(sizes))]
    if iterative:
        modes, sd = iterative_gaussian_modes(gram, lam, z_residual), np.full(q, np.nan)
    else:
        dominant = int(np.argmax(sizes))
        modes, sd = gaussian_modes(gram, lam, z_residual, np.arange(offsets[dominant], offsets[dominant + 1]),
                                   layouts, sigma2)
    terms = tuple(LevelTerm(term, ("(Intercept)",), g.levels, modes[layout.columns()][:, None],
                            sd[layout.columns()][:, None], np.array([[v]]))
                  for term, g, layout, v in zip(_intercept_terms(frame), frame.groups, layouts, variances))
    return FittedEffects(terms, (MOMENTS_NOTE,) if iterative else ())


def _monte_carlo_binary_effects(frame, fit) -> FittedEffects:
    """Random intercepts of 0/1 scores fitted with Monte Carlo traces: the modes by that path's own Newton steps
    (conjugate gradients on the crossed system), no conditional SDs."""
    from .monte_carlo_laplace import MonteCarloLaplace

    sizes = [g.n_levels for g in frame.groups]
    variances = np.array([fit.variances[g.name] for g in frame.groups])
    score = MonteCarloLaplace([g.codes for g in frame.groups], sizes, frame.X, frame.y, probes=1, seed=0)
    modes = score.mode(variances, np.asarray(fit.beta, dtype=float))
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    terms = tuple(LevelTerm(term, ("(Intercept)",), g.levels, modes[offsets[k]:offsets[k + 1], None],
                            np.full((sizes[k], 1), np.nan), np.array([[variances[k]]]))
                  for k, (term, g) in enumerate(zip(_intercept_terms(frame), frame.groups)))
    return FittedEffects(terms, (MOMENTS_NOTE,))


def _design_parts(frame, fit, sigma2: float):
    """The rows' random design, Λθ (relative to σ) and each term's layout and fitted covariance."""
    from ..design.random_design import random_design
    from .covariance_structure import term_covariance

    design = random_design(frame.spec, frame.data)
    if frame.spec.has_slopes:
        theta = np.asarray(fit.theta, dtype=float)
    else:   # one θ per intercept term, from the variances whichever core ordered the fit's θ
        theta = np.sqrt(np.array([fit.variances[block.group] for block in design.blocks]) / sigma2)
    covariances = [term_covariance(block, theta, sigma2) for block in design.blocks]
    layouts = [TermLayout(block.offset, block.nc, block.n_levels) for block in design.blocks]
    return design, design.relative_factor(theta), layouts, covariances


def _design_terms(frame, design, layouts, covariances, modes, sd) -> tuple[LevelTerm, ...]:
    terms = []
    for term, block, layout, covariance in zip(frame.spec.random_terms, design.blocks, layouts, covariances):
        shape = (block.n_levels, block.nc)
        terms.append(LevelTerm(term, tuple(lme4_name(c) for c in block.columns), block.levels,
                               modes[layout.columns()].reshape(shape), sd[layout.columns()].reshape(shape), covariance))
    return tuple(terms)


def _row_effects(frame, fit) -> FittedEffects:
    """Gaussian random slopes (or any structure) on the rows' sparse design."""
    from .sparse_deviance import diagonal_lead

    frame = frame.require_rows("computing the level effects of a model with random slopes")
    sigma2 = fit.residual_variance
    design, lam, layouts, covariances = _design_parts(frame, fit, sigma2)
    z = design.Z
    residual = frame.y - frame.X @ np.asarray(fit.beta, dtype=float)
    modes, sd = gaussian_modes((z.T @ z).tocsc(), lam, z.T @ residual, diagonal_lead(design), layouts, sigma2)
    return FittedEffects(_design_terms(frame, design, layouts, covariances, modes, sd))


def _binary_effects(frame, family, fit) -> FittedEffects:
    from ..links import get_link
    from .cell_products import coupling_beyond_cells
    from .sparse_deviance import diagonal_lead

    link = get_link(family.link)
    beta = np.asarray(fit.beta, dtype=float)
    if frame.spec.has_slopes or (frame.has_rows and coupling_beyond_cells([g.n_levels for g in frame.groups])):
        design, lam, layouts, covariances = _design_parts(frame, fit, 1.0)
        trials = np.ones(frame.n_obs) if frame.trials is None else frame.trials
        modes, sd = binary_modes(design.Z @ lam, frame.X @ beta, frame.y, trials, link, diagonal_lead(design),
                                 layouts, lam)
        return FittedEffects(_design_terms(frame, design, layouts, covariances, modes, sd))
    cells = frame.binomial()
    sizes = np.array(cells.sizes, dtype=np.int64)
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    q = int(offsets[-1])
    z = sp.csc_matrix((np.ones(cells.n_cells * len(sizes)),
                       (np.tile(np.arange(cells.n_cells), len(sizes)),
                        np.concatenate([codes + offsets[k] for k, codes in enumerate(cells.codes)]))),
                      shape=(cells.n_cells, q))
    variances = [fit.variances[name] for name in cells.group_names]
    lam = sp.diags(np.repeat(np.sqrt(variances), sizes))
    layouts = [TermLayout(int(offsets[k]), 1, int(sizes[k])) for k in range(len(sizes))]
    dominant = int(np.argmax(sizes))
    modes, sd = binary_modes(z @ lam, cells.X @ beta, cells.successes, cells.trials, link,
                             np.arange(offsets[dominant], offsets[dominant + 1]), layouts, lam)
    terms = tuple(LevelTerm(term, ("(Intercept)",), levels, modes[layout.columns()][:, None],
                            sd[layout.columns()][:, None], np.array([[v]]))
                  for term, levels, layout, v in zip(_intercept_terms(frame), cells.levels, layouts, variances))
    return FittedEffects(terms)
