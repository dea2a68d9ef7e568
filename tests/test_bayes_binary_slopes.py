"""The posterior of binary (Bernoulli and binomial) models with random slopes: its density, glmer, brms, truth.

References: glmer's Laplace ML fits of tests/reference/glmer_slopes.R (weak priors, informative data: the
posterior median lies near the ML estimate), brms's posterior of tests/reference/brms_binary_slopes.R (the same
priors on both sides: quantiles agree up to Monte Carlo error) and data simulated here with a known truth.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.design import model_frame, parse_formula
from bayesrepro.bayes.binary_slope_model import centring
from bayesrepro.bayes.term_model import term_density, term_layouts
from bayesrepro.bayes.term_priors import term_priors

HERE = Path(__file__).parent
DATA = HERE / "data"
GLMER = json.loads((HERE / "reference" / "glmer_slopes.json").read_text())
BRMS = HERE / "reference" / "brms_binary_slopes.json"
# Posterior median against the ML estimate, in posterior SDs (the 90 % interval's width / 3.29). With weak priors
# the two differ by the skewness of the marginal posterior (of order SD / √levels for an SD of 40-60 levels) plus
# Monte Carlo error (about 0.05 SD at a bulk ESS of 400); on crossed_maximal the largest distance was 0.3 SD.
MEDIAN_IN_SDS = 0.5
# brms and our sampler target the same posterior: each 5 %, 50 % and 95 % quantile agrees within 6 % of brms's
# 90 % width. At the smallest bulk ESS (the intercept's: about 1,250 of ours at 4 × 4,000 draws, 2,100 of brms's)
# the Monte Carlo SE of the difference of two 5 % quantiles is about 2.3 % of the width, of the SDs' (ESS above
# 2,300 on both sides) 1.9 %, of two medians about 1.3 %: 6 % is 2.6 to 4.6 SEs; the largest difference was 2.9 %.
BRMS_WIDTH_SHARE = 0.06
DATASETS = {"binary_crossed": "binary_crossed.csv.gz", "binary_counts": "binary_counts.csv.gz"}


def _frame(data, formula):
    table = data if isinstance(data, pd.DataFrame) else pd.read_csv(DATA / DATASETS[data])
    return model_frame(parse_formula(formula, slopes=True), table)


GRADIENT_CASES = [
    ("logit", "scaled", "y ~ c + arm + (1 + c + arm | subject) + (1 | item)", "binary_crossed"),
    ("probit", "brms", "y ~ c + (1 + c | subject) + (0 + c | item)", "binary_crossed"),
    ("logit", "brms", "p(s, n) ~ c + arm + (1 + c | subject)", "binary_counts"),
]


def _small_densities(link, prior, formula, data):
    """The non-centred and the partially centred density of a few subjects (and items) of ``data``."""
    table = pd.read_csv(DATA / DATASETS[data])
    table = table[table["subject"].isin(sorted(table["subject"].unique())[:8])]
    if "item" in table:
        table = table[table["item"].isin(sorted(table["item"].unique())[::4])]
    frame = _frame(table, formula)
    terms = term_layouts(frame)
    priors = term_priors(frame, terms, prior, binary=True)
    pilot = term_density(frame, terms, priors, link)
    return pilot, term_density(frame, terms, priors, link, centring(pilot, frame, terms, priors, link)), terms


@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("link, prior, formula, data", GRADIENT_CASES)
def test_gradient_matches_finite_differences(link, prior, formula, data, centred):
    density = _small_densities(link, prior, formula, data)[centred]
    x = np.random.default_rng(1).normal(0.0, 0.7, density.n_dim)
    _, gradient = density.value_and_gradient(x)
    step = 1e-6
    numeric = [(density.value_and_gradient(x + e)[0] - density.value_and_gradient(x - e)[0]) / (2 * step)
               for e in np.eye(density.n_dim) * step]
    np.testing.assert_allclose(gradient, numeric, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("link, prior, formula, data", GRADIENT_CASES)
def test_partially_centred_density_is_the_same_posterior(link, prior, formula, data):
    """Both densities are the posterior density of (β, Σ, b) times the Jacobian of their coordinates to b: at any
    point of the partially centred one and the point of the non-centred one with the same effects,
    u_l = (diag(τ) L)^-1 b_l, the two differ by the log Jacobians, log |db/dz| (b is linear in z: its columns are
    differences of b at unit steps) and Σ_l log |diag(τ) L|."""
    pilot, centred, terms = _small_densities(link, prior, formula, data)
    p = len(centred.coords["fixed_effect"])
    covariances = sum(t.nc * (t.nc + 1) // 2 for t in terms)
    n_effects = sum(t.nc * len(t.levels) for t in terms)
    z_index, start = [], p   # the elements of x that are z: each term's after its log SDs and correlations
    for term in terms:
        start += term.nc * (term.nc + 1) // 2
        z_index += range(start, start + term.nc * len(term.levels))
        start += term.nc * len(term.levels)

    def recorded(x):
        out = np.empty(centred.n_expanded)
        centred.expand(x, centred.floats, centred.ints, out)
        return out

    rng = np.random.default_rng(3)
    for _ in range(3):
        x = rng.normal(0.0, 0.7, centred.n_dim)
        values = recorded(x)
        effects = values[p + covariances:]
        jacobian = np.column_stack([recorded(x + np.eye(centred.n_dim)[k])[p + covariances:] - effects
                                    for k in z_index])
        assert jacobian.shape == (n_effects, n_effects)
        log_jacobian_z = np.linalg.slogdet(jacobian)[1]
        position, offset, old, log_jacobian_u = p, p, x.copy(), 0.0
        for term in terms:
            nc, n_levels = term.nc, len(term.levels)
            sd, corr = values[position:position + nc], values[position + nc:position + nc * (nc + 1) // 2]
            position += nc * (nc + 1) // 2
            correlation = np.eye(nc)
            for k, (j, i) in enumerate(term.pairs):
                correlation[i, j] = correlation[j, i] = corr[k]
            factor = np.diag(sd) @ np.linalg.cholesky(correlation)
            log_jacobian_u += n_levels * np.linalg.slogdet(factor)[1]
            b, effects = effects[:n_levels * nc].reshape(n_levels, nc), effects[n_levels * nc:]
            first = offset + nc * (nc + 1) // 2
            old[first:first + n_levels * nc] = np.linalg.solve(factor, b.T).T.ravel()
            offset = first + n_levels * nc
        assert centred.value_and_gradient(x)[0] - log_jacobian_z == pytest.approx(
            pilot.value_and_gradient(old)[0] - log_jacobian_u, rel=1e-9)


def test_likelihood_is_the_binomial_one():
    """With the effects at zero, moving the intercept changes the density by the binomial log-likelihood of the
    fixed part (the binomial coefficients cancel) and the intercept's Student-t(3, 0, 2.5) prior."""
    from scipy.special import expit

    frame = _frame("binary_counts", "p(s, n) ~ c + (1 + c | subject)")
    terms = term_layouts(frame)
    priors = term_priors(frame, terms, "brms", binary=True)
    density = term_density(frame, terms, priors, "logit")
    centred = np.asarray(frame.X, dtype=float) - priors.x_means

    def expected(beta):
        mu = expit(centred @ beta)
        loglik = np.sum(frame.y * np.log(mu) + (frame.trials - frame.y) * np.log1p(-mu))
        return loglik - 2.0 * np.log1p((beta[0] / 2.5) ** 2 / 3.0)

    def value(beta):
        x = np.zeros(density.n_dim)
        x[:2] = beta
        return density.value_and_gradient(x)[0]

    a, b = np.array([0.3, 0.6]), np.array([0.4, 0.6])
    assert value(b) - value(a) == pytest.approx(expected(b) - expected(a), rel=1e-10)


def _ml(key):
    model = GLMER["models"][key]
    sds = {(row["grp"], _column(row["var1"]), _column(row["var2"])): row["sdcor"] for row in model["varcorr"]}
    return model, sds


def _column(name):
    return None if name is None else "Intercept" if name == "(Intercept)" else name


def _check_near_ml(posterior, model, sds):
    draws = posterior.bayes.draws
    rows = posterior.random_effects
    assert "Residual" not in set(rows["group"])
    for row in rows.itertuples():
        key = (row.group, row.var1, None if pd.isna(row.var2) else row.var2)
        spread = _posterior_sd(_draws_of(draws, posterior.bayes.terms, key))
        assert abs(row.median - sds[key]) <= MEDIAN_IN_SDS * spread, (key, row.median, sds[key], spread)
    fixed = draws["fixed"]
    for j, name in enumerate(posterior.bayes.frame.fixed_names):
        ml = model["fixef"]["(Intercept)" if name == "Intercept" else name.replace("[", "").replace("]", "")]
        values = fixed[..., j]
        assert abs(np.median(values) - ml) <= MEDIAN_IN_SDS * _posterior_sd(values), name


def _posterior_sd(values):
    low, high = np.quantile(values, [0.05, 0.95])
    return (high - low) / 3.29


def _draws_of(draws, terms, key):
    group, var1, var2 = key
    term = next(t for t in terms if t.group == group)
    if var2 is None:
        return draws[f"sd|{group}"][..., term.columns.index(var1)]
    pair = term.pairs.index((term.columns.index(var1), term.columns.index(var2)))
    return draws[f"corr|{group}"][..., pair]


@pytest.mark.slow
def test_binomial_counts_are_near_glmer():
    """p(s, n) with a correlated subject slope, 240 binomial rows."""
    model, sds = _ml("counts_slope")
    posterior = br.Model(model["formula"], pd.read_csv(DATA / DATASETS["binary_counts"])).sample(
        draws=1000, tune=1000, chains=2, seed=5)
    _check_near_ml(posterior, model, sds)
    assert posterior.bayes.family == "binomial"


@pytest.mark.slow
@pytest.mark.parametrize("key", ["crossed_maximal", "crossed_maximal_probit"])
def test_crossed_slopes_are_near_glmer(key):
    model, sds = _ml(key)
    posterior = br.Model(model["formula"], pd.read_csv(DATA / DATASETS[model["data"]]), link=model["link"]).sample(
        draws=1000, tune=1000, chains=2, seed=5)
    _check_near_ml(posterior, model, sds)


@pytest.mark.slow
def test_quantiles_match_brms():
    reference = json.loads(BRMS.read_text())
    posterior = br.Model(reference["settings"]["formula"], pd.read_csv(DATA / DATASETS["binary_crossed"])).sample(
        draws=4000, tune=1000, chains=4, seed=11, prior="brms")
    draws = posterior.bayes.draws
    ours = {
        "b_Intercept": draws["fixed"][..., 0], "b_c": draws["fixed"][..., 1],
        "sd_subject_Intercept": draws["sd|subject"][..., 0], "sd_subject_c": draws["sd|subject"][..., 1],
        "cor_subject": draws["corr|subject"][..., 0], "sd_item_Intercept": draws["sd|item"][..., 0],
    }
    assert set(ours) == set(reference["quantiles"])
    for name, quantiles in reference["quantiles"].items():
        width = quantiles["0.95"] - quantiles["0.05"]
        for level, value in quantiles.items():
            assert abs(np.quantile(ours[name], float(level)) - value) <= BRMS_WIDTH_SHARE * width, (name, level)


def _simulated_counts(trials=25, seed=20261125):
    """80 subjects × 6 values of a covariate x, ``trials`` each, from a logit model with a correlated subject
    slope."""
    rng = np.random.default_rng(seed)
    subjects, x = 80, np.linspace(-1.0, 1.0, 6)
    sd, corr = np.array([0.9, 0.5]), -0.4
    covariance = np.outer(sd, sd) * np.array([[1.0, corr], [corr, 1.0]])
    effects = rng.multivariate_normal(np.zeros(2), covariance, subjects)
    subject = np.repeat(np.arange(subjects), len(x))
    xs = np.tile(x, subjects)
    eta = -0.3 + 0.8 * xs + effects[subject, 0] + effects[subject, 1] * xs
    trials = np.full(len(xs), trials)
    table = pd.DataFrame({"subject": [f"s{s:02d}" for s in subject], "x": xs, "n": trials,
                          "s": rng.binomial(trials, 1.0 / (1.0 + np.exp(-eta)))})
    truth = {("sd|subject", 0): sd[0], ("sd|subject", 1): sd[1], ("corr|subject", 0): corr,
             ("fixed", 0): -0.3, ("fixed", 1): 0.8}
    return table, truth


def test_simulated_truth_is_recovered():
    """Every parameter's truth lies in its central 99 % interval (for calibrated intervals, five parameters miss
    with probability below 5 %; the data and the sampler are seeded, so the outcome is fixed)."""
    table, truth = _simulated_counts()
    posterior = br.Model("p(s, n) ~ x + (1 + x | subject)", table).sample(draws=1000, tune=1000, chains=2, seed=7)
    draws = posterior.bayes.draws
    for (name, index), value in truth.items():
        low, high = np.quantile(draws[name][..., index], [0.005, 0.995])
        assert low <= value <= high, (name, index, low, high, value)
    assert posterior.phi["scale"] == "latent"


def test_phi_json_reports_random_effects_and_observed_phi(tmp_path):
    table, _ = _simulated_counts(trials=5)
    path = tmp_path / "counts.csv"
    table.to_csv(path, index=False)
    result = subprocess.run(
        [sys.executable, "-m", "bayesrepro", "phi", str(path), "--formula", "p(s, n) ~ x + (1 + x | subject)",
         "--json", "--draws", "1000", "--chains", "2", "--seed", "3"],
        capture_output=True, text=True, cwd=HERE.parent)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [(row["group"], row["var1"], row["var2"]) for row in out["random_effects"]] == [
        ("subject", "Intercept", None), ("subject", "x", None), ("subject", "Intercept", "x")]
    assert all({"r_hat", "ess_bulk", "ess_tail"} <= set(row) for row in out["random_effects"])
    assert out["scale"] == "latent" and out["phi_observed"]["scale"] == "observed"
    assert 0 < out["phi_observed"]["median"] < out["phi"]["median"] < 1
    assert [c["name"] for c in out["components"]] == ["subject", "Residual"]
    assert out["components"][1]["median"] == pytest.approx(np.pi**2 / 3)


def test_binary_slope_models_refuse_bambi_in_one_line(tmp_path):
    table, _ = _simulated_counts()
    path = tmp_path / "counts.csv"
    table.to_csv(path, index=False)
    result = subprocess.run(
        [sys.executable, "-m", "bayesrepro", "phi", str(path), "--formula", "p(s, n) ~ x + (1 + x | subject)",
         "--backend", "bambi"], capture_output=True, text=True, cwd=HERE.parent)
    assert result.returncode == 2
    assert "--backend bambi cannot fit random slopes" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
