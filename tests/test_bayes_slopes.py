"""The Bayesian model with correlated random effects: its compiled density against PyMC's model of the same
posterior, its posterior against lme4's REML fit and against simulations with known truth, and its errors."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrepro.bayes.term_model import term_density, term_layouts
from bayesrepro.bayes.term_priors import term_priors
from bayesrepro.data import read_table
from bayesrepro.design import build_model_frame, parse_formula
from conftest import brms_available

HERE = Path(__file__).parent
ROOT = HERE.parent
SLEEP = HERE / "data" / "sleepstudy.csv.gz"
SLEEP_FORMULA = "Reaction ~ Days + (Days|Subject)"


def _frame(formula, data):
    return build_model_frame(parse_formula(formula, slopes=True), data)


def _three_column_data(seed=3):
    """A term of three columns (intercept, x, a two-level condition) and a second, crossed intercept term."""
    rng = np.random.default_rng(seed)
    g = np.repeat(np.arange(12), 8)
    h = np.tile(np.arange(4), 24)
    x = rng.normal(size=g.size)
    c = rng.integers(0, 2, g.size)
    y = 1.0 + 0.5 * x + rng.normal(size=12)[g] + 0.4 * rng.normal(size=12)[g] * x + rng.normal(size=4)[h] \
        + rng.normal(size=g.size)
    return pd.DataFrame({"y": y, "x": x, "c": np.where(c == 1, "b", "a"), "g": [f"g{v}" for v in g],
                         "h": [f"h{v}" for v in h]})


CASES = {
    "sleepstudy-scaled": (SLEEP_FORMULA, lambda: read_table(SLEEP), "scaled"),
    "three-columns-brms": ("y ~ x + c + (1 + x + c|g) + (1|h)", _three_column_data, "brms"),
}


def _setup(case):
    formula, data, prior = CASES[case]
    frame = _frame(formula, data())
    terms = term_layouts(frame)
    priors = term_priors(frame, terms, prior)
    return frame, terms, priors, term_density(frame, terms, priors)


def _pymc_model(frame, terms, priors):
    """The same posterior written with PyMC's distributions: every SD on its log scale (PyMC's default transform),
    the correlations untransformed (``LKJCorr``'s upper triangle), effects b = diag(τ) chol(R) u."""
    import pymc as pm
    import pytensor.tensor as pt

    X = frame.X - priors.x_means
    with pm.Model() as model:
        beta = []
        for j in range(X.shape[1]):
            mu, sigma, nu = priors.fixed_mu[j], priors.fixed_sigma[j], priors.fixed_nu[j]
            if np.isinf(sigma):
                beta.append(pm.Flat(f"b{j}"))
            elif np.isinf(nu):
                beta.append(pm.Normal(f"b{j}", mu, sigma))
            else:
                beta.append(pm.StudentT(f"b{j}", nu=nu, mu=mu, sigma=sigma))
        mean = pt.dot(X, pt.stack(beta))
        column = 0
        for t, term in enumerate(terms):
            taus = []
            for c in range(term.nc):
                nu, scale = priors.sd_nu[column + c], priors.sd_scale[column + c]
                dist = pm.HalfNormal if np.isinf(nu) else pm.HalfStudentT
                taus.append(dist(f"tau{t}_{c}", sigma=scale, **({} if np.isinf(nu) else {"nu": nu})))
            column += term.nc
            u = pm.Normal(f"u{t}", 0.0, 1.0, shape=(len(term.levels), term.nc))
            if term.nc > 1:
                corr = pm.LKJCorr(f"corr{t}", n=term.nc, eta=priors.eta[t], default_transform=None)
                chol = pt.linalg.cholesky(pm.LKJCorr.vec_to_corr_mat(corr, term.nc))
                effects = pt.dot(u, chol.T) * pt.stack(taus)
            else:
                effects = u * pt.stack(taus)
            mean = mean + pt.sum(term.matrix * effects[term.codes], axis=1)
        sigma_dist = pm.HalfNormal if np.isinf(priors.residual_nu) else pm.HalfStudentT
        extra = {} if np.isinf(priors.residual_nu) else {"nu": priors.residual_nu}
        sigma = sigma_dist("sigma", sigma=priors.residual_sigma, **extra)
        pm.Normal("y", mean, sigma, observed=frame.y)
    return model


def _point(x, frame, terms, density):
    """PyMC's coordinates of the compiled density's point x (correlations from the recorded draws) and
    log |∂(correlations)/∂w|, by central differences."""
    p = frame.X.shape[1]
    out = np.empty(density.n_expanded)
    density.expand(x, density.floats, density.ints, out)
    point = {f"b{j}": x[j] for j in range(p)}
    point["sigma_log__"] = x[p]
    offset, position, jacobian = p + 1, p + 1, 0.0
    for t, term in enumerate(terms):
        m = term.nc * (term.nc - 1) // 2
        for c in range(term.nc):
            point[f"tau{t}_{c}_log__"] = x[offset + c]
        position += term.nc
        if m:
            recorded = out[position:position + m]
            position += m
            upper = {pair: k for k, pair in enumerate(term.pairs)}   # recorded (j, i), i > j; PyMC: triu row-major
            rows, cols = np.triu_indices(term.nc, 1)
            order = [upper[(r, c)] for r, c in zip(rows, cols)]
            point[f"corr{t}"] = recorded[order]
            jacobian += _log_abs_det(lambda w: _correlations(x, offset + term.nc, w, density, position - m, m)[order],
                                     x[offset + term.nc:offset + term.nc + m])
        point[f"u{t}"] = x[offset + term.nc + m:offset + term.nc + m + len(term.levels) * term.nc].reshape(-1, term.nc)
        offset += term.nc + m + len(term.levels) * term.nc
    return point, jacobian


def _correlations(x, start, w, density, position, m):
    moved = x.copy()
    moved[start:start + len(w)] = w
    out = np.empty(density.n_expanded)
    density.expand(moved, density.floats, density.ints, out)
    return out[position:position + m]


def _log_abs_det(f, w, h=1e-6):
    J = np.column_stack([(f(w + h * e) - f(w - h * e)) / (2 * h) for e in np.eye(len(w))])
    return float(np.linalg.slogdet(J)[1])


def _points(n_dim, seed, k=4):
    rng = np.random.default_rng(seed)
    return [rng.normal(0.0, 1.0, n_dim) for _ in range(k)]


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_density_equals_pymcs_model_of_the_same_posterior(case):
    frame, terms, priors, density = _setup(case)
    logp = _pymc_model(frame, terms, priors).compile_logp()
    values = []
    for x in _points(density.n_dim, 7):
        x[: frame.X.shape[1]] += density.initial_point[: frame.X.shape[1]]   # coefficients near the data
        x[frame.X.shape[1]] += density.initial_point[frame.X.shape[1]]
        ours, _ = density.value_and_gradient(x)
        point, jacobian = _point(x, frame, terms, density)
        values.append((ours, float(logp(point)) + jacobian))
    # the compiled density leaves out the priors' normalising constants: differences between points must agree
    ours, theirs = np.array(values).T
    np.testing.assert_allclose(ours[1:] - ours[0], theirs[1:] - theirs[0], rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("case", list(CASES))
def test_compiled_gradient_equals_central_differences(case):
    _, _, _, density = _setup(case)
    x = _points(density.n_dim, 11, k=1)[0] * 0.5 + density.initial_point
    _, gradient = density.value_and_gradient(x)
    h = 1e-5
    numeric = np.array([(density.value_and_gradient(x + h * e)[0] - density.value_and_gradient(x - h * e)[0]) / (2 * h)
                        for e in np.eye(density.n_dim)])
    np.testing.assert_allclose(gradient, numeric, rtol=1e-5, atol=1e-6 * max(1.0, np.abs(gradient).max()))


def _lme4_sleepstudy():
    rows = json.loads((HERE / "reference" / "lme4_slopes.json").read_text())["models"]["sleep_correlated"]["REML"]
    return {(row["var1"], row["var2"]) if row["grp"] != "Residual" else ("Residual", None): row["sdcor"]
            for row in rows["varcorr"]}


def _posterior_rows(posterior):
    return {(row["var1"].replace("Intercept", "(Intercept)") if row["var1"] else "Residual",
             row["var2"].replace("Intercept", "(Intercept)") if row["var2"] else None): row
            for row in posterior.to_dict()["random_effects"]}


def test_posterior_medians_lie_near_lme4s_reml_estimates_on_sleepstudy():
    import bayesrepro as br

    posterior = br.Model(SLEEP_FORMULA, SLEEP).sample(draws=1000, chains=4, seed=1)
    rows = _posterior_rows(posterior)
    assert list(posterior.random_effects["median"]) == [row["median"] for row in rows.values()]
    reml = _lme4_sleepstudy()
    assert set(rows) == set(reml)
    for key, estimate in reml.items():
        row = rows[key]
        # with 18 subjects the posterior median and the REML mode of an SD differ by the skew of its posterior and
        # the prior's pull, a small part of the posterior's spread (here at most 5 % of its 95 % interval)
        assert abs(row["median"] - estimate) < 0.15 * (row["high"] - row["low"]), key
        assert row["low"] < estimate < row["high"], key
        assert row["r_hat"] < 1.01 and row["ess_bulk"] > 400
    # φ is the subjects' share by Johnson's definition, computed per draw: its median near the REML fit's φ
    fit = br.Model(SLEEP_FORMULA, SLEEP, object="Subject").fit()
    phi = posterior.to_dict()["phi"]
    assert phi["low"] < fit.to_dict()["phi"] < phi["high"]


BRMS = json.loads((HERE / "reference" / "brms_slopes.json").read_text())
BRMS_NAMES = {"sd_Intercept": ("(Intercept)", None), "sd_Days": ("Days", None), "cor": ("(Intercept)", "Days"),
              "sigma": ("Residual", None)}
BRMS_TOLERANCE = 0.06   # of brms's 90 % interval width


def _brms_quantiles(posterior):
    draws = posterior.bayes.draws
    values = {"sd_Intercept": draws["sd|Subject"][..., 0], "sd_Days": draws["sd|Subject"][..., 1],
              "cor": draws["corr|Subject"][..., 0], "sigma": draws["sigma"]}
    return {name: np.quantile(v, [0.05, 0.5, 0.95]) for name, v in values.items()}


def _check_against_brms(posterior, reference):
    for name, ours in _brms_quantiles(posterior).items():
        theirs = reference["quantiles"][name]
        width = theirs["0.95"] - theirs["0.05"]
        for q, value in zip(("0.05", "0.5", "0.95"), ours):
            assert abs(value - theirs[q]) <= BRMS_TOLERANCE * width, (name, q, value, theirs[q])


def test_brms_priors_give_brms_posterior_quantiles_on_sleepstudy():
    """16,000 draws (bulk ESS of the correlation about 3,000): the Monte Carlo error of a 5 % or 95 % quantile is
    about 1 % of the 90 % width, brms's 20,000 draws (ESS over 5,000) add under 1 %; 6 % leaves over four
    standard errors."""
    import bayesrepro as br

    posterior = br.Model(SLEEP_FORMULA, SLEEP).sample(draws=4000, chains=4, seed=5, prior="brms")
    _check_against_brms(posterior, BRMS)
    assert any("StudentT(nu=3, mu=288.7, sigma=59.3)" in prior for prior in posterior.bayes.prior_table["prior"])


@pytest.mark.ondemand
def test_brms_reference_rerun_in_r_agrees(tmp_path):
    import bayesrepro as br

    if not brms_available():
        pytest.skip("Rscript with brms is not installed")
    out = tmp_path / "brms.json"
    subprocess.run(["Rscript", str(HERE / "reference" / "brms_slopes.R"), str(out)], check=True, timeout=1800)
    posterior = br.Model(SLEEP_FORMULA, SLEEP).sample(draws=4000, chains=4, seed=5, prior="brms")
    _check_against_brms(posterior, json.loads(out.read_text()))


def _run(*args):
    return subprocess.run([sys.executable, "-m", "bayesrepro", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def test_phi_json_holds_random_effect_rows_and_johnsons_components():
    result = _run("phi", str(SLEEP), "--formula", SLEEP_FORMULA, "--object", "Subject", "--seed", "1", "--json")
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert [(r["group"], r["var1"], r["var2"]) for r in out["random_effects"]] == [
        ("Subject", "Intercept", None), ("Subject", "Days", None), ("Subject", "Intercept", "Days"),
        ("Residual", None, None)]
    assert set(out["random_effects"][0]) == {"group", "var1", "var2", "median", "low", "high", "r_hat", "ess_bulk",
                                             "ess_tail"}
    assert [c["name"] for c in out["components"]] == ["Subject", "Residual"]
    assert out["diagnostics"]["converged"]


@pytest.mark.filterwarnings("ignore:the sampler did not converge")   # a short run: only the algebra is checked
def test_johnsons_subject_variance_per_draw_is_the_mean_of_zsz_over_rows():
    import bayesrepro as br

    posterior = br.Model(SLEEP_FORMULA, SLEEP).sample(draws=200, tune=300, chains=2, seed=3, allow_unconverged=True)
    draws = posterior.bayes.draws
    sd, corr = draws["sd|Subject"][0, :5], draws["corr|Subject"][0, :5, 0]
    days = read_table(SLEEP)["Days"].to_numpy(float)
    expected = [np.mean(s[0] ** 2 + 2 * r * s[0] * s[1] * days + s[1] ** 2 * days**2) for s, r in zip(sd, corr)]
    np.testing.assert_allclose(draws["variance"][0, :5, 0], expected, rtol=1e-12)


@pytest.mark.parametrize("extra, message", [
    (["--backend", "bambi"], "--backend bambi cannot fit random slopes"),
    (["--sampler", "pymc"], "--sampler pymc cannot fit random slopes"),
    (["--prior", "r2d2"], "--prior 'r2d2' is not offered for random slopes"),
    (["--prior-scale", "Subject=3"], "--prior-scale applies to random-intercept models"),
])
def test_slope_models_refuse_options_they_do_not_take(extra, message):
    result = _run("phi", str(SLEEP), "--formula", SLEEP_FORMULA, *extra)
    assert result.returncode == 2
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_simulated_designs_recover_their_sds_and_correlation():
    """Six datasets of 60 subjects × 10 days: each 90 % interval holds the truth in at least four of the six
    (probability 0.98 for calibrated intervals), and the medians averaged over the datasets lie within 10 % of the
    SDs and 0.15 of the correlation (their spread between datasets is about 5 % and 0.05 at this size)."""
    import bayesrepro as br
    from bayesrepro.simulate import SlopeTruth, repeated_measures

    truth = SlopeTruth(correlation=0.5, residual_sd=10.0)
    expected = {("Intercept", None): truth.intercept_sd, ("day", None): truth.slope_sd,
                ("Intercept", "day"): truth.correlation, (None, None): truth.residual_sd}
    covered = {key: 0 for key in expected}
    medians = {key: [] for key in expected}
    for seed in range(6):
        data = repeated_measures(60, 10, truth, random_state=100 + seed)
        posterior = br.Model("y ~ day + (day|subject)", data).sample(draws=2000, chains=4, seed=seed, prob=0.9)
        for row in posterior.to_dict()["random_effects"]:
            key = (row["var1"], row["var2"])
            covered[key] += row["low"] <= expected[key] <= row["high"]
            medians[key].append(row["median"])
    for key, value in expected.items():
        assert covered[key] >= 4, (key, covered[key])
        limit = 0.15 if key[1] else 0.1 * value
        assert abs(np.mean(medians[key]) - value) < limit, (key, medians[key])


@pytest.mark.filterwarnings("ignore:the sampler did not converge")   # a short run: the layout is checked
def test_brms_priors_on_an_intercept_model_are_sampled_on_the_same_compiled_model():
    import bayesrepro as br

    posterior = br.Model("Reaction ~ Days + (1|Subject)", SLEEP).sample(draws=500, chains=4, seed=1, prior="brms",
                                                                       allow_unconverged=True)
    out = posterior.to_dict()
    assert [(r["group"], r["var1"]) for r in out["random_effects"]] == [("Subject", "Intercept"), ("Residual", None)]
    # the subjects' share: its variance is the intercept SD squared, draw by draw
    draws = posterior.bayes.draws
    np.testing.assert_allclose(draws["variance"][..., 0], draws["sd|Subject"][..., 0] ** 2, rtol=1e-12)
    assert "flat" in set(posterior.bayes.prior_table["prior"])


def test_python_callers_are_told_the_argument_not_the_flag():
    import bayesrepro as br
    from bayesrepro.errors import BayesreproError

    with pytest.raises(BayesreproError, match=r'^backend="bambi" cannot fit random slopes'):
        br.Model(SLEEP_FORMULA, SLEEP).sample(backend="bambi")
    with pytest.raises(BayesreproError, match=r"^prior='r2d2' is not offered for random slopes"):
        br.Model(SLEEP_FORMULA, SLEEP).sample(prior="r2d2")


def test_phi_of_independent_terms_counts_every_term_of_the_object_as_reml_does():
    """``(Days || Subject)`` is two terms of one factor: φ takes both (their sum is what ``(Days | Subject)``
    gives Subject with a zero correlation), on both engines."""
    import bayesrepro as br

    model = br.Model("Reaction ~ Days + (Days||Subject)", read_table(SLEEP), object="Subject",
                     categorical=["Subject"])
    reml, posterior = model.fit(), model.sample(draws=1000, tune=1000, chains=4, seed=1)
    variances = posterior.components["variance"]
    alone = variances["Subject"] / variances.sum()   # the intercept term's share alone: far below φ
    assert posterior.phi["low"] < reml.phi < posterior.phi["high"]
    assert posterior.phi["low"] > alone
