"""Time to 400 bulk-effective draws of φ: the fast exact path against Bambi's own model.

Usage:
    python benchmarks/bench_bayes.py [--datasets ter,partial,full] [--peers pymc,nutpie]
                                     [--draws 1000] [--chains 4] [--bambi-draws 500] [--bambi-chains 2]

Each run is timed end to end (data → model → compiled sampler → draws → φ).
"Seconds per 400 ESS" is wall time × 400 / bulk ESS of φ, a linear
extrapolation when a run delivered fewer than 400 effective draws. Bambi's
model is run with its default (non-centred) parameterisation, which is what
a user gets. Printed last: the ratio of effective draws of φ per second.
"""

from __future__ import annotations

import argparse
import json
import time

import arviz as az

from bayesrepro.bayes import fit_bayes
from bayesrepro.datasets import load_dataset

GRID = (
    "ter ~ 1 + (1|sentence_id) + (1|learning_rate) + (1|seed) + (1|encoder_dropout) + (1|decoder_dropout)"
    " + (1|decoder_dropout_hidden) + (1|delta_scheme)"
)
CASES = {
    "ter": ("kreutzer_ter", "ter ~ system + (1|sentence_id)"),
    "partial": ("kreutzer_marking_partial", GRID),
    "full": ("kreutzer_marking_full", GRID),
}


def run(name: str, backend: str, sampler: str, draws: int, chains: int, seed: int) -> dict:
    dataset, formula = CASES[name]
    data = load_dataset(dataset)
    start = time.perf_counter()
    fit = fit_bayes(formula, data, backend=backend, sampler=sampler, draws=draws, tune=draws, chains=chains,
                    seed=seed, allow_unconverged=True, effects=False)
    seconds = time.perf_counter() - start
    ess = float(az.ess(fit.idata.posterior[["phi"]], method="bulk")["phi"])
    phi = fit.phi()
    return {
        "case": name,
        "rows": fit.frame.n_obs,
        "model": f"{backend}/{sampler}",
        "chains_x_draws": f"{chains}x{draws}",
        "seconds": round(seconds, 1),
        "ess_bulk_phi": round(ess),
        "seconds_per_400_ess": round(seconds * 400 / ess, 1),
        "ess_per_second": ess / seconds,
        "r_hat_max": round(fit.diagnostics.r_hat_max, 3),
        "ess_bulk_min": round(fit.diagnostics.ess_bulk_min),
        "divergences": fit.diagnostics.divergences,
        "phi_median": round(phi["median"], 4),
        "phi_95": [round(phi["low"], 4), round(phi["high"], 4)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="ter,partial,full")
    parser.add_argument("--peers", default="pymc,nutpie", help="samplers for Bambi's model ('' for none)")
    parser.add_argument("--draws", type=int, default=1000)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--bambi-draws", type=int, default=500)
    parser.add_argument("--bambi-chains", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2024)
    args = parser.parse_args()
    results = []
    for name in [n for n in args.datasets.split(",") if n]:
        fast = run(name, "fast", "nutpie", args.draws, args.chains, args.seed)  # the compiled density
        results.append(fast)
        print(json.dumps(fast), flush=True)
        for sampler in [p for p in args.peers.split(",") if p]:
            peer = run(name, "bambi", sampler, args.bambi_draws, args.bambi_chains, args.seed)
            peer["fast_speedup_ess_per_second"] = round(fast["ess_per_second"] / peer["ess_per_second"], 1)
            results.append(peer)
            print(json.dumps(peer), flush=True)
    print()
    header = ("case", "model", "chains_x_draws", "seconds", "ess_bulk_phi", "seconds_per_400_ess", "r_hat_max",
              "divergences", "phi_median", "fast_speedup_ess_per_second")
    print(" | ".join(header))
    for row in results:
        print(" | ".join(str(row.get(h, "")) for h in header))


if __name__ == "__main__":
    main()
