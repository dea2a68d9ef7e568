"""The tests of a model check, each read against the same statistic of data sets simulated from the model.

Rows that share a level share its effect, so residuals of a mixed model are not independent, and the textbook
reference distributions (Kolmogorov's for the KS distance, χ² for sums of squares) do not hold for them. Each
test here computes its statistic on the observed scores and on every simulated data set (which has the
model's dependence between rows) and reads the observed value's Monte-Carlo p-value against the simulated
ones, (1 + #{simulated ≥ observed}) / (S + 1): exact when the fitted model is the truth, conservative in
the measure the fit adapts to its own data.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp
from scipy.special import ndtr, ndtri

ALPHA = 0.05
BLOCK_VALUES = 2 ** 20     # simulated residuals transformed at a time (small temporaries)


@dataclass(frozen=True)
class CheckTest:
    """One test of a model check: its statistic, Monte-Carlo p-value, and what it found in a sentence either way.

    ``p_adjusted`` is Holm's adjustment over every test of the check (``holm``), and ``flagged`` reads it at 5 %.
    """

    name: str                     # uniformity, dispersion, within-level structure, outlying levels
    group: str | None             # the grouping factor tested, for the tests of one factor
    statistic: float
    p: float
    texts: tuple[str, str]        # the finding when consistent with the model, and when flagged
    details: dict = field(default_factory=dict)
    p_adjusted: float | None = None

    @property
    def flagged(self) -> bool:
        """Whether the test rejects the model at 5 %, after Holm's adjustment when it was made."""
        return (self.p if self.p_adjusted is None else self.p_adjusted) < ALPHA

    @property
    def sentence(self) -> str:
        """What the test found, in one sentence."""
        text = self.texts[self.flagged]
        if self.flagged and self.p_adjusted is not None and self.p_adjusted != self.p:
            text = text[:-1] + f" (Holm-adjusted p = {self.p_adjusted:.3g} over the check's tests)."
        return text

    def to_dict(self) -> dict:
        """The test as ``bayesrepro check --json`` prints it."""
        return {"test": self.name, "group": self.group, "statistic": self.statistic, "p": self.p,
                "p_adjusted": self.p_adjusted, "flagged": self.flagged, "finding": self.sentence, **self.details}


def holm(tests: list[CheckTest]) -> list[CheckTest]:
    """The tests with Holm's adjusted p-values over all of them (tests that do not apply, p = 1, included)."""
    from dataclasses import replace

    order = np.argsort([t.p for t in tests], kind="stable")
    adjusted, running = np.empty(len(tests)), 0.0
    for rank, index in enumerate(order):
        running = max(running, min(1.0, (len(tests) - rank) * tests[index].p))
        adjusted[index] = running
    return [replace(t, p_adjusted=float(a)) for t, a in zip(tests, adjusted)]


def monte_carlo_p(observed: float, simulated: np.ndarray) -> float:
    """One-sided Monte-Carlo p-value of a statistic large under the alternative."""
    return float((1 + np.sum(simulated >= observed)) / (len(simulated) + 1))


def two_sided_p(observed: float, simulated: np.ndarray) -> float:
    """Two-sided Monte-Carlo p-value: twice the smaller tail, at most 1."""
    upper = monte_carlo_p(observed, simulated)
    lower = float((1 + np.sum(simulated <= observed)) / (len(simulated) + 1))
    return min(1.0, 2.0 * min(upper, lower))


def ks_distances(ordered: np.ndarray) -> np.ndarray:
    """Kolmogorov–Smirnov distance to U(0, 1) of every column of ``ordered`` (n × k, each column sorted)."""
    n = ordered.shape[0]
    steps = np.arange(1, n + 1)[:, None] / n
    return np.maximum((steps - ordered).max(axis=0), (ordered - (steps - 1.0 / n)).max(axis=0))


def uniformity_test(observed: np.ndarray, ordered_simulated: np.ndarray) -> CheckTest:
    """Are the quantile residuals uniform? The KS distance to U(0, 1) of their shape, read against the
    simulated data sets'.

    Location and scale are taken out first (``standardized``): the fit adapts them to its own data, which
    would make the observed residuals look more uniform than a simulated data set's; the dispersion test
    reads the scale.

    Parameters
    ----------
    observed : numpy.ndarray
        The n observed quantile residuals.
    ordered_simulated : numpy.ndarray
        n × S quantile residuals of the simulated data sets (``residuals.simulated_quantile_residuals``), each
        column sorted.

    Returns
    -------
    CheckTest
        The distance, its p-value and a sentence.
    """
    distance = float(ks_distances(standardized(np.sort(observed)[:, None]))[0])
    step = max(1, BLOCK_VALUES // len(observed))
    reference = np.concatenate([ks_distances(standardized(ordered_simulated[:, start:start + step]))
                                for start in range(0, ordered_simulated.shape[1], step)])
    p = monte_carlo_p(distance, reference)
    texts = (f"The quantile residuals are consistent with uniform (KS distance {distance:.3f}, p = {p:.3g}): "
             "no sign that the scores' distribution differs from the model's.",
             f"The quantile residuals are not uniform (KS distance {distance:.3f}, p = {p:.3g}): "
             f"{_residual_shape(observed)}; the scores do not follow the model's distribution.")
    return CheckTest("uniformity", None, distance, p, texts, {"reference_median": float(np.median(reference))})


def loo_pit_test(values: np.ndarray, randomized: bool, unreliable: int) -> CheckTest:
    """Are the LOO-PIT values uniform? Their KS distance to U(0, 1), read against Kolmogorov's distribution.

    Parameters
    ----------
    values : numpy.ndarray
        The n LOO-PIT values (``loo_pit.loo_pit``).
    randomized : bool
        Whether they are randomized PITs of discrete scores.
    unreliable : int
        Values whose importance weights have a Pareto k above 0.7.

    Returns
    -------
    CheckTest
        The distance, its p-value and a sentence. The values are not independent; the reference is that of n
        independent uniforms, conservative for them (``loo_pit``'s module).
    """
    from scipy.stats import kstwo

    n = len(values)
    distance = float(ks_distances(np.sort(values)[:, None])[0])
    p = float(kstwo.sf(distance, n))
    what = "randomized LOO-PIT values" if randomized else "LOO-PIT values"
    caveat = (f"; {unreliable} of the {n} values rest on unreliable importance weights, Pareto k above 0.7"
              if unreliable else "")
    texts = (f"The {what} are consistent with uniform (KS distance {distance:.3f}, p = {p:.3g}{caveat}): every "
             "score lies where the model fitted without it predicts it.",
             f"The {what} are not uniform (KS distance {distance:.3f}, p = {p:.3g}{caveat}): "
             f"{_residual_shape(values)}; the model fitted without a score mispredicts it.")
    return CheckTest("LOO-PIT uniformity", None, distance, p, texts,
                     {"reference": "Kolmogorov", "randomized": randomized, "pareto_k_above_0_7": unreliable})


def standardized(residuals: np.ndarray) -> np.ndarray:
    """Quantile residuals with the location and scale of their normal scores set to 0 and 1, per column."""
    z = ndtri(residuals)
    mean, sd = z.mean(axis=0), z.std(axis=0)
    z -= mean       # in place: n × S values
    z /= sd
    return ndtr(z, out=z)


def _residual_shape(residuals: np.ndarray) -> str:
    """How non-uniform residuals differ from uniform, in words."""
    tails = float(np.mean((residuals < 0.1) | (residuals > 0.9)))
    if tails > 0.25:
        return (f"{100 * tails:.0f} % of them lie in the outer 10 % tails (20 % expected): the scores lie further "
                "from the model's mean than it expects")
    if tails < 0.15:
        return (f"only {100 * tails:.0f} % of them lie in the outer 10 % tails (20 % expected): most scores lie "
                "closer to the model's mean than it expects")
    median = float(np.median(residuals))
    return f"their median is {median:.2f} instead of 0.5" if abs(median - 0.5) > 0.05 else \
        "their distribution has another shape than the model's"


def dispersion_test(residual: np.ndarray, simulated_residual: np.ndarray) -> CheckTest:
    """Is the scores' spread around the model's mean the simulated one? Their variances' ratio, two-sided.

    Parameters
    ----------
    residual : numpy.ndarray
        The observed scores minus the simulated mean (``marginal_residuals``).
    simulated_residual : numpy.ndarray
        n × S: every simulated data set minus the others' mean.

    Returns
    -------
    CheckTest
        The ratio of the observed to the mean simulated variance, its p-value and a sentence.
    """
    observed_spread, simulated_spread = float(np.var(residual)), _column_variances(simulated_residual)
    ratio = float(observed_spread / np.mean(simulated_spread))
    p = two_sided_p(observed_spread, simulated_spread)
    direction = "more" if ratio > 1 else "less"
    texts = (f"The scores' spread around the model's mean matches the simulated spread (variance ratio "
             f"{ratio:.3f}, p = {p:.3g}).",
             f"The scores vary {direction} around the model's mean than simulated scores do (variance ratio "
             f"{ratio:.3f}, p = {p:.3g}): the model {'under' if ratio > 1 else 'over'}states the spread.")
    return CheckTest("dispersion", None, ratio, p, texts)


def _column_variances(values: np.ndarray) -> np.ndarray:
    """The variance of every column, without an n × S temporary."""
    mean = values.mean(axis=0)
    return np.einsum("ij,ij->j", values, values) / values.shape[0] - mean * mean


def marginal_residuals(observed: np.ndarray, simulated: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The observed scores minus the simulated mean, and every simulated data set minus the others' mean (no
    data set is compared with a mean it is part of)."""
    s = simulated.shape[1]
    mean = simulated.mean(axis=1)
    simulated_residual = simulated - mean[:, None]
    simulated_residual *= s / (s - 1.0)
    return observed - mean, simulated_residual


def within_level_structure_test(residual: np.ndarray, simulated_residual: np.ndarray, X: np.ndarray,
                                codes: np.ndarray, n_levels: int, group: str) -> CheckTest | None:
    """Do the fixed effects act differently in different levels of ``group``? (A missing random slope.)

    Within every level the residuals (scores minus the simulated mean) are regressed on the fixed design
    centred in the level; the statistic is the sum over levels of the squares these regressions explain. A
    random intercept explains none of it; a slope the model lacks, or that it makes too small, explains more
    than in the simulated data sets.

    Parameters
    ----------
    residual : numpy.ndarray
        The observed scores minus the simulated mean (``marginal_residuals``).
    simulated_residual : numpy.ndarray
        n × S: every simulated data set minus the others' mean.
    X : numpy.ndarray
        The n × p fixed-effects design.
    codes : numpy.ndarray
        Every row's level of ``group``.
    n_levels : int
        Levels of ``group``.
    group : str
        The grouping factor's name, for the sentence.

    Returns
    -------
    CheckTest
        The explained sum of squares over its simulated mean, the p-value and a sentence; None when no fixed
        effect varies within any level (there is no slope to check).
    """
    indicator, counts = _level_indicator(codes, n_levels)
    centred = X - (indicator @ X / np.maximum(counts, 1)[:, None])[codes]
    gram = np.stack([indicator @ (centred * centred[:, [k]]) for k in range(X.shape[1])], axis=2)  # L × p × p
    if not np.any(gram.any(axis=(1, 2))):
        return None
    inverse = np.linalg.pinv(gram, rcond=1e-10, hermitian=True)
    everything = np.column_stack([residual, simulated_residual])                    # n × (S + 1)
    products = np.stack([indicator @ (centred[:, [k]] * everything) for k in range(X.shape[1])], axis=1)  # L×p×(S+1)
    explained = np.einsum("lps,lpq,lqs->s", products, inverse, products)
    ratio = float(explained[0] / np.mean(explained[1:]))
    p = monte_carlo_p(explained[0], explained[1:])
    texts = (f"Within the levels of {group} the fixed effects explain as much residual variation as in "
             f"simulated data (ratio {ratio:.2f}, p = {p:.3g}): no sign of a missing random slope.",
             f"Within the levels of {group} the fixed effects explain {ratio:.2f} times the residual variation "
             f"they explain in simulated data (p = {p:.3g}): their effect differs between levels of {group}, "
             f"a random slope the model lacks or makes too small.")
    return CheckTest("within-level structure", group, ratio, p, texts)


def outlying_levels_test(residual: np.ndarray, simulated_residual: np.ndarray, codes: np.ndarray, levels,
                         group: str) -> CheckTest:
    """Is a level of ``group`` further in the tails than the model expects? Every level's mean residual.

    Each level's mean residual (score minus the simulated mean) is standardized by its simulated mean and
    SD; the statistic is the largest |z| over levels, read against the simulated data sets' largest |z|.
    The levels named are those beyond the Bonferroni bound of a normal z at 5 %.

    Parameters
    ----------
    residual : numpy.ndarray
        The observed scores minus the simulated mean (``marginal_residuals``).
    simulated_residual : numpy.ndarray
        n × S: every simulated data set minus the others' mean.
    codes : numpy.ndarray
        Every row's level of ``group``.
    levels : sequence
        The level labels, in code order.
    group : str
        The grouping factor's name, for the sentence.

    Returns
    -------
    CheckTest
        The largest |z|, its p-value, the outlying levels with their z, and a sentence.
    """
    n_levels = len(levels)
    indicator, counts = _level_indicator(codes, n_levels)
    means = np.column_stack([indicator @ residual, indicator @ simulated_residual]) / np.maximum(counts, 1)[:, None]
    centre, spread = means[:, 1:].mean(axis=1), means[:, 1:].std(axis=1)
    spread = np.where(spread > 0, spread, np.inf)
    z = (means - centre[:, None]) / spread[:, None]
    largest = np.abs(z).max(axis=0)
    p = monte_carlo_p(largest[0], largest[1:])
    bound = float(ndtri(1.0 - ALPHA / (2 * n_levels)))
    outlying = [{"level": str(levels[i]), "z": float(z[i, 0])}
                for i in np.argsort(-np.abs(z[:, 0])) if abs(z[i, 0]) > bound]
    named = ", ".join(f"{o['level']} (z = {o['z']:+.2f})" for o in outlying[:5]) + (" ..." if len(outlying) > 5 else "")
    texts = (f"No level of {group} lies further in the tails than the model expects (largest |z| "
             f"{largest[0]:.2f}, p = {p:.3g}).",
             f"Some levels of {group} lie further in the tails than the model expects (largest |z| "
             f"{largest[0]:.2f}, p = {p:.3g})" + (f": {named}." if outlying else "."))
    return CheckTest("outlying levels", group, float(largest[0]), p, texts, {"outlying": outlying, "bound": bound})


def _level_indicator(codes: np.ndarray, n_levels: int) -> tuple[sp.csr_matrix, np.ndarray]:
    """The levels × rows 0/1 matrix of which level every row is in, and every level's row count (as floats)."""
    indicator = sp.csr_matrix((np.ones(len(codes)), (codes, np.arange(len(codes)))), shape=(n_levels, len(codes)))
    return indicator, np.bincount(codes, minlength=n_levels).astype(float)
