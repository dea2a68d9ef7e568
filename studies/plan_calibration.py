"""The closed-form power of the planned test against the rejection rate of simulated refits, on a grid of designs.

4,000 simulated data sets per design, each refitted by REML with the package's
engine and tested; the closed form (``plan.planned_test``) must lie within
0.03 of the simulated power (3.8 Monte-Carlo SE at power 0.5). The grid holds
the cases the Satterthwaite noncentral t gets wrong: a nested variance of zero
(the ``kreutzer_ter`` pilot's estimate of its seed variance) and small ones,
where many refits put the component at zero. The noncentral t that ignores the
boundary is recorded beside each case for comparison. Writes
``studies/results/plan_calibration.json``, which ``tests/test_studies.py``
checks for freshness and holds to the tolerance (about 7 minutes on two cores):

    python studies/plan_calibration.py [--processes 2]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))   # the checkout's bayesrepro and studies

from studies.record import write_record  # noqa: E402

SOURCES = ["studies/plan_calibration.py", "bayesrepro/plan/*.py", "bayesrepro/frequentist/*.py",
           "bayesrepro/design/*.py"]
SEEDS = {"item": ("item",), "system:seed": ("system", "seed")}
INTERACTION = {**SEEDS, "item:system": ("item", "system")}
CROSSED = {"item": ("item",), "seed": ("seed",), "system:seed": ("system", "seed")}
SIMULATIONS = 4000

GRID = [
    # name, groups, variances, effect, counts, test
    ("zero seed variance (kreutzer_ter)", SEEDS, {"item": 0.064, "system:seed": 0.0, "Residual": 0.0035}, 0.004,
     {"item": 100, "seed": 3}, "wald"),
    ("zero seed variance (kreutzer_ter)", SEEDS, {"item": 0.064, "system:seed": 0.0, "Residual": 0.0035}, 0.006,
     {"item": 100, "seed": 3}, "kenward-roger"),
    ("small seed variance", SEEDS, {"item": 0.05, "system:seed": 0.0002, "Residual": 0.02}, 0.02,
     {"item": 50, "seed": 5}, "wald"),
    ("small seed variance", SEEDS, {"item": 0.05, "system:seed": 0.0002, "Residual": 0.02}, 0.025,
     {"item": 50, "seed": 5}, "kenward-roger"),
    ("benchmark pilot", SEEDS, {"item": 0.066, "system:seed": 0.00056, "Residual": 0.0145}, 0.03,
     {"item": 400, "seed": 3}, "wald"),
    ("interaction and seeds", INTERACTION, {"item": 0.05, "system:seed": 0.001, "item:system": 0.01,
                                            "Residual": 0.02}, 0.04, {"item": 60, "seed": 4}, "wald"),
    ("interaction and seeds", INTERACTION, {"item": 0.05, "system:seed": 0.001, "item:system": 0.01,
                                            "Residual": 0.02}, 0.05, {"item": 60, "seed": 4}, "kenward-roger"),
    ("zero interaction, small seeds", INTERACTION, {"item": 0.05, "system:seed": 0.0003, "item:system": 0.0,
                                                    "Residual": 0.02}, 0.04, {"item": 30, "seed": 3},
     "kenward-roger"),
    ("crossed seeds, zero interaction", CROSSED, {"item": 0.05, "seed": 0.002, "system:seed": 0.0,
                                                  "Residual": 0.02}, 0.012, {"item": 40, "seed": 6}, "wald"),
    ("paired items", {"item": ("item",)}, {"item": 0.05, "Residual": 0.02}, 0.015, {"item": 200}, "wald"),
]


def calibrate(name, groups, variances, effect, counts, test, processes: int) -> dict:
    from bayesrepro.plan import assume, simulate_power
    from bayesrepro.plan.closed_form import rejection_probability
    from bayesrepro.plan.planned_test import PlannedTest

    a = assume("system", ("A", "B"), groups, variances, effect, counts)
    planned = PlannedTest(a.structure)
    closed, exact = planned.power(effect, a.design(), a.variances, 0.05, test)
    simulated = simulate_power(a, [a.design()], simulations=SIMULATIONS, seed=7, test=test, workers=processes)[0]
    precision = planned.precision(a.design(), a.variances)
    textbook = rejection_probability(effect, precision, 0.05, "normal" if test == "wald" else "t")
    return {"design": name, "test": test, "closed_form": closed, "exact": bool(exact),
            "simulated": simulated.power, "mc_se": simulated.mc_se, "not_converged": simulated.not_converged,
            "simulations": SIMULATIONS, "noncentral_t": textbook}


def main() -> int:
    parser = argparse.ArgumentParser(description="closed-form power against simulated refits")
    parser.add_argument("--processes", type=int, default=2)
    args = parser.parse_args()
    rows = []
    for case in GRID:
        rows.append(calibrate(*case, processes=args.processes))
        row = rows[-1]
        print(f"{row['design']}, {row['test']}: closed form {row['closed_form']:.3f}, simulated "
              f"{row['simulated']:.3f} ± {row['mc_se']:.3f}; noncentral t {row['noncentral_t']:.3f}", flush=True)
    write_record("plan_calibration", SOURCES, {"rows": rows})
    return 0


if __name__ == "__main__":
    sys.exit(main())
