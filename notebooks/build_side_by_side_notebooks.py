"""Write and execute the side-by-side notebooks (run from anywhere with the project's Python).

    python notebooks/build_side_by_side_notebooks.py            # all of them
    python notebooks/build_side_by_side_notebooks.py quick_start

Sampling settings are small (2 chains x 500 draws, ~100 bootstrap replicates)
so that each notebook runs in well under two minutes; the package defaults are
larger.
"""

import sys
from pathlib import Path

from notebook_writer import write_executed

HERE = Path(__file__).resolve().parent

SETUP = """%matplotlib inline
import pandas as pd
from IPython.display import display

import bayesrepro as br

pd.set_option("display.precision", 4)
pd.set_option("display.width", 160)
FAST = dict(draws=500, tune=500, chains=2, seed=1, allow_unconverged=True)"""

NOTEBOOKS = {}

NOTEBOOKS["significance"] = [
    ("md", """# Significance on `kreutzer_ter`: averaged analysis, LMEM, and the posterior

1,041 test sentences are translated by a Baseline and by three random-seed
replications each of `Marking` and `PostEdit`; the score is sentence-level
TER (lower is better). Reproduces thesis Table 2.2 and the authors' notebook:
the averaged analysis, the omnibus GLRT (χ² = 34.09, df = 2, p = 3.96e-8),
pairwise contrasts with the papers' effect size, and the comparison
conditional on sentence length (χ² = 32.43, df = 4, p = 1.56e-6) — each next
to its Bayesian counterpart."""),
    ("code", SETUP),
    ("md", """## 1. Averaging the replications first, versus the LMEM on every score

Averaging the three replications per sentence and system and fitting a plain
linear model leaves the sentence-to-sentence variation in the residual
(published: p = 0.517, residual SD 0.2576); the LMEM models it as a random
effect (residual SD 0.0591) and finds the systems different. The averaged
analysis is the field's ordinary least squares (statsmodels); the LMM is
`br.Model`'s GLRT, both models fitted by ML."""),
    ("code", """import numpy as np
import statsmodels.formula.api as smf

ter = br.load_dataset("kreutzer_ter")
means = ter.groupby(["sentence_id", "system"], observed=True)["ter"].mean().reset_index()
averaged = smf.ols("ter ~ system", means).fit()
print(f"Averaged over replications, linear model ({len(means)} means): F({averaged.df_model:.0f}, "
      f"{averaged.df_resid:.0f}) = {averaged.fvalue:.3f}, p = {averaged.f_pvalue:.3g}, "
      f"residual SD {np.sqrt(averaged.scale):.4f}")
lmm = br.Model("ter ~ system + (1|sentence_id)", ter)
test = lmm.glrt(h0="ter ~ 1 + (1|sentence_id)")
residual_sd = np.sqrt(lmm.fit().components.loc["Residual", "variance"])
print(f"LMM with item effect on all scores: chi2({test.df}) = {test.chi2:.2f}, p = {test.p:.3g}, "
      f"residual SD {residual_sd:.4f}")"""),
    ("md", """## 2. Omnibus and pairwise: the spec `system_comparison` through both engines

`Model.compare` fits the same formula by REML (parametric-bootstrap intervals
for the variance components), by ML for the GLRT and Wald contrasts, and by
NUTS for the posterior; the Bayesian contrasts apply the same contrast weights
to the posterior draws of the fixed effects. `br.load_spec` reads the named
analysis the command line's `--spec` takes."""),
    ("code", """spec = br.load_spec("system_comparison")
model = br.Model(spec.formula, spec.prepare(ter), object=spec.object)
system = model.compare(factor=spec.factor, h0=spec.h0, n_boot=100, **{**FAST, "draws": 1000, "tune": 1000})
print(system)"""),
    ("code", """system.contrasts[["contrast", "estimate", "low", "high", "p", "p_holm", "effect_size",
                  "post_median", "post_low", "post_high", "p_direction"]]"""),
    ("code", """display(system.plot("contrasts", title="kreutzer_ter: system contrasts (TER)"))"""),
    ("md", """**Where they agree.** With 7,287 scores the two engines tell one story. The
GLRT rejects equal systems (χ² = 34.09, df = 2, p = 3.96e-8, as published);
Baseline − Marking (0.012 TER, effect size ≈ 0.21 residual SDs, as published)
and Baseline − PostEdit (0.010) are significant, and their posterior
intervals exclude 0 with probability of direction 1.00. Marking − PostEdit
is not significant (p ≈ 0.07), and its posterior interval includes 0 (probability
of direction ≈ 0.97): both say the data cannot order the two interactive
systems. Sentences carry ≈ 95 % of the variance (φ ≈ 0.95, excellent, in both
engines); variance components, φ and contrasts raise no flag.

**Where they differ.** The one flag is the model comparison itself: the GLRT
rejects H0 with p = 4e-8, while leave-one-*sentence*-out LOO prefers H1 by
about 14 elpd with a standard error of about 9 — under two standard errors.
The two answer different questions: the GLRT asks whether the system means
differ at all; LOO asks how much knowing the system improves the prediction
of a *new sentence's* scores, and a difference of ~0.01 TER is small next to
a sentence SD of 0.25. Significant, but predictively modest — exactly the
distinction between significance and effect size (≈ 0.2 residual SDs) that
the papers draw."""),
    ("md", """## 3. Conditional on sentence length: m1' against m0'

Length classes short (≤ 15 words), typical (16–55), very long (> 55) from
`src_length`; the spec `conditional_length` derives them and tests the
system × length interaction."""),
    ("code", """spec = br.load_spec("conditional_length")
model = br.Model(spec.formula, spec.prepare(ter), object=spec.object)
by_length = model.compare(factor=spec.factor, by=spec.by, h0=spec.h0, n_boot=100,
                          **{**FAST, "draws": 1000, "tune": 1000})
print(by_length)"""),
    ("code", """display(by_length.plot("means"))
display(by_length.plot("contrasts", title="system contrasts within length classes"))"""),
    ("md", """**Where they agree.** The interaction GLRT reproduces the published
χ² = 32.43, df = 4, p = 1.56e-6. Within each length class every contrast has
the same verdict in both engines: on short and very long sentences Baseline
is worse than both interactive systems; on typical sentences only
Baseline − Marking is significant (Wald p ≈ 0.006; posterior interval above 0),
while Baseline − PostEdit (p ≈ 0.09) has a posterior interval that includes 0,
like its Wald interval.
On the 91 very long sentences Marking − PostEdit is significant (p ≈ 0.009) and its
posterior interval excludes 0 as well. The intervals are wide there — few
sentences — and the posterior intervals are about as wide as the Wald ones:
the default priors are weak relative to this much data. As for the omnibus
test, LOO favours the interaction model by less than two standard errors
(≈ 10 ± 9 elpd) where the GLRT rejects (p = 1.6e-6), and is flagged."""),
]

NOTEBOOKS["annotation_reliability"] = [
    ("md", """# Annotation reliability: G-study and D-study, REML next to the posterior

Ten raters score five sentences on three occasions in each of two modes
(`Marking`, `Post Edit`): a fully crossed sentence × rater × occasion design
(thesis Tables 3.1/3.2, Fig. 3.3). The spec `annotation` fits it per mode."""),
    ("code", SETUP),
    ("code", """annotation = br.load_dataset("kreutzer_annotation")
spec = br.load_spec("annotation")
print(spec.formula)
results = {}
for mode in ["Marking", "Post Edit"]:
    model = br.Model(spec.formula, spec.prepare(annotation), object=spec.object, where=f"{spec.split} == '{mode}'")
    # 150 ratings and seven components: 1,000 draws per chain to meet the tail-ESS requirement
    results[mode] = model.compare(n_boot=200, **{**FAST, "draws": 1000, "tune": 1000})"""),
    ("md", """## Variance components (published, Table 3.1/3.2: Marking sentence 12.0 %, rater 14.2 %,
sentence:rater 16.1 %, residual 57.6 %, the rest 0; Post Edit sentence 60.4 %, rater 1.7 %,
sentence:rater 23.7 %, rater:occasion 0.8 %, residual 13.4 %)"""),
    ("code", """for mode, result in results.items():
    print(f"=== {mode}")
    print(result)
    print()"""),
    ("code", """for mode, result in results.items():
    display(result.plot("components", title=f"{mode}: percent of variance"))
    display(result.plot("phi", title=f"{mode}: phi of a single rating"))"""),
    ("md", """## D-study: φ of the mean over n raters (Fig. 3.3), REML and posterior

The same D-study formulas take REML estimates (lines) or posterior draws
(dotted medians, shaded 95 % bands)."""),
    ("code", """for mode, result in results.items():
    display(result.plot("d_study", facet="rater", fixed={"occasion": [1, 3]}, title=f"{mode}: D-study over raters"))
    print(mode)
    display(result.d_study({"rater": [1, 2, 3, 5, 10, 20]}).set_index("rater"))"""),
    ("md", """**Where they agree.** The REML components reproduce the published tables
(Marking sentence 0.0030, rater 0.0036, sentence:rater 0.0041, residual 0.0145;
Post Edit sentence 0.0479, sentence:rater 0.0187, residual 0.0106) and the
posterior medians lie close to them. Both engines rate single Marking ratings
as *poor* (φ ≈ 0.11–0.12) and single Post Edit ratings as *moderate* (REML 0.60,
posterior median about 0.5), and both D-studies say that averaging over more
raters is what helps — for Post Edit, ten raters bring φ to about 0.9 (REML
0.94, posterior median 0.89). For Marking the posterior is
more pessimistic than REML (median φ of a 20-rater mean about 0.6 against REML's
0.73) and its band stays wide: with five sentences the sentence variance itself
is barely known.

**Where they disagree.** Five sentences, ten raters and three occasions are
very little information about a variance. REML puts the occasion-related
components at exactly 0; the posterior says they could be sizeable — the
occasion share's 95 % interval reaches about a quarter of the variance — and `compare` flags
each such component. The bootstrap intervals of the non-zero components
(e.g. sentence: 0 to about a third of the variance in Marking) are just as
wide: the frequentist point estimates look precise only because they come
without intervals in the published tables. The posterior φ of Post Edit
spreads from poor to good (95 % interval about 0.24–0.76), so the label is not
settled by these data."""),
]

NOTEBOOKS["grid_reliability"] = [
    ("md", """# Reliability of the full meta-parameter grid, and learning rate × sentence length

`kreutzer_marking_full`: TER of 324 `Marking` models (a fully crossed grid of
six meta-parameters) on 1,041 sentences, 337,284 scores. On this file lme4
1.1-31 gives sentence_id 85.9 %, learning_rate 0.32 %, residual 13.7 %
(φ = 0.859), delta_scheme 0; the thesis's 91.7 % came from another version
of the data."""),
    ("code", SETUP),
    ("code", """grid = br.load_dataset("kreutzer_marking_full")
spec = br.load_spec("grid_vca")
full = br.Model(spec.formula, spec.prepare(grid), object=spec.object).compare(n_boot=100, **FAST)
print(full)"""),
    ("code", """display(full.plot("components", title="full grid: percent of variance"))
display(full.plot("phi", title="full grid: phi (sentence_id)"))"""),
    ("code", """posterior = full.posterior.to_dict()
fp = posterior["phi_finite_population"]
print(f"finite-population phi (these levels of every factor): median {fp['median']:.3f}, "
      f"95 % interval [{fp['low']:.3f}, {fp['high']:.3f}]")
pd.DataFrame(posterior["components_finite_population"]).set_index("name")"""),
    ("md", """**Where they agree.** The sentence and residual variances agree to three
digits (REML 0.1081 and 0.0172, as lme4; posterior medians the same), and
both engines find every meta-parameter small next to the sentences.

**Where they disagree, and why.** The grid's meta-parameters have two to
four levels each. Two or three levels say almost nothing about a
*superpopulation* variance, so its posterior follows the prior (a half-normal
with 95 % of its mass below the SD of the scores) and reaches far up: the
learning rate's share, 0.3 % by REML, may be up to a fifth of the variance.
Summed over six such factors, the posterior of φ — the sentences' share of a
variance that includes those hypothetical other learning rates and dropouts —
has its median (about 0.80) below the REML plug-in 0.859 and a long lower tail
(95 % interval from about 0.47); the Koo & Li label, *good*, is the same. The
bootstrap, which re-simulates from the REML values, does not see this
uncertainty. The *finite-population* φ (the variance of these very levels'
effects, from the same posterior) agrees with REML. Which one to report is a
question of the inference wanted: reliability over *these* meta-parameter
values, or over values like them."""),
    ("md", """## Learning rate × sentence length (nested facet)

`learning_rate_length`: `(1|learning_rate/src_length_class)` gives a
learning-rate component and a component for length classes within each
learning rate — how much the learning rate's effect differs between short,
typical and very long sentences."""),
    ("code", """spec = br.load_spec("learning_rate_length")
nested = br.Model(spec.formula, spec.prepare(grid), object=spec.object).compare(n_boot=100, **FAST)
print(nested)"""),
    ("code", """display(nested.plot("components", title="learning rate / length class"))"""),
    ("md", """**Where they agree.** Both engines put most of the variance (≈ 60–75 %)
on `learning_rate:src_length_class` and call φ for sentences *poor*
(REML 0.20, posterior median ≈ 0.26). Read the formula before reading that
as an interaction: without a fixed effect of the length class, this component
also holds the plain difference between short, typical and very long
sentences (very long ones have far higher TER), which thereby leaves the
sentence component (20 % here against 86 % in the grid model). To isolate the
interaction, put the length class in the fixed part:
`ter ~ src_length_class + (1|sentence_id) + (1|learning_rate/src_length_class)`.

**Where they disagree.** The learning rate's own component is exactly 0 in
REML but may hold anything from 0 to about a quarter of the variance in the
posterior (three levels), which `compare` flags. These are fast settings
(2 chains × 500 draws); run the package defaults (4 chains × 1,000 draws)
before quoting the posterior's digits."""),
]

NOTEBOOKS["meta_parameter_importance"] = [
    ("md", """# Meta-parameter importance on the SOFA MLP grid

12,150 MLPs predicting SOFA scores, one accuracy each, over a full grid of
seven meta-parameters. No item facet: the question is which meta-parameters
move the accuracy. Published (tutorial table): residual 61.2 %,
hidden_number 31.0 %, learning_rate 6.2 %, batch_size 1.01 %,
hidden_size_max 0.505 %, dropout 0.117 %, random_seed 0.008 %, epochs 0."""),
    ("code", SETUP),
    ("md", """Without an item facet there is no object of measurement, and `phi=False`
leaves φ out (`--no-phi` on the command line)."""),
    ("code", """sofa = br.load_dataset("sofa_mlp_grid")
spec = br.load_spec("meta_importance")
importance = br.Model(spec.formula, spec.prepare(sofa)).compare(phi=False, n_boot=100, **FAST)
print(importance)"""),
    ("code", """display(importance.plot("components", title="SOFA grid: percent of accuracy variance"))"""),
    ("code", """levels = {name: sofa[name].nunique() for name in spec.columns.values() if name != "accuracy"}
pd.Series(levels, name="levels")"""),
    ("md", """**Where they agree.** REML reproduces the published shares, and both
engines rank the meta-parameters the same way: the number of hidden layers
matters most, then the learning rate, then batch size and hidden size; seed,
dropout and epochs next to nothing. The residual variance is pinned down
equally well by both.

**Where they disagree.** Each meta-parameter has only a handful of levels,
so the uncertainty about its variance is large: hidden_number's share runs
from a few percent to about 60 % in *both* the bootstrap and the posterior
interval, and the posterior gives the large components more weight (and the
residual less) than the REML point estimates. REML puts `epochs` at exactly 0
while the posterior allows it a few percent, which `compare` flags. An
importance ranking is safe here; the percentages of the published table are
not precise to the digits printed."""),
]

NOTEBOOKS["quick_start"] = [
    ("md", """# Quick start: your own CSV

One row per (test item, model instance) with the score, the system and any
meta-parameters. This notebook writes such a CSV with known truth (item SD
0.15, seed SD 0.02, residual SD 0.05, system B better than A by 0.02), then
analyses it with `import bayesrepro as br` alone."""),
    ("code", """%matplotlib inline
import numpy as np
import pandas as pd
import tempfile
from pathlib import Path
from IPython.display import display

import bayesrepro as br

pd.set_option("display.precision", 4)
pd.set_option("display.width", 160)
FAST = dict(draws=500, tune=500, chains=2, seed=1, allow_unconverged=True)"""),
    ("code", """rng = np.random.default_rng(7)
items, seeds = 300, 3
rows = []
item_effect = rng.normal(0, 0.15, items)
for system, shift in [("A", 0.0), ("B", -0.02)]:
    seed_effect = rng.normal(0, 0.02, seeds)
    for s in range(seeds):
        for i in range(items):
            rows.append({"segment": f"s{i}", "model": system, "run": f"{system}{s}",
                         "bleu_error": 0.5 + shift + item_effect[i] + seed_effect[s] + rng.normal(0, 0.05)})
folder = Path(tempfile.mkdtemp())
path = folder / "my_scores.csv"
pd.DataFrame(rows).to_csv(path, index=False)
print(path, len(rows), "rows")"""),
    ("md", """Read it (CSV, TSV, Parquet or JSON Lines; `where=` filters rows), fit the
model of a system comparison, and set the frequentist and the Bayesian answer
side by side. `fit.to_dict()` is what `bayesrepro vca --json` prints,
`result.to_dict()` what `bayesrepro compare --json` prints."""),
    ("code", """data = br.read(path)
model = br.Model("bleu_error ~ model + (1|segment)", data, object="segment")
fit = model.fit()
display(fit)
display(fit.fixed_effects)
result = model.compare(factor="model", h0="bleu_error ~ 1 + (1|segment)", n_boot=100, **FAST)
print(result.summary())"""),
    ("md", """The seeds are a second source of variance; add them to the formula directly
(any Bambi/formulae random-intercept formula works):"""),
    ("code", """with_seeds = br.Model("bleu_error ~ model + (1|segment) + (1|run)", data, object="segment")
result = with_seeds.compare(n_boot=100, **FAST)
print(result.summary())
display(result.plot("contrasts", title="B - A with seeds as a random effect"))"""),
    ("md", """A misspelt column or argument fails with one line that says what to do,
naming the Python argument:"""),
    ("code", """for attempt in (lambda: br.Model("bleu_eror ~ model + (1|segment)", data).fit(),
                lambda: br.Model("bleu_error ~ model + (1|segment)", data, object="run")):
    try:
        attempt()
    except br.BayesreproError as error:
        print(error)"""),
    ("md", """The same analysis as a self-contained HTML report, on the command line:
`bayesrepro report my_scores.csv --spec system_comparison --column score=bleu_error
--column item=segment --column system=model --out report.html`."""),
    ("md", """**Where they agree, and where they do not.** Both engines recover the item
variance (truth 0.15² = 0.0225; estimates ≈ 0.019 from these 300 items) and
the residual (0.05² = 0.0025), and give the same φ. The simulated systems
differ by A − B = 0.02 in expectation, but with three seeds per system the
seed effects drawn here add another 0.03 to the realised difference. Without
`(1|run)` both engines attribute that to the systems: A − B ≈ 0.050 with a
Wald and a posterior interval of ± 0.005 — agreeing with each other, and both
overconfident, since the run-to-run variation is not in the model. With
`(1|run)` the seed component appears (≈ 1 % of the variance, from six runs)
and the intervals widen: six runs carry the system effect, so the contrast
is a Kenward-Roger t test on 4 degrees of freedom, [0.016, 0.084], next to
the posterior [0.007, 0.087], which carries the uncertainty of the run
variance as well. Both still put A above B (Kenward-Roger p ≈ 0.015, against
0.003 from the asymptotic chi2; probability of direction ≈ 0.99). LOO, leaving
out one segment at a time, sees no predictive gain from the system term
(≈ 0.0 ± 0.3 elpd): with the six runs' effects in the model, knowing the
system adds nothing to the prediction of a new segment, and `compare` flags
that against the GLRT. Three seeds per system cannot separate a system effect
from run-to-run variation with confidence — the honest price of having three
seeds."""),
]


def main(names) -> None:
    for name in names or NOTEBOOKS:
        write_executed(NOTEBOOKS[name], HERE / f"{name}.ipynb", timeout=600)
        print("wrote", HERE / f"{name}.ipynb")


if __name__ == "__main__":
    main(sys.argv[1:])
