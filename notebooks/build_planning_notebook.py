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

Everything below calls `bayesrepro.plan`; the same answers come from the
command line, e.g.
`bayesrepro plan kreutzer_ter --formula 'ter ~ system + (1|sentence_id) + (1|system:replication)' --contrast system=PostEdit-Marking --vary sentence_id=250,1041,4000 --vary replication=3,10`."""),
    ("code", """%matplotlib inline
import numpy as np
import pandas as pd
from dataclasses import replace

from bayesrepro.plan import (analyse_pilot, plan_power, allocate, parse_costs, power_criterion, phi_criterion,
                             assurance, pilot_posterior)
from bayesrepro.plan.figures import power_curves, cost_frontier
from bayesrepro.plan.pilot import facet_structure
from bayesrepro.design import build_model_frame
from bayesrepro.frequentist.lmm import fit_model_frame

pd.set_option("display.precision", 4)
pd.set_option("display.width", 140)
FORMULA = "ter ~ system + (1|sentence_id) + (1|system:replication)"
TARGET = 0.8"""),
    ("md", """## 1. The pilot: what the papers' comparison tells about its own variance

The model treats sentences as crossed with systems and the replications
(seeds) as nested in systems: `(1|system:replication)` is the variance between
training runs of one system. The plan takes the REML components, the
contrast's estimate, and the design's structure from this fit."""),
    ("code", """pilots = {name: analyse_pilot(FORMULA, "kreutzer_ter", f"system={name}") for name in
          ("Marking-Baseline", "PostEdit-Marking")}
for name, pilot in pilots.items():
    print(f"{name}: estimate {pilot.estimate:.4f} (SE {pilot.std_error:.4f}); pilot counts {pilot.assumptions.counts}")
print(pilot.assumptions.components())
print(*pilot.assumptions.structure.describe_nesting())
ratio = pilots["Marking-Baseline"].estimate / pilots["PostEdit-Marking"].estimate
print(f"seed variance of the pilot: {pilot.assumptions.variances['system:replication']:.3g}; "
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
    ("code", """small = pilots["PostEdit-Marking"].assumptions
table = plan_power(small, {"sentence_id": [250, 500, 1041, 2000, 4000, 8000], "replication": [2, 3, 5, 10]},
                   simulations=0).table()
table.pivot(index="sentence_id", columns="replication", values="power").round(3)"""),
    ("code", """sentences = parse_costs("sentence_id=1", small.structure)
criterion = power_criterion(small, 0.05)
for seeds in (2, 3, 5, 10):
    found = allocate(small.structure, small.counts, sentences, criterion, target=TARGET,
                     fixed={"replication": seeds}, frontier=False)
    needed = f"{found.counts['sentence_id']:,} sentences" if found.counts else "more than 10^6 sentences"
    print(f"PostEdit - Marking, {seeds} seeds per system: {needed} for power {TARGET}")"""),
    ("md", """The pilot's zero is an estimate from three runs per system. If training runs
varied as much as the learning rates of the `Marking` grid do (the grid's
learning-rate component, a pessimistic stand-in for run-to-run variation),
the picture changes: each curve flattens at the power that unlimited
sentences would give with that many seeds (dashed lines), and only more seeds
lift the plateau."""),
    ("code", """grid_fit = fit_model_frame(build_model_frame(
    "ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout) + (1|decoder_dropout)"
    " + (1|decoder_dropout_hidden) + (1|delta_scheme)", "kreutzer_marking_full"), "reml")
run_variance = grid_fit.variances["learning_rate"]
large = pilots["Marking-Baseline"].assumptions
pessimistic = replace(large, variances={**large.variances, "system:replication": run_variance})
print(f"between-run variance assumed: {run_variance:.3g}")
power_curves(pessimistic, "sentence_id", [100, 20000], by={"replication": [3, 10, 30, 60]},
             title="Marking - Baseline if runs varied like the grid's learning rates")"""),
    ("md", """## 3. Does the closed form describe the test the package runs?

The simulation draws data sets from the assumed model (as sufficient
statistics, without rows), refits each with the package's engine and applies
the test. The closed form of the same test (`power_closed_form`) integrates
over the distribution of the REML components, boundary included; `size` is
that test's actual level under no effect. (`tests/test_plan_calibration.py`
holds the two within 0.03 on a grid of designs with 4,000 refits each; the
differences measured there are at most 0.010.)"""),
    ("code", """check = plan_power(pessimistic, {"sentence_id": [300, 1041], "replication": [3, 10]}, simulations=2000, seed=1)
shown = check.table()[["sentence_id", "replication", "test", "df", "power", "mc_se", "power_closed_form", "size"]]
display(shown)
gap = (shown["power"] - shown["power_closed_form"]).abs()
print(f"largest |simulated - closed form|: {gap.max():.3f} ({(gap / shown['mc_se']).max():.1f} Monte-Carlo SE)")
at_zero = plan_power(small, {"sentence_id": [1041], "replication": [3]}, simulations=400, seed=2, test="wald").rows[0]
print(f"at the pilot's own zero seed variance, Wald z: simulated {at_zero['power']:.3f} +- {at_zero['mc_se']:.3f}, "
      f"closed form {at_zero['power_closed_form']:.3f}")"""),
    ("md", """## 4. The cheapest design

A test sentence costs 1 (its reference translation and scoring), a training
run 200. Seeds are nested in systems, so `system:replication=200` prices every
run of either system. The search tries every number of seeds per system up to
50 and finds the smallest number of sentences reaching the target by bisection;
power and cost both grow with every count, so this is exact."""),
    ("code", """costs = parse_costs("sentence_id=1,system:replication=200", small.structure)
rows = []
for name, assumptions in [("PostEdit-Marking, pilot", small), ("Marking-Baseline, pilot", large),
                          ("Marking-Baseline, runs like learning rates", pessimistic)]:
    best = allocate(assumptions.structure, assumptions.counts, costs, power_criterion(assumptions, 0.05),
                    target=TARGET, frontier=False)
    rows.append({"assumptions": name, "effect": assumptions.effect, **{k: v for k, v in best.counts.items()
                 if not k.startswith("(")}, "cost": best.cost, "power": best.value})
cheapest = pd.DataFrame(rows)
display(cheapest)
for row in cheapest.itertuples():
    print(f"{row.assumptions}: {row.replication} seeds per system and {row.sentence_id:,} sentences "
          f"(cost {row.cost:,.0f})")"""),
    ("code", """frontier = allocate(pessimistic.structure, pessimistic.counts, costs, power_criterion(pessimistic, 0.05),
                    target=TARGET)
print(frontier)
cost_frontier(frontier, TARGET, title="Marking - Baseline, runs like learning rates: best power per budget")"""),
    ("md", """With the pilot's zero seed variance, seeds still buy degrees of freedom
for the Kenward–Roger test and sentences do the rest; under the pessimistic
run-to-run variance the cheapest design buys many runs and relatively few
sentences: once seeds dominate, sentences stop helping.

## 5. Assurance: averaging over what the pilot does not know

Power takes the pilot's point estimates as the truth. The posterior of the
pilot (`fit_bayes`, exact fast path) says how uncertain the seed variance and
the effect are; assurance is the probability that the planned study's 95 %
posterior interval of the contrast excludes zero, averaged over those draws
(given a draw, the planned posterior is t with that draw's degrees of freedom)."""),
    ("code", """posterior = pilot_posterior(pilots["PostEdit-Marking"], draws=2000, tune=1000, chains=2, seed=3)
print(f"posterior of PostEdit - Marking: median {np.median(posterior.effect):.4f}, "
      f"90% interval {np.quantile(posterior.effect, [0.05, 0.95]).round(4)}")
print(f"posterior median of the seed variance: {np.median(posterior.variances['system:replication']):.2e}")
rows = []
for items, seeds in [(1041, 3), (4000, 3), (4000, 10), (8000, 10)]:
    counts = small.design({"sentence_id": items, "replication": seeds})
    point = plan_power(small, {"sentence_id": [items], "replication": [seeds]}, simulations=0).rows[0]
    result = assurance(small.structure, posterior.variances, posterior.effect, counts)
    rows.append({"sentences": items, "seeds per system": seeds, "power (point estimates)": point["power"],
                 "assurance": result.value, "MC SE": result.mc_se})
assured = pd.DataFrame(rows)
display(assured)
top = rows[-1]
print(f"at {top['sentences']:,} sentences and {top['seeds per system']} seeds per system: power "
      f"{top['power (point estimates)']:.2f}, assurance {top['assurance']:.2f}")"""),
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
    ("code", """grid_frame = build_model_frame(grid_fit.formula, "kreutzer_marking_full")
structure, counts = facet_structure(grid_frame)
run = ":".join(f for f in structure.facets if f != "sentence_id")
run_costs = parse_costs(f"{run}=1", structure)
criterion = phi_criterion(grid_fit.variances, "sentence_id", structure)
print(f"phi of one configuration: {criterion.evaluate(dict.fromkeys(counts, 1) | {'sentence_id': 1041}):.3f}")
exact = allocate(structure, counts, run_costs, criterion, target=0.9, maximum=dict.fromkeys(structure.facets[1:], 4),
                 frontier=False)
greedy = allocate(structure, counts, run_costs, criterion, target=0.9, frontier=False)
print("exact search, at most 4 levels each:", exact, sep="\\n")
print("greedy search, up to 50 levels each:", greedy, sep="\\n")
bought = {k: v for k, v in exact.counts.items() if k in structure.facets and k != "sentence_id" and v > 1}
print(f"phi >= 0.9 costs {exact.cost:g} runs: more than one level of {', '.join(bought) or 'no facet'}; "
      f"the two searches {'agree' if exact.cost == greedy.cost else 'differ'}")"""),
    ("md", """The lines above name which meta-parameters the cheapest reliable design
varies: averaging over a second run that differs in the largest meta-parameter
component halves the residual (sentence × configuration) variance and averages
that component out."""),
]


def main() -> None:
    write_executed(CELLS, HERE / "planning.ipynb", timeout=1800)


if __name__ == "__main__":
    main()
