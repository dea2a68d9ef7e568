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

from bayesrepro.datasets import load_dataset
from bayesrepro import instruments as ins
from bayesrepro.instruments.systems import system_scores
from bayesrepro.frequentist import fit_lmm, glrt
from bayesrepro import reliability

pd.set_option("display.precision", 4)
SEED = 20231"""),
    ("md", """## 1. Significance: best instance versus best instance

`kreutzer_ter` scores 1,041 test sentences with a Baseline model and three
random-seed replications each of `Marking` and `PostEdit` (lower TER is
better). The common practice picks each system's best replication and runs a
paired bootstrap or permutation test on those two models. The
multi-bootstrap instead resamples replications together with sentences."""),
    ("code", """ter = load_dataset("kreutzer_ter")
blocks = system_scores(ter, "sentence_id", "system", "ter", "replication")
pd.DataFrame({name: block.instance_means() for name, block in blocks.items()}).T"""),
    ("code", """rows = []
for a, b in [("Baseline", "Marking"), ("Baseline", "PostEdit"), ("Marking", "PostEdit")]:
    inst_a, best_a = blocks[a].best_instance(lower_is_better=True)
    inst_b, best_b = blocks[b].best_instance(lower_is_better=True)
    boot = ins.paired_bootstrap_test(best_a, best_b, n_resamples=10_000, seed=SEED)
    perm = ins.permutation_test(best_a, best_b, n_resamples=10_000, seed=SEED)
    multi = ins.multi_bootstrap_test(blocks[a].scores, blocks[b].scores, n_resamples=10_000, seed=SEED)
    rows.append({"comparison": f"{a} ({inst_a}) - {b} ({inst_b})", "TER difference": boot.statistic,
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
    ("code", """test = glrt("ter ~ 1 + (1|sentence_id)", "ter ~ system + (1|sentence_id)", ter)
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
    ("code", """grid = load_dataset("kreutzer_marking_full")
meta = ["learning_rate", "seed", "encoder_dropout", "decoder_dropout", "decoder_dropout_hidden", "delta_scheme"]
grid_scores = ins.configuration_scores(grid, meta, "ter")
grid_budget = ins.expected_max(grid_scores.to_numpy(), [1, 2, 5, 10, 20, 50, 100, 200, 324],
                               higher_is_better=False, n_resamples=5000, seed=SEED)
print(len(grid_scores), "configurations; best mean TER", round(grid_scores.min(), 4))
grid_budget.table"""),
    ("code", """sofa = load_dataset("sofa_mlp_grid")
sofa_scores = ins.configuration_scores(sofa, ["system"], "accuracy")
sofa_budget = ins.expected_max(sofa_scores.to_numpy(), [1, 2, 5, 10, 50, 100, 1000, 5000, 12150],
                               n_resamples=5000, seed=SEED)
print(len(sofa_scores), "models; best accuracy", round(sofa_scores.max(), 4))
sofa_budget.table"""),
    ("code", """import matplotlib.pyplot as plt
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
ins.plot_expected_max(grid_budget, ax=axes[0]); axes[0].set_title("Marking grid: mean TER (lower is better)")
ins.plot_expected_max(sofa_budget, ax=axes[1]); axes[1].set_title("SOFA MLP grid: accuracy")
fig.tight_layout()
print(grid_budget.note)"""),
    ("md", """The same grids through variance components (REML):"""),
    ("code", """grid_fit = fit_lmm("ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout)"
                   " + (1|decoder_dropout) + (1|decoder_dropout_hidden) + (1|delta_scheme)", grid)
print("phi (sentence_id):", round(float(reliability.phi(grid_fit.variances, "sentence_id")), 4))
reliability.vca_table(grid_fit.variances, object="sentence_id")"""),
    ("code", """sofa_fit = fit_lmm("accuracy ~ 1 + (1|hidden_size_max) + (1|hidden_number) + (1|learning_rate)"
                   " + (1|batch_size) + (1|random_seed) + (1|epochs) + (1|dropout)", sofa)
reliability.vca_table(sofa_fit.variances)"""),
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
    print(f"{name}: alpha = {ins.krippendorff_alpha(table):.3f}, "
          f"kappa = {ins.cohen_kappa(table[:, 0], table[:, 1]):.3f}, "
          f"pi = {ins.scott_pi(table[:, 0], table[:, 1]):.3f}, "
          f"observed agreement = {np.mean(table[:, 0] == table[:, 1]):.2f}")"""),
    ("md", """`kreutzer_annotation`: ten raters score five sentences on three occasions
in each of two modes. Two choices of the unit of analysis: the *sentence*
(all 30 ratings of a sentence are pairable — raters and occasions are both
sources of disagreement, so each rater-occasion pair is one coder), and *sentence × occasion* (only ratings from the
same occasion are compared — agreement between raters). Scores are
continuous, so the interval level is the meaningful one; the nominal
coefficient is shown to make the point. κ and π are defined for two raters
only and are therefore absent here."""),
    ("code", """annotation = load_dataset("kreutzer_annotation")
G_STUDY = ("score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater)"
           " + (1|sentence:occasion) + (1|rater:occasion)")
rows, vca = [], {}
for mode, part in annotation.groupby("mode", observed=True):
    fit = fit_lmm(G_STUDY, part)
    coders = part.assign(coder=part["rater"].astype(str) + "@" + part["occasion"].astype(str))
    vca[mode] = reliability.vca_table(fit.variances, object="sentence")
    rows.append({
        "mode": mode,
        "alpha interval (unit: sentence)": ins.agreement(coders, "sentence", "coder", "score", "interval").krippendorff_alpha,
        "phi, one rating (G-study)": float(reliability.phi(fit.variances, "sentence")),
        "alpha interval (unit: sentence x occasion)":
            ins.agreement(part, ["sentence", "occasion"], "rater", "score", "interval").krippendorff_alpha,
        "inter-rater consistency (G-study)": float(reliability.consistency_across(fit.variances, "rater")),
        "alpha nominal (unit: sentence x occasion)":
            ins.agreement(part, ["sentence", "occasion"], "rater", "score", "nominal").krippendorff_alpha,
        "phi, mean of 10 raters x 3 occasions":
            float(reliability.d_study(fit.variances, "sentence", {"rater": 10, "occasion": 3})["phi"]),
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
    ("code", """from bayesrepro.instruments.liver_sofa import FEATURES, fit_regression_tree, make_liver_data

train, test = make_liver_data(800, seed=1), make_liver_data(800, seed=2)
features = list(FEATURES)
others = [f for f in features if f != "bilirubin"]
with_rule = fit_regression_tree(train[features], train["sofa_liver"], max_depth=4).predict(test[features])
without = fit_regression_tree(train[others], train["sofa_liver"], max_depth=4).predict(test[others])
for name, pred in [("with bilirubin", with_rule), ("without bilirubin", without)]:
    print(f"{name}: accuracy {np.mean(np.round(pred) == test['sofa_liver']):.3f}")"""),
    ("code", """results = {}
for name, pred in [("with bilirubin", with_rule), ("without bilirubin", without)]:
    r = ins.circularity_test(test[features], pred, defining=["bilirubin"])
    results[name] = r
    print(f"{name}: candidate {r.candidate}, D2 = {r.candidate_d2:.3f}, all features D2 = {r.full_d2:.3f}, "
          f"D2 of bilirubin alone = {r.defining_d2:.3f}, nullified = {r.nullified}, circular = {r.circular}")
results["with bilirubin"].ranking.head(8)"""),
    ("code", """results["without bilirubin"].ranking.head(8)"""),
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
