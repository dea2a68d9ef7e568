"""The random-slope posterior with its effects integrated out: its density against the exact multivariate-normal
marginal likelihood, its closed-form gradient against central differences, the choice between it and the
non-centred density, and (slow) its posterior against the non-centred sampler's on two designs."""

import numpy as np
import pandas as pd
import pytest
import scipy.stats

from bayesrepro.bayes.collapsed_slope_model import (
    _sampled_coordinates,
    collapsed_density,
    collapses,
    effect_layout,
    faster_density,
)
from bayesrepro.bayes.compiled_sampler import sample_compiled
from bayesrepro.bayes.sampling import SamplingSettings
from bayesrepro.bayes.term_model import term_density, term_layouts
from bayesrepro.bayes.term_priors import term_priors
from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame, parse_formula
from test_bayes_slopes import SLEEP, SLEEP_FORMULA, _three_column_data


def _crossed_data(subjects=12, items=8, reps=2, seed=4):
    """Subjects with an intercept and a slope, crossed with items that have an intercept."""
    rng = np.random.default_rng(seed)
    s = np.repeat(np.arange(subjects), items * reps)
    i = np.tile(np.repeat(np.arange(items), reps), subjects)
    x = rng.normal(size=s.size)
    y = (2.0 + 0.3 * x + rng.normal(size=subjects)[s] + 0.5 * rng.normal(size=subjects)[s] * x
         + 0.7 * rng.normal(size=items)[i] + rng.normal(size=s.size))
    return pd.DataFrame({"y": y, "x": x, "subject": [f"s{v}" for v in s], "item": [f"i{v}" for v in i]})


CASES = {
    "sleepstudy-brms": (SLEEP_FORMULA, lambda: read_table(SLEEP), "brms"),
    "three-columns-scaled": ("y ~ x + c + (1 + x + c|g) + (1|h)", _three_column_data, "scaled"),
}


def _setup(formula, data, prior):
    frame = build_model_frame(parse_formula(formula, slopes=True), data())
    terms = term_layouts(frame)
    priors = term_priors(frame, terms, prior)
    noncentred = term_density(frame, terms, priors)
    return frame, terms, priors, noncentred, collapsed_density(noncentred, frame, terms, priors, effect_layout(terms))


def _exact_minus_ours(x, frame, terms, priors, noncentred, collapsed):
    """log N(y; Xβ, σ²I + Z Σ_b Z') plus the priors, less the collapsed density, at x. The priors are the
    non-centred density at the same point with zero effects, less its likelihood there; Σ_b is built from the
    recorded SDs and correlations, level by level."""
    p = frame.X.shape[1]
    point = np.zeros(noncentred.n_dim)
    point[_sampled_coordinates(p, terms)] = x
    X = np.asarray(frame.X, dtype=float) - priors.x_means
    y = np.asarray(frame.y, dtype=float)
    sigma, residual = np.exp(x[p]), y - X @ x[:p]
    prior = noncentred.value_and_gradient(point)[0] + len(y) * x[p] + 0.5 * residual @ residual / sigma**2
    recorded = np.empty(noncentred.n_expanded)
    noncentred.expand(point, noncentred.floats, noncentred.ints, recorded)
    V, position = sigma**2 * np.eye(len(y)), p + 1
    for term in terms:
        sd = recorded[position:position + term.nc]
        R = np.eye(term.nc)
        for k, (j, i) in enumerate(term.pairs):
            R[i, j] = R[j, i] = recorded[position + term.nc + k]
        position += term.nc + len(term.pairs)
        same_level = term.codes[:, None] == term.codes[None, :]
        V += same_level * (term.matrix @ (R * np.outer(sd, sd)) @ term.matrix.T)
    exact = prior + scipy.stats.multivariate_normal(X @ x[:p], V).logpdf(y)
    return exact - collapsed.value_and_gradient(x)[0]


def _points(density, seed, k):
    rng = np.random.default_rng(seed)
    return [density.initial_point + 0.5 * rng.normal(size=density.n_dim) for _ in range(k)]


@pytest.mark.parametrize("case", list(CASES))
def test_collapsed_density_is_the_exact_marginal_likelihood_with_the_same_priors(case):
    frame, terms, priors, noncentred, collapsed = _setup(*CASES[case])
    differences = [_exact_minus_ours(x, frame, terms, priors, noncentred, collapsed) for x in _points(collapsed, 3, 4)]
    # the compiled density leaves out 2π's constant, n/2 log 2π, and nothing else
    np.testing.assert_allclose(differences, -0.5 * len(frame.y) * np.log(2 * np.pi), rtol=0, atol=1e-7)


@pytest.mark.parametrize("case", list(CASES))
def test_collapsed_gradient_equals_central_differences(case):
    collapsed = _setup(*CASES[case])[-1]
    for x in _points(collapsed, 5, 2):
        _, gradient = collapsed.value_and_gradient(x)
        h = 1e-5
        numeric = np.array([(collapsed.value_and_gradient(x + h * e)[0] - collapsed.value_and_gradient(x - h * e)[0])
                            / (2 * h) for e in np.eye(collapsed.n_dim)])
        np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(gradient).max()))


def test_levels_sharing_rows_form_one_block_of_zz():
    one_term = effect_layout(_setup(SLEEP_FORMULA, lambda: read_table(SLEEP), "scaled")[1])
    assert list(np.diff(one_term.components)) == [2] * 18   # one block per subject
    crossed = effect_layout(_setup("y ~ x + (1 + x|subject) + (1|item)", _crossed_data, "scaled")[1])
    assert list(crossed.components) == [0, 12 * 2 + 8]      # subjects and items connected through their rows
    # every column of Z lands once, its level's columns side by side
    assert crossed.Z.shape == (12 * 8 * 2, 32) and np.all(crossed.Z.getnnz(axis=1) == 3)


def test_the_collapsed_density_is_taken_where_it_costs_less():
    frame, terms, priors, noncentred, _ = _setup(SLEEP_FORMULA, lambda: read_table(SLEEP), "brms")
    assert faster_density(noncentred, frame, terms, priors).n_dim == 6   # β (2), σ, two SDs, a correlation
    # 96 rows and a block of 40 columns: the non-centred density's rows cost less than the block's factorisation
    frame, terms, priors, noncentred, _ = _setup(*CASES["three-columns-scaled"])
    assert faster_density(noncentred, frame, terms, priors) is noncentred
    # the same block is worth factorising for 20 times the rows
    layout = effect_layout(terms)
    assert collapses(layout, 96 * 20, 11) and not collapses(layout, 96, 11)


def _quantile_gap(ours, theirs, prob):
    """|difference| of a quantile of two samples (chain, draw) over the root sum of squares of their Monte Carlo
    standard errors (ArviZ's, from the effective sample size)."""
    import arviz

    se = [float(arviz.mcse(np.asarray(v), method="quantile", prob=prob)) for v in (ours, theirs)]
    return abs(np.quantile(ours, prob) - np.quantile(theirs, prob)) / np.hypot(*se)


@pytest.mark.slow
@pytest.mark.parametrize("formula, data, prior", [
    (SLEEP_FORMULA, lambda: read_table(SLEEP), "scaled"),
    ("y ~ x + (1 + x|subject) + (1|item)", _crossed_data, "brms"),
])
def test_collapsed_and_noncentred_samplers_agree_within_monte_carlo_error(formula, data, prior):
    """5 %, 50 % and 95 % quantiles of every SD, correlation, σ and φ from 4 × 3,000 draws of each sampler: 8
    quantiles × 4-6 values per design, each gap under 4 Monte Carlo standard errors (a gap of 4 has
    probability 6e-5 for one pair of calibrated samples)."""
    from bayesrepro.bayes.posterior import add_reliability
    from bayesrepro.bayes.term_layout import term_covariances
    from bayesrepro.frequentist.covariance_structure import rows_variance
    from bayesrepro.reliability import RESIDUAL

    frame, terms, _, noncentred, collapsed = _setup(formula, data, prior)
    settings = SamplingSettings.of(None, draws=3000, tune=1000, chains=4, seed=2, progress=False)
    samples = []
    for density in (collapsed, noncentred):
        draws = sample_compiled(density, settings)
        variances = {term.group: rows_variance(term_covariances(draws, term), term.mean_outer) for term in terms}
        variances[RESIDUAL] = draws["sigma"] ** 2
        add_reliability(draws, variances, terms[0].group, terms=frame.spec.random_terms)
        samples.append(draws)
    names = ["sigma", "phi"] + [f"sd|{t.group}" for t in terms] + [f"corr|{t.group}" for t in terms if t.nc > 1]
    for name in names:
        ours, theirs = samples[0][name], samples[1][name]
        for k in range(1 if ours.ndim == 2 else ours.shape[-1]):
            pair = (ours, theirs) if ours.ndim == 2 else (ours[..., k], theirs[..., k])
            for prob in (0.05, 0.5, 0.95):
                assert _quantile_gap(*pair, prob) < 4.0, (name, k, prob)
