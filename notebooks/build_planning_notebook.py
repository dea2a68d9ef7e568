"""Write and execute notebooks/planning.ipynb (run from anywhere with the project's Python)."""

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
from bayesrepro.reliability import d_study

pd.set_option("display.precision", 4)
pd.set_option("display.width", 140)
FORMULA = "ter ~ system + (1|sentence_id) + (1|system:replication)\""""),
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
print(*pilot.assumptions.structure.describe_nesting())"""),
    ("md", """The seed component is estimated at exactly zero: the three replications of
`Marking` and `PostEdit` do not differ more than their sentence-level noise
implies. TER is lower for the interactive systems; `PostEdit − Marking` is
about a fifth of `Marking − Baseline`.

## 2. Power per number of sentences and seeds

For a balanced design the variance of the contrast is a sum over the
components that vary with the system (here the seeds and the residual), each
divided by its number of levels per system; the sentence component cancels.
The power of the t test uses the design's Satterthwaite degrees of freedom,
which for seeds nested in systems are 2 × (seeds − 1): with two seeds per
system a test that estimates the seed variance has 2 df, however many
sentences there are."""),
    ("code", """small = pilots["PostEdit-Marking"].assumptions
table = plan_power(small, {"sentence_id": [250, 500, 1041, 2000, 4000], "replication": [2, 3, 5, 10]},
                   simulations=0).table()
table.pivot(index="sentence_id", columns="replication", values="power_t").round(3)"""),
    ("md", """With the pilot's components, the `PostEdit − Marking` difference of 0.0027 TER
needs about 2,000 sentences at three seeds per system for 80 % power; more
seeds buy degrees of freedom, not precision, because the pilot found no seed
variance.

The pilot's zero is an estimate from three runs per system. If training runs
varied as much as the learning rates of the `Marking` grid do (the grid's
learning-rate component, 4.1e-4, a pessimistic stand-in for run-to-run
variation), the picture changes: each curve flattens at the power that
unlimited sentences would give with that many seeds (dashed lines), and only
more seeds lift the plateau."""),
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

The package reports the Wald z test of the REML fit. The simulation draws data
sets from the assumed model (as sufficient statistics, without rows), refits
each with the package's engine and applies that test. The closed form of the
same test is P(|T_ν(λ)| > z) for the noncentral t with the design's df; `size`
is that test's actual level under no effect — far above 5 % with few seeds,
which is why a t reference with the design's df (`power_t`) is the honest
planning figure."""),
    ("code", """check = plan_power(pessimistic, {"sentence_id": [300, 1041], "replication": [3, 10]}, simulations=400, seed=1)
check.table()[["sentence_id", "replication", "df", "power", "mc_se", "power_closed_form", "power_t", "size"]]"""),
    ("md", """Where the seed variance is well above zero the simulated rejection rate of
the Wald test and its closed form agree within Monte-Carlo error. (At the
pilot's own estimate of zero the REML fit often puts the seed variance on the
boundary and the simulated test is then more conservative than the closed
form, whose df assume an interior estimate; the simulation is the figure to
trust there.)

## 4. The cheapest design

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
                    target=0.8, frontier=False)
    rows.append({"assumptions": name, "effect": assumptions.effect, **{k: v for k, v in best.counts.items()
                 if not k.startswith("(")}, "cost": best.cost, "power": best.value})
pd.DataFrame(rows)"""),
    ("code", """frontier = allocate(pessimistic.structure, pessimistic.counts, costs, power_criterion(pessimistic, 0.05),
                    target=0.8)
print(frontier)
cost_frontier(frontier, 0.8, title="Marking - Baseline, runs like learning rates: best power per budget")"""),
    ("md", """With the pilot's zero seed variance, two seeds per system are cheapest for
`Marking − Baseline` — the smallest number that leaves the test any degrees
of freedom — and sentences do the rest. Under the pessimistic run-to-run
variance the cheapest design buys many runs and relatively few sentences:
once seeds dominate, sentences stop helping.

## 5. Assurance: averaging over what the pilot does not know

Power takes the pilot's point estimates as the truth. The posterior of the
pilot (`fit_bayes`, exact fast path) says how uncertain the seed variance and
the effect are; assurance is the probability that the planned study's 95 %
posterior interval of the contrast excludes zero, averaged over those draws
(each draw's contrast posterior taken as normal with the closed-form SE)."""),
    ("code", """variance_draws, effect_draws = pilot_posterior(pilots["PostEdit-Marking"], draws=2000, tune=1000, chains=2, seed=3)
print(f"posterior of PostEdit - Marking: median {np.median(effect_draws):.4f}, "
      f"90% interval {np.quantile(effect_draws, [0.05, 0.95]).round(4)}")
print(f"posterior median of the seed variance: {np.median(variance_draws['system:replication']):.2e}")
rows = []
for items, seeds in [(1041, 3), (2000, 3), (4000, 3), (4000, 10)]:
    counts = small.design({"sentence_id": items, "replication": seeds})
    point = plan_power(small, {"sentence_id": [items], "replication": [seeds]}, simulations=0).rows[0]
    result = assurance(small.structure, variance_draws, effect_draws, counts)
    rows.append({"sentences": items, "seeds per system": seeds, "power (point estimates)": point["power_t"],
                 "assurance": result.value, "MC SE": result.mc_se})
pd.DataFrame(rows)"""),
    ("md", """Assurance is flatter than the point-estimate power: it stays below it
once that power is high (at 4,000 sentences and ten seeds the point estimate
promises certainty, assurance about three in four), and can lie above it for
small designs, where the posterior's weight on larger effects helps. The
posterior puts weight on seed variances above zero (the prior keeps them there
when three runs cannot rule them out) and on smaller effects. It is the honest
figure to plan with when the pilot is small.

## 6. The cheapest reliable design on the `Marking` grid

φ (Brennan's Φ) is the share of a sentence's score variance that is the
sentence's own when its score is averaged over n levels of each meta-parameter.
On the full grid one configuration gives Φ ≈ 0.86. Every configuration is a
training run; if a run costs 1 whatever its meta-parameters, the cost of a
design is the product of its level counts."""),
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
print("greedy search, up to 50 levels each:", greedy, sep="\\n")"""),
    ("md", """Two training runs that differ in the learning rate reach Φ ≥ 0.9: the
residual (sentence × configuration) variance is halved and the learning rate,
the largest meta-parameter component, is averaged over. The exhaustive search
over up to four levels of each meta-parameter and the greedy search agree."""),
]


def main() -> None:
    write_executed(CELLS, HERE / "planning.ipynb", timeout=1800)


if __name__ == "__main__":
    main()
