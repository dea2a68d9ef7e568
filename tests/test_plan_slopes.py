"""The D-study of random-slope models: a term's variance averaged over the rows, divided by the counts.

The truth is computed here from the generating covariance matrices and the
design's rows; the definition is checked against an explicit simulation of
averaged scores, and the projection from fitted models against the truth.
"""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.errors import BayesreproError
from bayesrepro.plan.d_study import SLOPE_DEFINITION

HERE = Path(__file__).parent
COUNTS = [1, 4, 10]
# Two designs of 40 items (the object) x 20 raters: a correlated slope on the raters of an item property x, or on
# the items of a row property x; unit residual variance. x is not centred, so the correlation matters.
CASES = {
    "facet": {"formula": "y ~ x + (1|item) + (1 + x|rater)", "item": 1.0, "rater": None,
              "slope": np.array([[0.2, 0.1], [0.1, 0.6]])},
    "object": {"formula": "y ~ x + (1 + x|item) + (1|rater)", "item": None, "rater": 0.4,
               "slope": np.array([[1.0, 0.3], [0.3, 0.5]])},
}


def _design(case: str, items: int = 40, raters: int = 20):
    rng = np.random.default_rng(7)
    item, rater = np.repeat(np.arange(items), raters), np.tile(np.arange(raters), items)
    x = 1 + rng.normal(size=items)[item] if case == "facet" else 0.5 + rng.normal(size=item.size)
    return item, rater, x


def _true_phi(case: str, x: np.ndarray, n: int) -> float:
    """Φ of items averaged over n raters: mean z'Σz over the design's rows for the slope term."""
    spec = CASES[case]
    z = np.column_stack([np.ones_like(x), x])
    slope = float(np.sum(spec["slope"] * (z.T @ z / len(x))))
    item, rater = (spec["item"], slope) if case == "facet" else (slope, spec["rater"])
    return item / (item + rater / n + 1.0 / n)


def _simulate(case: str, item, rater, x, rng) -> pd.DataFrame:
    spec = CASES[case]
    if case == "facet":
        b = rng.multivariate_normal([0, 0], spec["slope"], size=rater.max() + 1)
        effects = rng.normal(0, np.sqrt(spec["item"]), item.max() + 1)[item] + b[rater, 0] + b[rater, 1] * x
    else:
        a = rng.multivariate_normal([0, 0], spec["slope"], size=item.max() + 1)
        effects = a[item, 0] + a[item, 1] * x + rng.normal(0, np.sqrt(spec["rater"]), rater.max() + 1)[rater]
    y = 1 + 0.5 * x + effects + rng.normal(size=len(x))
    return pd.DataFrame({"y": y, "x": x, "item": [f"i{k:03d}" for k in item], "rater": [f"r{k:03d}" for k in rater]})


def _projections(case: str, replicates: int, seed: int) -> np.ndarray:
    """plan's Φ at COUNTS raters from the REML fit of each simulated data set (replicates x counts)."""
    item, rater, x = _design(case)
    rng = np.random.default_rng(seed)
    return np.array([br.Model(CASES[case]["formula"], _simulate(case, item, rater, x, rng), object="item")
                     .plan(vary={"rater": COUNTS}).rows["phi"].to_numpy() for _ in range(replicates)])


def test_the_projection_is_the_pooled_within_setting_correlation_of_averaged_scores():
    """Two scores of one item at the same setting z (a row of the design), each the mean over n fresh raters with
    correlated intercepts and slopes: their pooled covariance over their pooled variance is the projected Φ."""
    _, _, x = _design("facet")
    spec, n, objects = CASES["facet"], 3, 200_000
    rng = np.random.default_rng(11)
    z = x[rng.integers(0, len(x), objects)]
    item = rng.normal(0, np.sqrt(spec["item"]), objects)
    scores = []
    for _ in range(2):
        raters = rng.multivariate_normal([0, 0], spec["slope"], size=(objects, n))
        mean_rater = (raters[..., 0] + raters[..., 1] * z[:, None]).mean(axis=1)
        scores.append(item + mean_rater + rng.normal(size=(objects, n)).mean(axis=1))
    correlation = np.mean(scores[0] * scores[1]) / np.mean((scores[0] ** 2 + scores[1] ** 2) / 2)
    # Monte-Carlo SE of a correlation near 0.5 from 200,000 pairs: about (1 - 0.25) / sqrt(200,000) = 0.0017
    assert correlation == pytest.approx(_true_phi("facet", x, n), abs=0.007)


def test_plan_divides_each_factors_averaged_variance_by_its_count():
    """plan and Fit.d_study follow the fitted SDs and correlation (random_effects) and the rows' mean of zz';
    ``(x || rater)``'s two terms are one rater component, divided together."""
    item, rater, x = _design("facet")
    data = _simulate("facet", item, rater, x, np.random.default_rng(3))
    z = np.column_stack([np.ones_like(x), x])
    mean_outer = z.T @ z / len(x)
    for formula in ("y ~ x + (1|item) + (1 + x|rater)", "y ~ x + (1|item) + (x||rater)"):
        model = br.Model(formula, data, object="item")
        fit = model.fit()
        rows = fit.random_effects
        variances = rows[rows["var2"].isna()]
        rater = variances[variances["group"].str.startswith("rater")].set_index("var1")["vcov"]
        covariance = np.diag([rater["Intercept"], rater["x"]])
        correlated = rows[rows["var2"].notna()]
        if len(correlated):
            covariance[0, 1] = covariance[1, 0] = float(correlated["vcov"].iloc[0])
        rater_variance = float(np.sum(covariance * mean_outer))
        item_variance = float(variances.loc[variances["group"] == "item", "vcov"].iloc[0])
        residual = float(variances.loc[variances["group"] == "Residual", "vcov"].iloc[0])
        expected = [item_variance / (item_variance + (rater_variance + residual) / n) for n in COUNTS]
        plan = model.plan(vary={"rater": COUNTS})
        assert plan.rows["phi"].to_numpy() == pytest.approx(expected, rel=1e-9)
        assert fit.d_study({"rater": COUNTS})["phi"].to_numpy() == pytest.approx(expected, rel=1e-9)
        assert plan.to_dict()["assumed"]["phi_definition"] == SLOPE_DEFINITION
        assert [c["name"] for c in plan.to_dict()["assumed"]["components"]] == ["item", "rater", "Residual"]


def test_fitted_projections_are_consistent_with_the_truth():
    """Sixteen fits of the rater-slope design: the mean projected Φ at one rater lies within four SEs of the truth
    (plus 0.01 for the ratio's second-order bias, about -0.006 with 40 items), and outside that band around the
    Φ of the slope term's intercept variance alone (0.45 against the truth's 0.34)."""
    _, _, x = _design("facet")
    phi = _projections("facet", 16, seed=1)[:, 0]
    tolerance = 4 * phi.std(ddof=1) / np.sqrt(len(phi)) + 0.01
    intercept_only = CASES["facet"]["item"] / (CASES["facet"]["item"] + CASES["facet"]["slope"][0, 0] + 1.0)
    assert abs(phi.mean() - _true_phi("facet", x, 1)) < tolerance
    assert abs(phi.mean() - intercept_only) > tolerance


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_fitted_projections_are_consistent_with_the_truth_at_every_count(case):
    """200 fits per design (about a minute): at 1, 4 and 10 raters the mean projected Φ lies within four
    Monte-Carlo SEs of the truth plus the ratio's second-order bias, which the delta method puts at
    ½ ∂²Φ/∂σ²_item² Var(σ̂²_item) ≈ −0.006 for the item-slope design (measured: −0.006, −0.006, −0.003)."""
    _, _, x = _design(case)
    phi = _projections(case, 200, seed=2)
    se = phi.std(axis=0, ddof=1) / np.sqrt(len(phi))
    truth = np.array([_true_phi(case, x, n) for n in COUNTS])
    assert np.all(np.abs(phi.mean(axis=0) - truth) < 4 * se + 0.008), (phi.mean(axis=0), truth, se)


def test_plan_command_gives_the_d_study_of_a_slope_model_with_its_definition():
    data = str(HERE / "data" / "crossed_slopes.csv.gz")
    formula = "y ~ c + (1 + c|subject) + (1 + c|item)"
    run = subprocess.run([sys.executable, "-m", "bayesrepro", "plan", data, "--formula", formula, "--object",
                          "subject", "--vary", "item=1,5", "--json"], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    payload = json.loads(run.stdout)
    assert payload["assumed"]["phi_definition"] == SLOPE_DEFINITION
    model = br.Model(formula, data, object="subject")
    expected = model.fit().d_study({"item": [1, 5]})["phi"].tolist()
    assert [row["phi"] for row in payload["rows"]] == pytest.approx(expected, rel=1e-9)
    with pytest.raises(BayesreproError, match=r"random slope '\(1 \+ c\|subject\)': plan computes the power"):
        model.plan("c=0.5 - -0.5", {"item": [5]})


@pytest.mark.slow
def test_comparison_d_study_of_a_slope_model_sums_a_factors_terms_on_both_sides():
    """``(c || item)``'s two terms are one item component for the REML φ and for every posterior draw (about 25 s:
    the bootstrap and the sampler of compare)."""
    import warnings

    from bayesrepro.bayes.posterior import variance_draws
    from bayesrepro.errors import ConvergenceWarning
    from bayesrepro.reliability import d_study

    data = pd.read_csv(HERE / "data" / "crossed_slopes.csv.gz")
    data = data[data["subject"] <= "s12"]     # a smaller design: the plumbing is checked, not the estimates
    model = br.Model("y ~ c + (1 + c|subject) + (c||item)", data, object="subject")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)   # a short run: the plumbing is checked, not the posterior
        comparison = model.compare(n_boot=100, draws=100, tune=150, chains=2, allow_unconverged=True)
    table = comparison.d_study({"item": [1, 5]})
    assert table["phi"].tolist() == pytest.approx(model.fit().d_study({"item": [1, 5]})["phi"].tolist(), rel=1e-6)
    draws = variance_draws(comparison.side.bayes.draws)
    merged = {"subject": draws["subject"], "item": draws["item"] + draws["item.1"], "Residual": draws["Residual"]}
    assert table["post_median"].tolist() == pytest.approx(
        [float(np.median(d_study(merged, "subject", {"item": n})["phi"])) for n in (1, 5)], rel=1e-9)
