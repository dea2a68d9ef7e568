"""Write and execute notebooks/planning.ipynb (run from anywhere with the project's Python).

The sentences that quote a number are printed by the code cells from the results they
describe, so the prose cannot drift from the outputs when the notebook is re-executed.
"""

from pathlib import Path

from notebook_writer import write_executed

HERE = Path(__file__).resolve().parent

CELLS = [
    ("md", """# Planning the next evaluation: items, seeds and their cost

Before spending compute the question is not "is my result significant" but
"how many test items and how many training runs do I need to detect a
difference of δ, and which should I buy?". This notebook answers it for the
papers' system comparison (`kreutzer_ter`: 1,041 sentences, a Baseline model and
three seeds each of `Marking` and `PostEdit`) and asks what the cheapest design
with reliability φ ≥ 0.9 is on the `Marking` grid (`kreutzer_marking_full`).

Everything below calls `Model.plan` of `import bayesrepro as br`; the same
answers come from the command line, e.g.
`bayesrepro plan kreutzer_ter --formula 'ter ~ system + (1|sentence_id) + (1|system:replication)' --contrast system=PostEdit-Marking --vary sentence_id=250,1041,4000 --vary replication=3,10`."""),
    ("code", """%matplotlib inline
import numpy as np
import pandas as pd
from IPython.display import display

import bayesrepro as br

pd.set_option("display.precision", 4)
pd.set_option("display.width", 140)
FORMULA = "ter ~ system + (1|sentence_id) + (1|system:replication)"
TARGET = 0.8
model = br.Model(FORMULA, "kreutzer_ter")"""),
    ("md", """## 1. The pilot: what the papers' comparison tells about its own variance

The model treats sentences as crossed with systems and the replications
(seeds) as nested in systems: `(1|system:replication)` is the variance between
training runs of one system. The plan takes the REML components, the
contrast's estimate, and the design's structure from this fit."""),
    ("code", """pilots = {name: model.plan(f"system={name}", {"replication": [3]}, simulations=0).to_dict()["assumed"]
          for name in ("Marking-Baseline", "PostEdit-Marking")}
for name, pilot in pilots.items():
    print(f"{name}: estimate {pilot['pilot_estimate']['estimate']:.4f} (SE {pilot['pilot_estimate']['std_error']:.4f})")
components = pd.DataFrame(pilot["components"]).set_index("name")["variance"]
display(components)
print(*pilot["nesting"])
ratio = pilots["Marking-Baseline"]["pilot_estimate"]["estimate"] / pilots["PostEdit-Marking"]["pilot_estimate"]["estimate"]
print(f"seed variance of the pilot: {components['system:replication']:.3g}; "
      f"|Marking - Baseline| is {abs(ratio):.1f} times |PostEdit - Marking|")"""),
    ("md", """TER is lower for the interactive systems, and the seed component is
estimated at zero: the three replications of `Marking` and `PostEdit` do not
differ more than their sentence-level noise implies.

## 2. Power per number of sentences and seeds

For a balanced design the variance of the contrast is a sum over the
components that vary with the system (here the seeds and the residual), each
divided by its number of levels per system; the sentence component cancels.
With a few seeds per system the package tests the contrast with Kenward–Roger's
t (`glrt`'s rule: fewer than 50 levels carry it), whose degrees of freedom are
2 × (seeds − 1) here, however many sentences there are. The closed form
integrates over the REML estimate of the seed variance, which is zero in about
half of the planned data sets when the truth is zero: the test then pools the
seeds with the residual and loses power."""),
    ("code", """SMALL = "system=PostEdit-Marking"
table = model.plan(SMALL, {"sentence_id": [250, 500, 1041, 2000, 4000, 8000], "replication": [2, 3, 5, 10]},
                   simulations=0).rows
table.pivot(index="sentence_id", columns="replication", values="power").round(3)"""),
    ("code", """for seeds in (2, 3, 5, 10):
    found = model.plan(SMALL, {"replication": [seeds]}, cost="sentence_id=1", target_power=TARGET,
                       simulations=0).to_dict()["allocation"]
    needed = f"{found['counts']['sentence_id']:,} sentences" if found["counts"] else "more than 10^6 sentences"
    print(f"PostEdit - Marking, {seeds} seeds per system: {needed} for power {TARGET}")"""),
    ("md", """The pilot's zero is an estimate from three runs per system. If training runs
varied as much as the learning rates of the `Marking` grid do (the grid's
learning-rate component, a pessimistic stand-in for run-to-run variation),
the picture changes: each curve flattens at the power that unlimited
sentences would give with that many seeds (dashed lines), and only more seeds
lift the plateau. `assume=` puts such a variance in place of the pilot's
estimate (`--assume` on the command line)."""),
    ("code", """FACETS = ["learning_rate", "seed", "encoder_dropout", "decoder_dropout", "decoder_dropout_hidden", "delta_scheme"]
grid = br.Model("ter ~ 1 + (1|sentence_id) + " + " + ".join(f"(1|{facet})" for facet in FACETS),
                "kreutzer_marking_full", object="sentence_id")
grid_fit = grid.fit()
run_variance = grid_fit.components.loc["learning_rate", "variance"]
LARGE = "system=Marking-Baseline"
PESSIMISTIC = {"assume": {"system:replication": run_variance}}
print(f"between-run variance assumed: {run_variance:.3g}")
curves = model.plan(LARGE, {"sentence_id": [100, 20000], "replication": [3, 10, 30, 60]}, simulations=0,
                    figure=True, **PESSIMISTIC).plot()
curves.axes[0].set_title("Marking - Baseline if runs varied like the grid's learning rates")
curves"""),
    ("md", """## 3. Does the closed form describe the test the package runs?

The simulation draws data sets from the assumed model (as sufficient
statistics, without rows), refits each with the package's engine and applies
the test. The closed form of the same test (`power_closed_form`) integrates
over the distribution of the REML components, boundary included; `size` is
that test's actual level under no effect. (`tests/test_plan_calibration.py`
holds the two within 0.03 on a grid of designs with 4,000 refits each; the
differences measured there are at most 0.010.)"""),
    ("code", """check = model.plan(LARGE, {"sentence_id": [300, 1041], "replication": [3, 10]}, simulations=1200, seed=1,
                   **PESSIMISTIC)
shown = check.rows[["sentence_id", "replication", "test", "df", "power", "mc_se", "power_closed_form", "size"]]
display(shown)
gap = (shown["power"] - shown["power_closed_form"]).abs()
print(f"largest |simulated - closed form|: {gap.max():.3f} ({(gap / shown['mc_se']).max():.1f} Monte-Carlo SE)")
at_zero = model.plan(SMALL, {"sentence_id": [1041], "replication": [3]}, simulations=400, seed=2,
                     test="wald").rows.iloc[0]
print(f"at the pilot's own zero seed variance, Wald z: simulated {at_zero['power']:.3f} +- {at_zero['mc_se']:.3f}, "
      f"closed form {at_zero['power_closed_form']:.3f}")"""),
    ("md", """## 4. The cheapest design

A test sentence costs 1 (its reference translation and scoring), a training
run 200. Seeds are nested in systems, so `system:replication=200` prices every
run of either system. The search tries every number of seeds per system up to
50 and finds the smallest number of sentences reaching the target by bisection;
power and cost both grow with every count, so this is exact."""),
    ("code", """COSTS = "sentence_id=1,system:replication=200"
rows = []
for name, contrast, assumed in [("PostEdit-Marking, pilot", SMALL, {}), ("Marking-Baseline, pilot", LARGE, {}),
                                ("Marking-Baseline, runs like learning rates", LARGE, PESSIMISTIC)]:
    plan = model.plan(contrast, cost=COSTS, target_power=TARGET, simulations=0, **assumed).to_dict()
    best = plan["allocation"]
    rows.append({"assumptions": name, "effect": plan["assumed"]["effect"], **{k: v for k, v in best["counts"].items()
                 if not k.startswith("(")}, "cost": best["cost"], "power": best["power"]})
cheapest = pd.DataFrame(rows)
display(cheapest)
for row in cheapest.itertuples():
    print(f"{row.assumptions}: {row.replication} seeds per system and {row.sentence_id:,} sentences "
          f"(cost {row.cost:,.0f})")"""),
    ("code", """frontier = model.plan(LARGE, cost=COSTS, target_power=TARGET, simulations=0, figure=True, **PESSIMISTIC)
print(frontier.summary())
figure = frontier.plot()
figure.axes[0].set_title("Marking - Baseline, runs like learning rates: best power per budget")
figure"""),
    ("md", """With the pilot's zero seed variance, seeds still buy degrees of freedom
for the Kenward–Roger test and sentences do the rest; under the pessimistic
run-to-run variance the cheapest design buys many runs and relatively few
sentences: once seeds dominate, sentences stop helping.

## 5. Assurance: averaging over what the pilot does not know

Power takes the pilot's point estimates as the truth. The posterior of the
pilot (`Model.sample`, exact fast path) says how uncertain the seed variance and
the effect are; assurance is the probability that the planned study's 95 %
posterior interval of the contrast excludes zero, averaged over those draws
(given a draw, the planned posterior is t with that draw's degrees of freedom)."""),
    ("code", """posterior = model.sample(draws=2000, tune=1000, chains=2, seed=3, prob=0.9)
effect = posterior.contrasts("system").loc["PostEdit - Marking"]
print(f"posterior of PostEdit - Marking: median {effect['median']:.4f}, "
      f"90% interval [{effect['low']:.4f}, {effect['high']:.4f}]")
print(f"posterior median of the seed variance: {posterior.components.loc['system:replication', 'variance']:.2e}")
assured = model.plan(SMALL, {"sentence_id": [1041, 4000, 8000], "replication": [3, 10]}, simulations=0,
                     assurance=True, draws=2000, tune=1000, chains=2, seed=3).rows
assured = assured[["sentence_id", "replication", "power", "assurance", "assurance_mc_se"]]
display(assured)
top = assured.iloc[-1]
print(f"at {int(top['sentence_id']):,} sentences and {int(top['replication'])} seeds per system: power "
      f"{top['power']:.2f}, assurance {top['assurance']:.2f}")"""),
    ("md", """Assurance is flatter than the point-estimate power: the posterior puts
weight on seed variances above zero (three runs cannot rule them out) and on
smaller effects, so where the point estimate promises near certainty,
assurance stays lower (the last line above). It is the figure to plan with
when the pilot is small.

## 6. The cheapest reliable design on the `Marking` grid

φ (Brennan's Φ) is the share of a sentence's score variance that is the
sentence's own when its score is averaged over n levels of each meta-parameter.
Every configuration is a training run; if a run costs 1 whatever its
meta-parameters, the cost of a design is the product of its level counts."""),
    ("code", """RUN = ":".join(FACETS)
print(f"phi of one configuration: {grid_fit.d_study({'seed': 1})['phi'].iloc[0]:.3f}")
exact = grid.plan(cost=f"{RUN}=1", target_phi=0.9, maximum=dict.fromkeys(FACETS, 4))
greedy = grid.plan(cost=f"{RUN}=1", target_phi=0.9)
print("exact search, at most 4 levels each:", exact.summary().split("\\n\\n")[0], sep="\\n")
print("greedy search, up to 50 levels each:", greedy.summary().split("\\n\\n")[0], sep="\\n")
chosen, other = exact.to_dict()["allocation"], greedy.to_dict()["allocation"]
bought = {k: v for k, v in chosen["counts"].items() if k in FACETS and v > 1}
print(f"phi >= 0.9 costs {chosen['cost']:g} runs: more than one level of {', '.join(bought) or 'no facet'}; "
      f"the two searches {'agree' if chosen['cost'] == other['cost'] else 'differ'}")"""),
    ("md", """The lines above name which meta-parameters the cheapest reliable design
varies: averaging over a second run that differs in the largest meta-parameter
component halves the residual (sentence × configuration) variance and averages
that component out."""),
]


def main() -> None:
    write_executed(CELLS, HERE / "planning.ipynb", timeout=1800)


if __name__ == "__main__":
    main()
