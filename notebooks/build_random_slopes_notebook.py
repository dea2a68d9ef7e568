"""Write and execute notebooks/random_slopes.ipynb (run from anywhere with the project's Python).

A worked example of a model with random slopes on lme4's sleepstudy data, checked against
lme4's published fit (Bates, Mächler, Bolker & Walker 2015, J. Stat. Softw. 67(1), section 1).
"""

from pathlib import Path

from notebook_writer import write_executed

HERE = Path(__file__).resolve().parent

CELLS = [
    ("md", """# Random slopes: reaction times under sleep deprivation

lme4's `sleepstudy`: 18 subjects, ten days each (day 0 to 9) of restricted
sleep, one average reaction time (ms) per subject and day. Subjects differ in
their reaction time at day 0 *and* in how fast it grows: the maximal model
gives every subject an intercept and a slope for `Days`, with their
correlation, `Reaction ~ Days + (Days|Subject)` (lme4's `(1 + Days|Subject)`).

The command line does the same with
`bayesrepro vca sleepstudy.csv.gz --formula "Reaction ~ Days + (Days|Subject)" --categorical Subject --json`
and `bayesrepro glrt ... --h0 "Reaction ~ Days + (1|Subject)" --h1 "Reaction ~ Days + (Days|Subject)"`."""),
    ("code", """import json

import numpy as np
import pandas as pd
from IPython.display import display

import bayesrepro as br

pd.set_option("display.precision", 4)
pd.set_option("display.width", 160)
sleep = br.read("tests/data/sleepstudy.csv.gz", categorical=["Subject"])
print(len(sleep), "rows,", sleep["Subject"].nunique(), "subjects, days", sorted(sleep["Days"].unique().tolist()))
sleep.head()"""),
    ("md", """## 1. The maximal model by REML

`random_effects` is lme4's `as.data.frame(VarCorr(m))`: one row per SD, one
per correlation, then the residual. The fixed effects of a model with random
slopes come with Wald z tests (Satterthwaite's degrees of freedom are not
available for slope models yet)."""),
    ("code", """model = br.Model("Reaction ~ Days + (Days|Subject)", sleep, object="Subject")
fit = model.fit()
print(fit.summary())
display(fit.random_effects)
display(fit.fixed_effects)"""),
    ("md", """## 2. Do subjects differ in their slopes? The GLRT against random intercepts

H0 gives every subject its own intercept but one common slope; H1 adds the
slope variance and its correlation with the intercept: two parameters. Both
models are refitted by ML. A variance added under H0 lies on the boundary of
the parameter space, where χ² with 2 df is conservative (Stram & Lee 1994);
the package says which reference it used."""),
    ("code", """test = model.glrt(h0="Reaction ~ Days + (1|Subject)")
print(test.summary())"""),
    ("md", """## 3. Reliability φ with a slope term

With a slope, a subject's effect on one score depends on the day: the
subject's component is the variance its intercept and slope add to one
observation, averaged over the observed rows, the mean of z'Σz with
z = (1, Days) (Johnson 2014). φ is that variance over itself plus the
residual: how much of one reaction time, on an average day of this design,
is the subject's own. The cell recomputes the component from the
`random_effects` table and the days observed."""),
    ("code", """display(fit.components)
varcorr = fit.random_effects.fillna("").set_index(["group", "var1", "var2"])
days = sleep["Days"].to_numpy(float)
by_hand = (varcorr.loc[("Subject", "Intercept", ""), "vcov"]
           + 2 * days.mean() * varcorr.loc[("Subject", "Intercept", "Days"), "vcov"]
           + (days ** 2).mean() * varcorr.loc[("Subject", "Days", ""), "vcov"])
print(f"Subject component: {fit.components.loc['Subject', 'variance']:.4f}; "
      f"mean of z'Σz over the rows: {by_hand:.4f}")
print(f"phi (Subject) = {fit.phi:.3f}: {fit.koo_li_label} (Koo & Li)")"""),
    ("md", """## 4. The Bayesian side

`Model.sample` samples the posterior of the same model: per term the SDs times
the Cholesky factor of the correlation matrix times standard-normal effects,
an LKJ(1) prior on the correlations. Its random-effect rows stand beside the
REML estimates: posterior medians with 90 % intervals, each with its R-hat and
bulk ESS."""),
    ("code", """posterior = model.sample(draws=1000, tune=1000, chains=4, seed=1)
side_by_side = posterior.random_effects[["group", "var1", "var2", "median", "low", "high", "r_hat", "ess_bulk"]]
side_by_side.assign(reml=fit.random_effects["sdcor"].to_numpy())"""),
    ("md", """## 5. Against lme4

`tests/reference/lme4_slopes.json` holds lme4 1.1-31's fits of the same
models (written by `tests/reference/lme4_slopes.R`). The REML criterion must
be no worse than lme4's; every SD, the correlation and the fixed effects
agree within 10⁻⁴ relative (lme4's own optimizer settings move them by about
10⁻⁵ on this flat criterion); the GLRT's χ² is twice the difference of
lme4's ML log-likelihoods."""),
    ("code", """reference = json.loads(open("tests/reference/lme4_slopes.json").read())["models"]
lme4 = reference["sleep_correlated"]["REML"]
ours = fit.to_dict()
rows = [("REML criterion", lme4["criterion"], ours["reml_criterion"])]
for row in lme4["varcorr"]:
    name = " ".join(str(v).replace("(Intercept)", "Intercept") for v in (row["grp"], row["var1"], row["var2"])
                    if v is not None)
    key = tuple("" if v is None else v.replace("(Intercept)", "Intercept") for v in (row["grp"], row["var1"], row["var2"]))
    rows.append((f"sdcor {name}", row["sdcor"], varcorr.loc[key, "sdcor"]))
for term, value in lme4["fixef"].items():
    term = term.replace("(Intercept)", "Intercept")
    rows.append((f"fixed {term}", value, fit.fixed_effects.loc[term, "estimate"]))
lme4_chi2 = 2 * (reference["sleep_correlated"]["ML"]["loglik"] - reference["sleep_intercept"]["ML"]["loglik"])
rows.append(("GLRT chi2", lme4_chi2, test.chi2))
table = pd.DataFrame(rows, columns=["quantity", "lme4", "bayesrepro"]).set_index("quantity")
table["relative difference"] = (table["bayesrepro"] - table["lme4"]).abs() / table["lme4"].abs()
display(table)
verdict = {"criterion_no_worse": bool(ours["reml_criterion"] <= lme4["criterion"] + 1e-6),
           "within_1e-4": bool((table["relative difference"].drop("REML criterion") < 1e-4).all()),
           "glrt_df": int(test.df)}
print("lme4 check: " + json.dumps(verdict))"""),
]


def main() -> None:
    write_executed(CELLS, HERE / "random_slopes.ipynb", timeout=600)
    print("wrote", HERE / "random_slopes.ipynb")


if __name__ == "__main__":
    main()
