"""Binary random slopes, Bayesian: our whole `phi` command against brms's sampling alone, in bulk ESS per second.

Usage:
    python benchmarks/bench_bayes_binary_slopes.py [--draws 1000] [--seed 1] [--skip-brms] [--brms-draws 1000]
                                                   [--json-out FILE]

Model: lme4's VerbAgg (tests/data/verbagg.csv.gz, 7,584 0/1 answers of 316 people to 24 items),
``r2 ~ btype + (1 + Anger | item) + (1 | id)``, logit link, under our default priors (``--prior scaled``):
Normal on the centred design's coefficients, half-normal on every SD, LKJ(1) on the item term's correlation.
brms gets the same priors, their numbers read from our own prior table and written as ``prior()`` statements by
``benchmarks/brms_verbagg.R``.

Ours: ``python -m bayesrepro phi tests/data/verbagg.csv.gz --formula F --json`` at default settings (4 chains,
1,000 tuning steps, ``--draws`` per chain), timed end to end as a user runs it (start-up, reading the data, the
posterior mode that chooses the coordinates, loading the compiled density from numba's cache, sampling,
summaries), after one untimed run that fills the cache.
brms: ``benchmarks/brms_verbagg.R`` (4 chains of ``--brms-draws`` after 1,000 warm-up steps, one after another), of
which only Stan's post-warm-up sampling time summed over the chains is counted: no start-up, compilation or warm-up.

ESS per second: the smallest bulk ESS over every reported quantity (the item term's two SDs and correlation, the
id SD; ours also φ) over the counted seconds. Stan times its sampling with ``clock()``, the processor time of R's
process, which other work on the machine does not stretch; ours is wall-clock time, which it does, so our
processor seconds (user + system) are given too, with the ratio on that footing. The 5 %, 50 % and 95 %
quantiles of both sides are printed side by side (the same posterior up to Monte Carlo error). Printed last: the
ratio ours / brms against the target of 5.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench_bayes_slopes import report_ratios, timed_phi

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "verbagg.csv.gz"
FORMULA = "r2 ~ btype + (1 + Anger|item) + (1|id)"
BRMS_SCRIPT = ROOT / "benchmarks" / "brms_verbagg.R"
TARGET = 5.0
# ours: name of a random_effects row (group, var1, var2) in brms's naming of the R script
ROWS = {("item", "Intercept", None): "sd_item_Intercept", ("item", "Anger", None): "sd_item_Anger",
        ("item", "Intercept", "Anger"): "cor_item", ("id", "Intercept", None): "sd_id_Intercept"}


def brms_priors() -> dict:
    """Our default priors of the model as the numbers brms_verbagg.R turns into ``prior()`` statements."""
    import numpy as np

    sys.path.insert(0, str(ROOT))
    import bayesrepro as br
    from bayesrepro.bayes.term_model import term_layouts
    from bayesrepro.bayes.term_priors import term_priors

    frame = br.Model(FORMULA, str(DATA)).frame
    priors = term_priors(frame, term_layouts(frame), "scaled", binary=True)
    if not (np.all(np.isinf(priors.fixed_nu)) and np.all(np.isinf(priors.sd_nu)) and np.all(priors.fixed_mu == 0)):
        raise SystemExit("the default priors are no longer Normal(0, s) and half-normal: update brms_verbagg.R")
    names = list(priors.fixed_names)
    return {"intercept_sd": float(priors.fixed_sigma[priors.intercept_index]),
            "fixed_sd": {name.replace("[", "").replace("]", ""): float(s)
                         for name, s in zip(names, priors.fixed_sigma) if name != "Intercept"},
            "sd_scale": {f"{term}:{column}": float(s) for (term, column), s in zip(priors.sd_labels, priors.sd_scale)},
            "lkj_eta": float(priors.eta[0])}


def ours(draws: int, seed: int) -> dict:
    out, seconds, cpu = timed_phi([str(DATA), "--formula", FORMULA, "--draws", str(draws), "--seed", str(seed)])
    rows = {ROWS[(row["group"], row["var1"], row["var2"])]: row for row in out["random_effects"]}
    ess = out["diagnostics"]["ess_bulk_min"]
    return {"draws": draws, "seconds": seconds, "cpu_seconds": cpu, "ess_bulk_min": ess,
            "r_hat_max": out["diagnostics"]["r_hat_max"], "divergences": out["diagnostics"]["divergences"],
            "ess_per_second": ess / seconds, "ess_per_cpu_second": ess / cpu,
            "medians": {name: row["median"] for name, row in rows.items()},
            "ess_bulk": {name: row["ess_bulk"] for name, row in rows.items()}}


def brms(draws: int, seed: int) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        priors, out = Path(folder) / "priors.json", Path(folder) / "brms.json"
        priors.write_text(json.dumps(brms_priors()))
        subprocess.run(["Rscript", str(BRMS_SCRIPT), str(priors), str(out), "4", str(1000 + draws), "1000",
                        str(seed)], check=True, capture_output=True)
        result = json.loads(out.read_text())
    ess = min(result["ess_bulk"][name] for name in ROWS.values())
    seconds = result["sampling_seconds"]
    return {"draws": draws, "seconds": seconds, "warmup_seconds": result["warmup_seconds"], "ess_bulk_min": ess,
            "ess_per_second": ess / seconds, "r_hat_max": max(result["rhat"][name] for name in ROWS.values()),
            "divergences": result["divergences"], "leapfrog_per_draw": result["leapfrog_per_draw"],
            "medians": {name: result["quantiles"][name]["0.5"] for name in ROWS.values()},
            "ess_bulk": {name: result["ess_bulk"][name] for name in ROWS.values()}, "priors": result["priors"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain of our run")
    parser.add_argument("--brms-draws", type=int, default=1000, help="draws per chain of brms's run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-brms", action="store_true")
    parser.add_argument("--json-out")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    ours(100, args.seed)   # fills numba's cache: the timed run loads the compiled density
    run = ours(args.draws, args.seed)
    print(f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after our runs")
    print(f"bayesrepro phi, 4 x {run['draws']} draws: {run['seconds']:.1f} s whole command, bulk ESS min "
          f"{run['ess_bulk_min']:.0f} (R-hat max {run['r_hat_max']:.4f}, {run['divergences']} divergences): "
          f"{run['ess_per_second']:.1f} ESS/s; {run['cpu_seconds']:.1f} s of processor time, "
          f"{run['ess_per_cpu_second']:.1f} ESS per processor second")
    report = {"ours": run}
    if not args.skip_brms:
        peer = brms(args.brms_draws, args.seed)
        report["brms"] = peer
        print(f"brms, 4 x {peer['draws']} draws: {peer['seconds']:.1f} s sampling alone "
              f"({peer['warmup_seconds']:.1f} s warm-up not counted), bulk ESS min {peer['ess_bulk_min']:.0f} (R-hat max {peer['r_hat_max']:.4f}, "
              f"{peer['divergences']} divergences, {peer['leapfrog_per_draw']:.0f} leapfrog steps per draw): "
              f"{peer['ess_per_second']:.2f} ESS/s")
        for name in ROWS.values():
            print(f"  {name:18s} median ours {run['medians'][name]:.4f} brms {peer['medians'][name]:.4f}; "
                  f"bulk ESS ours {run['ess_bulk'][name]:.0f} brms {peer['ess_bulk'][name]:.0f}")
        report_ratios(report, run["ess_per_second"], run["ess_per_cpu_second"], peer["ess_per_second"], TARGET)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
