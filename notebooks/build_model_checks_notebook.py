"""Write and execute notebooks/model_checks.ipynb (run from anywhere with the project's Python).

Model checks on three designs: a leaderboard, a crowd of raters of uneven harshness, and two misspecified
models the checks catch (0/1 scores fitted as Gaussian; a missing random slope).
"""

from pathlib import Path

from notebook_writer import write_executed

HERE = Path(__file__).resolve().parent

CELLS = [
    ("md", """# Model checks: is the model the data's?

`Fit.check()` and `Posterior.check()` simulate data sets from the fitted model and read every test against
them (Monte-Carlo p-values, Holm-adjusted, flagged below 5 %): **uniformity** of the randomized quantile
residuals, **dispersion**, **within-level structure** (a missing random slope) and **outlying levels**. Every
test and figure says in one sentence what it found. The guide is `docs/guide/model_checks.md`; the command
line is `bayesrepro check DATA --formula F [--out FIGURE] [--json] [--bayes]`."""),
    ("code", """%matplotlib inline
import warnings

import numpy as np
import pandas as pd
from IPython.display import display

import bayesrepro as br

rng = np.random.default_rng(2026)
warnings.simplefilter("ignore", br.ConvergenceWarning)   # short sampling runs below
pd.set_option("display.precision", 4)
pd.set_option("display.width", 160)
pd.set_option("display.max_colwidth", 200)"""),
    ("md", """## 1. A leaderboard of 0/1 scores

Three systems answer 300 questions, five seeds each, under four prompts (`br.simulate_binary_grid`). The binary
model's raw residuals are two bands; its quantile residuals are uniform when the model is right. First the
leaderboard itself: `Model.rank` gives each system's chance of being best, its expected rank and a rank interval,
from the posterior and, beside it, from a parametric bootstrap of the ML fit."""),
    ("code", """board = br.simulate_binary_grid(items=300, random_state=1)
board_model = br.Model("correct ~ system + (1|item) + (1|seed) + (1|prompt)", board, categorical=["seed"],
                       progress=False)
board_model.rank(factor="system", n_boot=200, seed=1)"""),
    ("code", """board_fit = board_model.fit()
board_check = board_fit.check(seed=0)
board_check"""),
    ("code", """board_check.plot()"""),
    ("md", """## 2. A crowd of raters: who is harsh?

800 items, each scored by five of 60 raters of very uneven activity (rater k is chosen with weight 1/k);
rater harshness has SD 0.5, items SD 1, the residual SD 1. The raters'
level effects are their harshness (negative: harsher than the average rater); the Q–Q plot of the
standardized level effects shows whether any rater is harsher than a normal distribution of raters explains."""),
    ("code", """weights = 1 / np.arange(1, 61)
rater = np.concatenate([rng.choice(60, 5, replace=False, p=weights / weights.sum()) for _ in range(800)])
item = np.repeat(np.arange(800), 5)
score = rng.normal(0, 1, 800)[item] + rng.normal(0, 0.5, 60)[rater] + rng.normal(0, 1, len(item))
crowd = pd.DataFrame({"item": np.char.add("q", item.astype(str)), "rater": np.char.add("r", rater.astype(str)),
                      "score": score})
crowd_fit = br.Model("score ~ 1 + (1|item) + (1|rater)", crowd).fit()
harshness = crowd_fit.level_effects("rater").sort_values("estimate")
display(harshness.head(5))
crowd_check = crowd_fit.check(seed=0)
print(crowd_check.summary())"""),
    ("code", """crowd_check.plot("level effects Q-Q: rater")"""),
    ("md", """The same check of the posterior reads the tests against posterior predictive data sets (one per posterior
draw, the levels' effects drawn afresh) and adds ArviZ's posterior predictive densities of the scores and of
the mean per item and per rater, and the LOO-PIT: where every score falls in its leave-one-out predictive
(PSIS-LOO, no refit), uniform when the model is right."""),
    ("code", """crowd_posterior = br.Model("score ~ 1 + (1|item) + (1|rater)", crowd).sample(draws=500, tune=500, chains=2)
posterior_check = crowd_posterior.check(seed=0)
print(posterior_check.summary())
posterior_check.plot("posterior predictive: mean per level of rater")"""),
    ("code", """posterior_check.plot("LOO-PIT")"""),
    ("md", """## 3. Misspecified models the checks catch

**0/1 scores fitted as Gaussian** (a linear probability model): the variance table looks ordinary, but the
quantile residuals cannot be uniform. The same scores fitted as Bernoulli pass."""),
    ("code", """small = br.simulate_binary_grid(items=200, seeds=3, prompts=1, random_state=3)
formula = "correct ~ system + (1|item) + (1|seed)"
as_gaussian = br.Model(formula, small, family="gaussian", categorical=["seed"]).fit().check(seed=0)
as_bernoulli = br.Model(formula, small, categorical=["seed"]).fit().check(seed=0)
display(as_gaussian.tests[["test", "group", "p", "p_adjusted", "flagged"]])
print(as_gaussian.tests.set_index("test").loc["uniformity", "finding"])
print("0/1 scores as Gaussian flagged:", as_gaussian.flagged, "| as Bernoulli flagged:", as_bernoulli.flagged)"""),
    ("code", """as_gaussian.plot("quantile residuals Q-Q")"""),
    ("md", """**A missing random slope**: sleepstudy's design (18 subjects × 10 days; intercept SD 25, slope SD 6 per
day, residual SD 25, as lme4's fit of sleepstudy), where subjects differ in how fast their reaction time grows. Without the slope, the days explain more of the
residuals within each subject than they do in data simulated from the model."""),
    ("code", """subject, day = np.repeat(np.arange(18), 10), np.tile(np.arange(10.0), 18)
y = 250 + rng.normal(0, 25, 18)[subject] + (10 + rng.normal(0, 6, 18)[subject]) * day + rng.normal(0, 25, 180)
sleep = pd.DataFrame({"subject": np.char.add("s", subject.astype(str)), "day": day, "y": y})
without_slope = br.Model("y ~ day + (1|subject)", sleep).fit().check(seed=0)
with_slope = br.Model("y ~ day + (day|subject)", sleep).fit().check(seed=0)
print(without_slope.tests.set_index("test").loc["within-level structure", "finding"])
print("without the slope flagged:", without_slope.flagged, "| with it flagged:", with_slope.flagged)"""),
    ("code", """without_slope.plot()"""),
    ("md", """How often the checks reject correct models, and catch these wrong ones, over 200 simulated data sets per
scenario: `studies/model_check_calibration.py`, recorded in `studies/results/model_check_calibration.json`."""),
]


if __name__ == "__main__":
    write_executed(CELLS, HERE / "model_checks.ipynb", timeout=900)
