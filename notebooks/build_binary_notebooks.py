"""Write and execute the notebooks on 0/1 scores (run from anywhere with the project's Python).

    python notebooks/build_binary_notebooks.py                  # both
    python notebooks/build_binary_notebooks.py harness_logs

binary_benchmark: one simulated benchmark through the field's usual error bars, the
GLMM's likelihood-ratio test, latent φ and the posterior, side by side.
harness_logs: a grid of lm-evaluation-harness runs (written in the harness's own
format) imported into one table and analysed with the binary GLMM.
"""

import sys
from pathlib import Path

from notebook_writer import write_executed

HERE = Path(__file__).resolve().parent

SETUP = """import numpy as np
import pandas as pd
from IPython.display import display

import bayesrepro as br

pd.set_option("display.precision", 4)
pd.set_option("display.width", 160)"""

NOTEBOOKS = {}

NOTEBOOKS["binary_benchmark"] = [
    ("md", """# One binary benchmark, four kinds of error bars

Most evaluations score each test item right or wrong. This notebook simulates
one such benchmark with known truth (`br.simulate_binary_grid`: 600
items, three systems A, B, C with logit effects 0, 0.2 and 0.4, five training
seeds per system, four prompt templates; item SD 1.5, seed SD 0.2, prompt SD
0.3 on the logit scale) and reads it four ways:

1. the field's usual error bars (Wilson intervals, clustered standard errors,
   the paired difference, McNemar's test; Miller 2024),
2. the generalized linear mixed model by ML (Laplace) and its likelihood-ratio test,
3. the variance components and reliability φ of the items, on the latent and
   on the observation scale,
4. the posterior of the same model, φ on both scales.

The command line does the same with `bayesrepro baselines`, `bayesrepro glrt
--family bernoulli`, `bayesrepro vca` and `bayesrepro phi`."""),
    ("code", SETUP + """

spec = br.load_spec("binary_grid")
data = br.simulate_binary_grid(items=600, random_state=11)
print(len(data), "rows;", spec.formula)
data.head()"""),
    ("md", """## 1. The usual error bars

Every row counted as an independent trial (Wilson), the standard error
clustered by item, and the paired difference of two systems over the same
items. None of them knows that the five seeds of a system are five draws of a
training run: they treat the items as the only source of variation.

McNemar's test compares two systems item by item, one 0/1 score each; with 20
runs per item and system it is not defined, and the table leaves it empty."""),
    ("code", """baselines = br.baselines(data, "correct", "item", "system")
print(baselines)"""),
    ("md", """The way it is used in practice: one run per system, here seed 1 with prompt
`p1` (`bayesrepro baselines grid.csv --where "seed == 1 and prompt == 'p1'" ...`
on the command line). Each item then has one score per system, and McNemar's
exact test counts the items only one system of a pair got right."""),
    ("code", """one_run = data[(data["seed"] == 1) & (data["prompt"] == "p1")]
single = br.baselines(one_run, "correct", "item", "system")
display(single.pairs[["contrast", "paired_difference", "paired_p", "mcnemar_a_only", "mcnemar_b_only",
                      "mcnemar_p"]])"""),
    ("md", """## 2. The GLMM and its likelihood-ratio test

H1 is the spec's model, H0 the same without `system`; both fitted by ML
(Laplace approximation, as lme4's `glmer`). The contrasts come on the logit
scale, as odds ratios and as differences of probabilities (`br.baselines` with
the formula adds them to the error bars, as `bayesrepro baselines --formula`
does)."""),
    ("code", """model = br.Model(spec.formula, data, object="item")
print(model.glrt(h0=spec.h0))
glmm = br.baselines(data, "correct", "item", "system", formula=spec.formula)
display(glmm.glmm_means[["system", "probability", "low", "high"]])
display(glmm.glmm_contrasts[["contrast", "estimate", "std_error", "p_holm", "odds_ratio", "probability_difference",
                             "probability_low", "probability_high", "probability_p_holm"]])"""),
    ("md", """## 3. Where the variance lies, and how reliable one run is

The latent-scale components add the logistic residual π²/3 (Nakagawa &
Schielzeth 2010); φ of the items is their share. On the observation scale (0/1
scores) the same model gives a smaller φ, because the binary residual is larger."""),
    ("code", """fit = model.fit()
display(fit.components)
print("phi of the items:", {"latent": round(fit.phi, 4), "observed": round(fit.phi_observed, 4)})
truth = {"item": 1.5**2, "system:seed": 0.2**2, "prompt": 0.3**2}
print("true latent phi:", round(truth["item"] / (sum(truth.values()) + np.pi**2 / 3), 4))"""),
    ("md", """## 4. The posterior of the same model

Bambi's default priors, sampled on the binomial cell counts (the binary fast
path). The posterior medians sit next to the ML estimates; the four prompt
templates leave the prompt SD wide, and φ's interval with it. φ comes on both
scales: the latent one (the items' share of the latent variance) and the
observation one (the correlation of two 0/1 scores of one item), each draw's
components and fixed effects giving one value of each."""),
    ("code", """posterior = model.sample(draws=1000, tune=1000, chains=2, seed=3, prob=0.9)
print(posterior.summary())
display(posterior.components)"""),
    ("code", """phi = {"latent": posterior.phi, "observed": posterior.to_dict()["phi_observed"]}
scales = pd.DataFrame({
    "ML (Laplace)": {"latent": fit.phi, "observed": fit.phi_observed},
    "posterior median": {scale: value["median"] for scale, value in phi.items()},
    "90 % interval": {scale: "[{low:.3f}, {high:.3f}]".format(**value) for scale, value in phi.items()},
})
scales.index.name = "phi of the items, scale"
display(scales)"""),
    ("code", """ml = np.sqrt(fit.components["variance"].drop("Residual"))
side = pd.DataFrame({"ML (Laplace)": ml, "true": pd.Series({k: np.sqrt(v) for k, v in truth.items()})})
side.index.name = "SD (logit scale)"
display(side)
display(posterior.contrasts("system"))"""),
    ("md", """## 5. Side by side

`compare` sets the two engines' answers next to each other (ML with
bootstrap intervals from simulated 0/1 scores; the posterior) and says where
they disagree; `bayesrepro report DATA --spec binary_grid` renders it as HTML."""),
    ("code", """side = model.compare(n_boot=100, draws=1000, tune=1000, chains=2, seed=3)
print(side)"""),
    ("md", """**What the mixed model adds.** The baselines' intervals of a system
difference are narrow because they see the 600 items only: the paired
difference calls B and C different far beyond any doubt. McNemar's test on one
run per system tells yet another story: A and B differ (p = 0.036), A and C do
not (p = 0.074), although C is the better system; one run is one draw of the
seeds and prompts, and another run would give other p-values. The GLMM and the
posterior also count the five seeds per system, the replication a second lab
would redo: A is still told apart from B and C, but whether C beats B is left
open (its interval on the logit scale reaches 0), which is what a seed SD of
0.2 against a true difference of 0.2 should give."""),
]

NOTEBOOKS["harness_logs"] = [
    ("md", """# From harness logs to conclusions

An evaluation harness writes one log per run: here lm-evaluation-harness, with
two models × three training seeds × two few-shot settings on one multiple-choice
task of 300 questions. `br.simulate_harness_logs` writes these
logs in the harness's own format (`results_<timestamp>.json` beside
`samples_<task>_<timestamp>.jsonl`) with known truth: a logit model with item
SD 1.2, seed SD 0.15, `tuned` better than `base` by 0.5 and five shots better
than none by 0.3. The last section checks the answers against this truth.

The command line reads the same folder with
`bayesrepro import lm-eval LOGS --out runs.parquet`, or directly as
`bayesrepro glrt lm-eval:LOGS ...`."""),
    ("code", SETUP + """
import json
import tempfile
from pathlib import Path

logs = Path(tempfile.mkdtemp()) / "lm-eval-runs"
grid = br.simulate_harness_logs(logs, harness="lm-eval", seeds=(1, 2, 3), items=300, random_seed=5)
truth = grid.truth
print(grid.runs, "runs;", sorted(p.name for p in logs.rglob("*"))[:4], "...")"""),
    ("md", """## 1. Import: one row per run and item

Every run's settings become columns (`seed`, `num_fewshot`, the model
arguments), every metric keeps the harness's name (`acc`, `acc_norm`). While
reading, each run's mean is checked against the aggregate lm-eval wrote in its
results file, a document id that carries a different document hash in two runs
is refused naming both runs, and so are two runs with the same model, arguments
and settings. `lm-eval:PATH` reads the table wherever a data source is
expected, without an intermediate file (`bayesrepro import` writes it to
Parquet or CSV and prints the aggregate checks)."""),
    ("code", """runs = br.read(f"lm-eval:{logs}", categorical=["num_fewshot"])
print(len(runs), "rows from", runs["run"].nunique(), "runs")
display(runs.head())
print(runs.groupby(["model", "num_fewshot"], observed=True)["acc"].mean())"""),
    ("md", """## 2. Is the tuned model better, once seeds vary?

The binary GLMM with items, and seeds within models, as random intercepts; the
few-shot setting as a fixed effect. H0 drops the model. The likelihood-ratio
test reads the logs directly (the command line's
`bayesrepro glrt lm-eval:LOGS --h0 ... --h1 ...`); the contrasts follow."""),
    ("code", """H0 = "acc ~ num_fewshot + (1|item) + (1|model:seed)"
H1 = "acc ~ model + num_fewshot + (1|item) + (1|model:seed)"
glmm = br.Model(H1, f"lm-eval:{logs}", categorical=["num_fewshot"])
test = glmm.glrt(h0=H0)
print(test)
contrasts = br.baselines(runs, "acc", "item", "model", formula=H1)
display(contrasts.glmm_means[["model", "probability", "low", "high"]])
display(contrasts.glmm_contrasts[["contrast", "estimate", "std_error", "p_holm", "odds_ratio",
                                  "probability_difference", "probability_low", "probability_high"]])"""),
    ("md", """## 3. How reliable is one run's score on these items?

φ of the items against the seeds and the few-shot settings: the same GLMM
with the few-shot setting as a random facet (two levels give only a rough
estimate of its variance), on the latent logit scale and on the observation
scale. The D-study asks what averaging over more seeds would buy."""),
    ("code", """FACETS = "acc ~ model + (1|item) + (1|model:seed) + (1|num_fewshot)"
model = br.Model(FACETS, runs, object="item")
facets = model.fit()
display(facets.components)
print("phi of the items:", {"latent": round(facets.phi, 4), "observed": round(facets.phi_observed, 4)})
display(facets.d_study({"seed": [1, 3, 10]}).set_index("seed"))"""),
    ("md", """## 4. The field's usual error bars, for contrast

Wilson intervals and clustered standard errors per model, and the paired
difference over items, all blind to the seeds."""),
    ("code", """print(br.baselines(runs, "acc", "item", "model"))"""),
    ("md", """## 5. The posterior of the same model

Bambi's default priors, items integrated out, the rest sampled by NUTS. Six
seeds (three per model) cannot pin the seed component down and ML puts it at
zero; the posterior's funnel near zero needs a higher `target_accept` (0.99)
than the default to be sampled without divergent transitions. Nothing here
allows an unconverged posterior: a run that did not converge would stop the
notebook."""),
    ("code", """SAMPLING = dict(draws=1000, tune=1000, chains=2, target_accept=0.99, seed=1)
posterior = model.sample(**SAMPLING)
print(posterior.summary())"""),
    ("md", """## 6. Both engines side by side

`Model.compare` fits the binary GLMM by ML (bootstrap intervals from
simulated 0/1 scores) and its posterior at the same sampler settings, and says
where they disagree. The command line renders the same comparison as one
self-contained HTML page with `bayesrepro import lm-eval LOGS --out runs.parquet`
and `bayesrepro report runs.parquet --spec binary_grid --column score=acc
--column system=model --column prompt=num_fewshot --target-accept 0.99
--out report.html`."""),
    ("code", """side = model.compare(factor="model", n_boot=100, **SAMPLING)
print("not converged:", side.not_converged() or "nothing")
print("flags:", side.flags)"""),
    ("md", """The one flag is the seed component: with three seeds per model, ML puts
its variance at exactly zero while the posterior still allows up to about one
and a half percent of the latent variance (the simulated truth, SD 0.15, is 0.5 %).

## 7. Against the truth

Each estimate next to the value the logs were simulated from, with its
standard error (Wald for ML's fixed effects, the posterior SD for the
component SDs). The stated tolerance: the GLRT rejects "no model difference"
at the 1 % level, and every estimate lies within three standard errors of the
truth."""),
    ("code", """draws = posterior.idata.posterior
ml = glmm.fit().fixed_effects[["estimate", "std_error"]]  # H1 by ML
estimates = {
    "model effect (tuned - base)": (*ml.loc["model[sim/tuned]"], truth.model_effects["tuned"] - truth.model_effects["base"]),
    "five shots - none": (*ml.loc["num_fewshot[5]"], truth.shot_effects[5] - truth.shot_effects[0]),
    "item SD": (float(draws["1|item_sigma"].median()), float(draws["1|item_sigma"].std()), truth.sd_item),
    "seed SD": (float(draws["1|model:seed_sigma"].median()), float(draws["1|model:seed_sigma"].std()), truth.sd_seed),
}
check = pd.DataFrame(estimates, index=["estimate", "standard error", "truth"]).T
check["z"] = (check["estimate"] - check["truth"]) / check["standard error"]
check["within 3 SE"] = check["z"].abs() < 3
display(check)
verdict = {"glrt_p": test.p, "glrt_rejects_at_1_percent": bool(test.p < 0.01),
           "within_3_se": {name: bool(row["within 3 SE"]) for name, row in check.iterrows()},
           "posterior_converged": posterior.converged and not side.not_converged()}
print("truth check:", json.dumps(verdict))"""),
]


def main(names) -> None:
    for name in names or NOTEBOOKS:
        write_executed(NOTEBOOKS[name], HERE / f"{name}.ipynb", timeout=1200)
        print("wrote", HERE / f"{name}.ipynb")


if __name__ == "__main__":
    main(sys.argv[1:])
