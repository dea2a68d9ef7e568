"""Binary scores, Bayesian: the fast path against Bambi's own model, on the binary benchmark grids.

Usage:
    python benchmarks/bench_binary_bayes.py [--items 2000,10000] [--peers pymc] [--bambi-draws 200]
        [--bambi-chains 2] [--bambi-limit 900] [--exact-reference] [--json-out FILE]

Grids: ``simulate.binary_grid(items)``, every item scored by 5 seeds of each of 3
systems with 4 prompts (2,000 items: 120,000 rows; 10,000 items: 600,000 rows),
modelled as ``correct ~ system + (1|item) + (1|system:seed) + (1|prompt)``.

Ours: ``fit_bayes`` (auto backend: the binary fast path), 4 chains × 1,000 draws after
1,000 tuning steps, timed end to end from the DataFrame (model frame, cell counts,
compiled posterior, sampling, φ). numba compiles the density once per installation
(cached on disk); that first-use compilation is timed separately on a tiny grid before
the measured runs. Bambi's model on the 120,000-row grid (``--backend bambi``, PyMC's
NUTS or nutpie as ``--peers`` says) runs in a subprocess with fewer draws and a time
limit; one that does not finish is shown as "> limit" and its ESS per second as an
upper bound (all its draws counted as effective), so the ratio is a lower bound.
``--exact-reference`` also samples the same posterior with every item effect sampled
(a PyMC model of the cell counts, items centred, compiled by nutpie's numba backend,
4 chains × 500 draws) and compares quantiles with ours within 4 × combined MCSE.

ESS per second is the bulk ESS of φ over the whole fit's wall time. Printed last:
the targets (600,000 rows in under 120 s with R-hat ≤ 1.01 and bulk ESS ≥ 400;
≥ 50× Bambi's ESS per second on the 120,000-row grid) against what was measured.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import arviz as az
import numpy as np

FORMULA = "correct ~ system + (1|item) + (1|system:seed) + (1|prompt)"
SD_VARIABLES = ["1|item_sigma", "1|system:seed_sigma", "1|prompt_sigma"]

BAMBI_CHILD = """
import json, sys, time
from bayesrepro.bayes import fit_bayes
from bayesrepro.simulate import binary_grid
items, draws, chains, sampler, seed = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
data = binary_grid(items=items, random_state=seed)
start = time.perf_counter()
fit = fit_bayes({formula!r}, data, backend="bambi", sampler=sampler, draws=draws, tune=draws, chains=chains,
                seed=seed, allow_unconverged=True, effects=False)
seconds = time.perf_counter() - start
ess = float(fit.diagnostics.table.loc["phi", "ess_bulk"])
print(json.dumps(dict(seconds=seconds, ess_bulk_phi=ess, r_hat_max=fit.diagnostics.r_hat_max,
                      divergences=fit.diagnostics.divergences, phi_median=fit.phi()["median"])))
""".format(formula=FORMULA)


def data_of(items: int, seed: int):
    from bayesrepro.simulate import binary_grid

    return binary_grid(items=items, random_state=seed)


def first_use_compilation(seed: int) -> float:
    from bayesrepro.bayes import fit_bayes

    start = time.perf_counter()
    fit_bayes(FORMULA, data_of(30, seed), draws=100, tune=100, chains=2, seed=seed, allow_unconverged=True,
              effects=False)
    return time.perf_counter() - start


def run_ours(items: int, seed: int):
    from bayesrepro.bayes import fit_bayes

    data = data_of(items, seed)
    start = time.perf_counter()
    fit = fit_bayes(FORMULA, data, draws=1000, tune=1000, chains=4, seed=seed, effects=False, allow_unconverged=True)
    seconds = time.perf_counter() - start
    ess = float(fit.diagnostics.table.loc["phi", "ess_bulk"])
    row = {
        "rows": len(data), "model": f"ours ({fit.backend})", "chains_x_draws": "4x1000", "seconds": round(seconds, 1),
        "ess_bulk_phi": round(ess), "ess_per_second": round(ess / seconds, 2),
        "r_hat_max": round(fit.diagnostics.r_hat_max, 4), "ess_bulk_min": round(fit.diagnostics.ess_bulk_min),
        "divergences": fit.diagnostics.divergences, "phi_median": round(fit.phi()["median"], 4),
    }
    return row, fit


def run_bambi(items: int, sampler: str, draws: int, chains: int, limit: float, seed: int) -> dict:
    row = {"rows": items * 60, "model": f"Bambi ({sampler})", "chains_x_draws": f"{chains}x{draws}"}
    start = time.perf_counter()
    # a session of its own, so that stopping it at the limit also stops PyMC's chain processes
    child = subprocess.Popen([sys.executable, "-c", BAMBI_CHILD, str(items), str(draws), str(chains), sampler, str(seed)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        stdout, stderr = child.communicate(timeout=limit)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)
        child.communicate()
        row.update(seconds=f"> {limit:.0f}", ess_per_second=draws * chains / limit, bound="upper")
        return row
    done = subprocess.CompletedProcess(child.args, child.returncode, stdout, stderr)
    if done.returncode != 0:
        row.update(seconds=round(time.perf_counter() - start, 1), error=done.stderr.strip().splitlines()[-1])
        return row
    result = json.loads(done.stdout.strip().splitlines()[-1])
    row.update(seconds=round(result["seconds"], 1), ess_bulk_phi=round(result["ess_bulk_phi"]),
               ess_per_second=round(result["ess_bulk_phi"] / result["seconds"], 3), r_hat_max=round(result["r_hat_max"], 4),
               divergences=result["divergences"], phi_median=round(result["phi_median"], 4))
    return row


def run_exact_reference(items: int, seed: int, ours) -> dict:
    """Every item effect sampled: PyMC's model of the cell counts through nutpie's numba backend."""
    import nutpie
    import pymc as pm

    from bayesrepro.bayes.binary_priors import binary_priors
    from bayesrepro.bayes.diagnostics import quantile_agreement
    from bayesrepro.design import build_model_frame
    from bayesrepro.runtime import numerical_work

    start = time.perf_counter()
    frame = build_model_frame(FORMULA, data_of(items, seed))
    cells = frame.binomial()
    priors = binary_priors(frame)
    X = (cells.X_fixed - priors.x_means)[cells.fixed_cell]
    with numerical_work(), pm.Model() as model:
        eta = pm.math.dot(X, pm.Normal("fixed", mu=priors.fixed_mu, sigma=priors.fixed_sigma, shape=X.shape[1]))
        for g, name in enumerate(frame.group_names):
            sd = pm.HalfNormal(f"1|{name}_sigma", sigma=priors.group_sigma[name])
            eta = eta + pm.Normal(f"1|{name}", 0.0, sd, shape=len(cells.levels[g]))[cells.codes[g]]
        pm.Binomial("correct", n=cells.trials, logit_p=eta, observed=cells.successes)
        idata = nutpie.sample(nutpie.compile_pymc_model(model, backend="numba"), draws=500, tune=500, chains=4,
                              cores=2, seed=seed, progress_bar=False)
    seconds = time.perf_counter() - start
    variance = {name: idata.posterior[name] ** 2 for name in SD_VARIABLES}
    idata.posterior["phi"] = variance["1|item_sigma"] / (sum(variance.values()) + np.pi**2 / 3)
    diagnostics = az.summary(idata, var_names=SD_VARIABLES + ["phi"], kind="diagnostics")
    agreement = quantile_agreement(idata, ours.idata, SD_VARIABLES + ["phi"], k=4.0)
    ess = float(diagnostics.loc["phi", "ess_bulk"])
    return {
        "rows": items * 60, "model": "all effects sampled (PyMC, nutpie numba)", "chains_x_draws": "4x500",
        "seconds": round(seconds, 1), "ess_bulk_phi": round(ess), "ess_per_second": round(ess / seconds, 3),
        "r_hat_max": round(float(diagnostics["r_hat"].max()), 4),
        "divergences": int(idata.sample_stats["diverging"].sum()),
        "phi_median": round(float(idata.posterior["phi"].median()), 4),
        "agrees_with_ours": bool(agreement["agree"].all()),
        "largest_difference_over_bound": round(float((agreement["difference"] / agreement["bound"]).max()), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", default="2000,10000", help="grid sizes in items (60 rows each)")
    parser.add_argument("--peers", default="pymc", help="samplers for Bambi's model on the smallest grid ('' for none)")
    parser.add_argument("--bambi-draws", type=int, default=200)
    parser.add_argument("--bambi-chains", type=int, default=2)
    parser.add_argument("--bambi-limit", type=float, default=900.0, help="seconds before Bambi's run is stopped")
    parser.add_argument("--exact-reference", action="store_true")
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--json-out")
    args = parser.parse_args()
    sizes = [int(n) for n in args.items.split(",") if n]

    results = [{"model": "ours: first-use compilation (cached afterwards)", "seconds": round(first_use_compilation(args.seed), 1)}]
    print(json.dumps(results[0]), flush=True)
    ours = {}
    for items in sizes:
        row, fit = run_ours(items, args.seed)
        ours[items] = (row, fit)
        results.append(row)
        print(json.dumps(row), flush=True)
    smallest = min(sizes)
    for sampler in [p for p in args.peers.split(",") if p]:
        row = run_bambi(smallest, sampler, args.bambi_draws, args.bambi_chains, args.bambi_limit, args.seed)
        if "ess_per_second" in row:
            ratio = ours[smallest][0]["ess_per_second"] / row["ess_per_second"]
            row["ours_over_bambi_ess_per_second"] = (">= " if row.get("bound") else "") + f"{ratio:.0f}"
        results.append(row)
        print(json.dumps(row), flush=True)
    if args.exact_reference:
        row = run_exact_reference(smallest, args.seed, ours[smallest][1])
        row["ours_over_exact_ess_per_second"] = round(ours[smallest][0]["ess_per_second"] / row["ess_per_second"])
        results.append(row)
        print(json.dumps(row), flush=True)

    print("\nTargets:")
    largest = ours[max(sizes)][0]
    print(f"  {largest['rows']:,} rows: {largest['seconds']} s (target < 120), R-hat max {largest['r_hat_max']} "
          f"(<= 1.01), bulk ESS min {largest['ess_bulk_min']} (>= 400)")
    for row in results:
        if "ours_over_bambi_ess_per_second" in row:
            print(f"  {row['rows']:,} rows: ESS/s of phi, ours over {row['model']} run as {row['chains_x_draws']}: "
                  f"{row['ours_over_bambi_ess_per_second']} (target >= 50)")
        elif row.get("model", "").startswith("Bambi"):
            print(f"  {row['rows']:,} rows: {row['model']} failed: {row.get('error')}")
        if "agrees_with_ours" in row:
            print(f"  {row['rows']:,} rows: exact reference (every item effect sampled) "
                  f"{'agrees' if row['agrees_with_ours'] else 'DISAGREES'} with ours within 4 x MCSE on the 5/50/95 % "
                  f"quantiles of every SD and phi (largest difference / bound {row['largest_difference_over_bound']}); "
                  f"ESS/s of phi, ours over it: {row['ours_over_exact_ess_per_second']}")
    if args.json_out:
        with open(args.json_out, "w") as handle:
            json.dump(results, handle, indent=1)


if __name__ == "__main__":
    main()
