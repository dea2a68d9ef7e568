"""Write and execute notebooks/instruments.ipynb (run from anywhere with the project's Python)."""

from pathlib import Path

from notebook_writer import write_executed

HERE = Path(__file__).resolve().parent

CELLS = [
    ("md", """# The other instruments, next to the model-based answer

The field's usual tools — resampling tests on one pair of best models,
expected best score under a tuning budget, chance-corrected agreement
coefficients — each answer a narrower question than a linear mixed model
does. This notebook runs each of them on the bundled data and sets the
model-based result (GLRT, variance components, φ) beside it, then shows the
GAM circularity test on data whose circular feature is known."""),
    ("code", """import numpy as np
import pandas as pd
import matplotlib
matplotlib.use("Agg")

import bayesrepro as br

pd.set_option("display.precision", 4)
SEED = 20231"""),
    ("md", """## 1. Significance: best instance versus best instance

`kreutzer_ter` scores 1,041 test sentences with a Baseline model and three
random-seed replications each of `Marking` and `PostEdit` (lower TER is
better). The common practice picks each system's best replication and runs a
paired bootstrap or permutation test on those two models. The
multi-bootstrap instead resamples replications together with sentences."""),
    ("code", """ter = br.load_dataset("kreutzer_ter")
ter.groupby(["system", "replication"], observed=True)["ter"].mean().unstack()"""),
    ("code", """rows = []
for a, b in [("Baseline", "Marking"), ("Baseline", "PostEdit"), ("Marking", "PostEdit")]:
    pair = dict(data=ter, item="sentence_id", system="system", score="ter", a=a, b=b, instance="replication",
                resamples=10_000, seed=SEED)
    boot = br.bootstrap(**pair, lower_is_better=True)
    perm = br.permutation(**pair, lower_is_better=True)
    multi = br.bootstrap(**pair, instances="multi")
    rows.append({"comparison": f"{a} ({boot.instance_a}) - {b} ({boot.instance_b})", "TER difference": boot.statistic,
                 "bootstrap p": boot.p_value, "bootstrap MC SE": boot.mc_standard_error,
                 "permutation p": perm.p_value, "permutation MC SE": perm.mc_standard_error,
                 "multi-bootstrap diff": multi.statistic, "multi-bootstrap p": multi.p_value})
resampling = pd.DataFrame(rows).set_index("comparison")
resampling"""),
    ("md", """p-values use p = (r + 1)/(R + 1) with R = 10,000 resamples; the Monte-Carlo
standard error is √(p(1−p)/R). A p-value of 1/(R+1) ≈ 1e-4 means no
resample was as extreme: the true p is below about 3/R, nothing more.

The model-based answer uses every replication and the sentence as a random
effect, comparing `ter ~ system + (1|sentence_id)` with `ter ~ 1 + (1|sentence_id)`
by a likelihood-ratio test on ML fits:"""),
    ("code", """test = br.Model("ter ~ system + (1|sentence_id)", ter).glrt(h0="ter ~ 1 + (1|sentence_id)")
print(test)"""),
    ("md", """**What the resampling tests can tell:** whether *these two trained models*
differ on *this test set* beyond what resampling the sentences produces. They
need no distributional assumptions and accept any corpus-level metric.

**What they cannot tell:** anything about the *systems* (training
procedures). The best-of-three choice is itself a selection on the test data,
so best-versus-best p-values are optimistic and change with the seed that
happened to win; seed variance is invisible to them. The multi-bootstrap puts
the seeds back, but with three instances per system its seed resampling is
coarse. None of them says *where* the difference lives: the GLRT framework
tests the overall system effect on all instances at once (χ² = 34.1, df = 2),
gives effect sizes relative to the residual SD, and extends to interactions
with data properties (the thesis's sentence-length interaction) and to
variance-component tests — questions a paired resampling test cannot pose."""),
    ("md", """## 2. Expected best score under a budget

One score per configuration (mean TER over the 1,041 sentences for each of
the 324 configurations of the full `Marking` grid; accuracy of each of the
12,150 MLPs of the SOFA grid). For each budget B: the closed-form expected
best of B configurations drawn with replacement (Dodge et al., 2019) with the
exact 95 % range of that best under the empirical distribution, and the
bootstrap version (thesis Algorithm 3.1)."""),
    ("code", """grid = br.load_dataset("kreutzer_marking_full")
meta = ["learning_rate", "seed", "encoder_dropout", "decoder_dropout", "decoder_dropout_hidden", "delta_scheme"]
grid_budget = br.budget(grid, "ter", meta, lower_is_better=True, budgets=[1, 2, 5, 10, 20, 50, 100, 200, 324],
                        resamples=5000, seed=SEED)
best = grid.groupby(meta, observed=True)["ter"].mean().min()
print(grid_budget.n_configurations, "configurations; best mean TER", round(best, 4))
grid_budget.table"""),
    ("code", """sofa = br.load_dataset("sofa_mlp_grid")
sofa_budget = br.budget(sofa, "accuracy", "system", budgets=[1, 2, 5, 10, 50, 100, 1000, 5000, 12150],
                        resamples=5000, seed=SEED)
print(sofa_budget.n_configurations, "models; best accuracy",
      round(sofa.groupby("system", observed=True)["accuracy"].mean().max(), 4))
sofa_budget.table"""),
    ("code", """import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
grid_budget.plot(ax=axes[0], title="Marking grid: mean TER (lower is better)")
sofa_budget.plot(ax=axes[1], title="SOFA MLP grid: accuracy")
fig.tight_layout()
print(grid_budget.note)"""),
    ("md", """The same grids through variance components (REML):"""),
    ("code", """grid_fit = br.Model("ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout)"
                    " + (1|decoder_dropout) + (1|decoder_dropout_hidden) + (1|delta_scheme)", grid,
                    object="sentence_id").fit()
print("phi (sentence_id):", round(grid_fit.phi, 4))
grid_fit.components"""),
    ("code", """sofa_fit = br.Model("accuracy ~ 1 + (1|hidden_size_max) + (1|hidden_number) + (1|learning_rate)"
                    " + (1|batch_size) + (1|random_seed) + (1|epochs) + (1|dropout)", sofa).fit()
sofa_fit.components[["variance", "percent"]]  # a grid of models has no object of measurement"""),
    ("md", """**What the budget curves can tell:** how much a larger tuning budget is
expected to buy *on this grid* — on the Marking grid the expected best mean
TER falls from about 0.27 (one configuration) to 0.18 (all of them); on the
SOFA grid accuracy rises from 0.767 to 0.792.

**What they cannot tell:** the curves only ever re-draw observed
configurations. The best of a resample cannot exceed the observed best, so
the best end of the interval is pinned at the sample best (column
`best_end_at_sample_best`) and the interval shrinks onto it as B approaches the
grid size — an artefact of resampling, not certainty about what a bigger
search would find. Nor do they say *which* meta-parameters matter or how
stable a conclusion is across test sentences. The variance components
answer both: on the Marking grid the sentences carry 85.9 % of the variance
and all six meta-parameters together well under 1 % (learning rate first,
0.32 %), so φ for sentences is 0.86; on the SOFA grid the number of hidden
layers (31 %) and the learning rate (6.2 %) are what matter, the random
seed and epochs next to nothing."""),
    ("md", """## 3. Agreement of raters

Krippendorff's worked examples first: the binary two-observer table of
*Computing Krippendorff's Alpha-Reliability* (2011, example A; published
α = 0.095) and a table where the raters agree on six of eight units and α is
still negative."""),
    ("code", """example_a = np.array([[0, 1, 0, 0, 0, 0, 0, 0, 1, 0],
                      [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]).T
skewed = np.array([[0, 0, 0, 0, 0, 0, 1, 0],
                   [0, 0, 0, 0, 0, 0, 0, 1]]).T
for name, table in [("10 units", example_a), ("8 units", skewed)]:
    ratings = (pd.DataFrame(table, columns=["A", "B"]).rename_axis("unit").reset_index()
               .melt(id_vars="unit", var_name="rater", value_name="value"))
    two = br.agreement(ratings, "unit", "rater", "value")
    print(f"{name}: alpha = {two.krippendorff_alpha:.3f}, kappa = {two.cohen_kappa:.3f}, "
          f"pi = {two.scott_pi:.3f}, observed agreement = {np.mean(table[:, 0] == table[:, 1]):.2f}")"""),
    ("md", """`kreutzer_annotation`: ten raters score five sentences on three occasions
in each of two modes. Two choices of the unit of analysis: the *sentence*
(all 30 ratings of a sentence are pairable — raters and occasions are both
sources of disagreement, so each rater-occasion pair is one coder), and *sentence × occasion* (only ratings from the
same occasion are compared — agreement between raters). Scores are
continuous, so the interval level is the meaningful one; the nominal
coefficient is shown to make the point. κ and π are defined for two raters
only and are therefore absent here."""),
    ("code", """annotation = br.load_dataset("kreutzer_annotation")
G_STUDY = ("score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater)"
           " + (1|sentence:occasion) + (1|rater:occasion)")
rows, vca = [], {}
for mode, part in annotation.groupby("mode", observed=True):
    fit = br.Model(G_STUDY, part, object="sentence").fit()
    coders = part.assign(coder=part["rater"].astype(str) + "@" + part["occasion"].astype(str))
    vca[mode] = fit.components
    # inter-rater consistency: the share of the variance that two raters on the same occasion share
    variance = fit.components["variance"]
    shared = [name for name in variance.index if name != "Residual" and "rater" not in name.split(":")]
    rows.append({
        "mode": mode,
        "alpha interval (unit: sentence)": br.agreement(coders, "sentence", "coder", "score", "interval").krippendorff_alpha,
        "phi, one rating (G-study)": fit.phi,
        "alpha interval (unit: sentence x occasion)":
            br.agreement(part, ["sentence", "occasion"], "rater", "score", "interval").krippendorff_alpha,
        "inter-rater consistency (G-study)": variance[shared].sum() / variance.sum(),
        "alpha nominal (unit: sentence x occasion)":
            br.agreement(part, ["sentence", "occasion"], "rater", "score", "nominal").krippendorff_alpha,
        "phi, mean of 10 raters x 3 occasions": fit.d_study({"rater": 10, "occasion": 3})["phi"].iloc[0],
    })
pd.DataFrame(rows).set_index("mode").T"""),
    ("code", """pd.concat(vca, axis=1)"""),
    ("md", """**What α can tell:** one chance-corrected number per design, comparable
across designs, with missing ratings allowed. Interval α tracks the
single-rating φ of the G-study closely (Marking ≈ 0.11 vs 0.12; Post Edit
≈ 0.57 vs 0.60), and both say that post-edit ratings of a sentence agree far
better than marking ratings.

**What it cannot tell:** *why* agreement is low and what would fix it. The
G-study splits the disagreement: in Marking mode the raters differ in
leniency (rater 14 %) and in how they see particular sentences
(sentence × rater 16 %), while occasions add nothing — so more raters, not
repeated sessions, would help, and the D-study puts a number on it (φ of a
mean over 10 raters × 3 occasions). α also depends on the choice of unit,
and on continuous scores its nominal form treats every distinct value as a
category, which is meaningless here."""),
    ("md", """## 4. Validity: the circularity test

Generated patients: the liver SOFA score is *defined* by bilirubin cut-offs
(1.2, 2, 6, 12 mg/dL → 0…4); INR and albumin track bilirubin with noise; age
and heart rate are noise. A regression tree is trained once with bilirubin
and once without it, and each model's test-set predictions are explained by
GAMs (statsmodels `GLMGam`, cubic B-spline smooths) on every subset of the
five features."""),
    ("code", """test = br.simulate_liver_sofa(800, max_depth=4, seed=1)
features = ["bilirubin", "inr", "albumin", "age", "heart_rate"]
for name in ["with_bilirubin", "without_bilirubin"]:
    print(f"{name}: accuracy {np.mean(np.round(test[name]) == test['sofa_liver']):.3f}")"""),
    ("code", """results = {}
for name in ["with_bilirubin", "without_bilirubin"]:
    r = br.circularity(test, name, features, defining=["bilirubin"])
    results[name] = r
    print(f"{name}: candidate {r.candidate}, D2 = {r.candidate_d2:.3f}, all features D2 = {r.full_d2:.3f}, "
          f"D2 of bilirubin alone = {r.defining_d2:.3f}, nullified = {r.nullified}, circular = {r.circular}")
results["with_bilirubin"].ranking.head(8)"""),
    ("code", """results["without_bilirubin"].ranking.head(8)"""),
    ("md", """**What the test can tell:** that the first model's predictions are, to
96 % of their deviance, a smooth function of bilirubin alone and that no
other feature adds anything once bilirubin is in — the model has learned the
definition of its target, and its near-perfect accuracy says nothing about
clinical insight. The model trained without bilirubin is explained by INR and
albumin; bilirubin alone explains much less, and it is not flagged.

**What it cannot tell:** which features are definitional — that has to come
from knowledge of how the target was made (`defining`). D² thresholds and the
tie tolerance are conventions, and a smooth basis approximates a step rule
only up to its flexibility (hence 0.96, not 1). A model that is *not*
circular is not thereby valid: the test rules out one specific failure."""),
]


def main() -> None:
    write_executed(CELLS, HERE / "instruments.ipynb", timeout=1200)


if __name__ == "__main__":
    main()
