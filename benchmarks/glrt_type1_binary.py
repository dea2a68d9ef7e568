"""Type-I error of the binary GLRT (Laplace ML fits) on simulated null benchmarks, run on demand.

Usage:
    python benchmarks/glrt_type1_binary.py [--replicates 1000] [--items 200] [--seeds 5]
        [--systems 2] [--reference chi2|bootstrap] [--bootstrap-samples 99] [--workers 2] [--seed 2024]
        [--json-out FILE]

Each replicate simulates a binary benchmark in which the systems do not differ
(``bayesrepro.simulate.binary_grid``: every item scored by every seed of every
system; item SD 1.5 and seed SD 0.3 on the logit scale, intercept 0.5, one
prompt) and tests H1 ``correct ~ system + (1|item) + (1|system:seed)`` against
H0 ``correct ~ 1 + (1|item) + (1|system:seed)`` with ``bayesrepro.frequentist.glrt``, read against
the χ² or the parametric bootstrap (``--bootstrap-samples`` Laplace refits under H0; with 99, p ≤ 0.05
is a Monte-Carlo test of exact size when the bootstrap null is right). A bootstrap stops once ten
refits reach the observed statistic, which cannot change a rejection at 1, 5 or 10 %
(``bootstrap_test.sequential_p``).
It prints the share of p-values below 1 %, 5 % and 10 % with its binomial
standard error, and the seconds per replicate. The test of the systems is
informed by the seeds (system:seed levels), not the items: with few seeds per
system the χ² reference of a Laplace likelihood ratio is known to be liberal.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

H0 = "correct ~ 1 + (1|item) + (1|system:seed)"
H1 = "correct ~ system + (1|item) + (1|system:seed)"
LEVELS = (0.01, 0.05, 0.10)


def null_p_value(seed: int, items: int, seeds: int, systems: int, reference: str, samples: int) -> float:
    """One null replicate: simulate, test, return the p-value."""
    from bayesrepro.design import resolve_family
    from bayesrepro.frequentist.glrt import glrt
    from bayesrepro.frequentist.binary_bootstrap import binary_bootstrap_job
    from bayesrepro.frequentist.bootstrap_test import observed_statistic, sequential_p
    from bayesrepro.frequentist.glmm import fit_glmm_frame
    from bayesrepro.frequentist.glrt import nested_frames
    from bayesrepro.simulate import binary_grid

    data = binary_grid(items=items, systems={f"S{k}": 0.0 for k in range(systems)}, seeds=seeds, prompts=1,
                       item_sd=1.5, seed_sd=0.3, prompt_sd=0.0, intercept=0.5, random_state=seed)
    if reference == "chi2":
        return glrt(H0, H1, data, family="bernoulli", reference="chi2").p
    # the bootstrap's decisions at p <= 0.10 of `samples` refits, stopped early where they cannot change
    frame0, frame1 = nested_frames(H0, H1, data)
    family = resolve_family(frame1, "bernoulli")
    fit0, fit1 = fit_glmm_frame(frame0, family), fit_glmm_frame(frame1, family)
    job = binary_bootstrap_job(frame0, frame1, fit0, fit1)
    return sequential_p(job, observed_statistic(fit0.deviance, fit1.deviance), samples, [seed, 1])


def rejection_rates(p_values) -> dict:
    p_values = np.asarray(p_values)
    n = len(p_values)
    return {f"{level:g}": {"rate": float(np.mean(p_values <= level)),
                           "se": float(np.sqrt(level * (1 - level) / n))} for level in LEVELS}


def simulate(replicates: int, items: int, seeds: int, systems: int, workers: int, seed: int, reference: str = "chi2",
             samples: int = 99) -> list[float]:
    streams = np.random.SeedSequence(seed).generate_state(replicates)
    with ProcessPoolExecutor(workers) as pool:
        return list(pool.map(null_p_value, streams.tolist(), [items] * replicates, [seeds] * replicates,
                             [systems] * replicates, [reference] * replicates, [samples] * replicates,
                             chunksize=max(1, replicates // (8 * workers))))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--replicates", type=int, default=1000)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--systems", type=int, default=2)
    parser.add_argument("--reference", choices=("chi2", "bootstrap"), default="chi2")
    parser.add_argument("--bootstrap-samples", type=int, default=99)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2024)
    parser.add_argument("--json-out", type=Path)
    args = parser.parse_args()
    start = time.perf_counter()
    p_values = simulate(args.replicates, args.items, args.seeds, args.systems, args.workers, args.seed,
                        args.reference, args.bootstrap_samples)
    seconds = time.perf_counter() - start
    print(f"{args.replicates} null benchmarks: {args.items} items x {args.systems} systems x {args.seeds} seeds; "
          f"H1 {H1} against H0 {H0}; reference {args.reference}"
          + (f" ({args.bootstrap_samples} refits)" if args.reference == "bootstrap" else ""))
    report(args, p_values, seconds)


def report(args, p_values: list[float], seconds: float) -> None:
    """The rejection rates with their binomial SEs and the seconds per replicate; all of it to ``--json-out``."""
    rates = rejection_rates(p_values)
    for level, rate in rates.items():
        print(f"  alpha {level}: rejected {rate['rate']:.4f} (binomial SE {rate['se']:.4f})")
    print(f"  {seconds:.0f} s on {args.workers} workers ({seconds * args.workers / args.replicates:.2f} s per replicate)")
    if args.json_out:
        args.json_out.write_text(json.dumps({"settings": vars(args) | {"json_out": str(args.json_out)},
                                             "rates": rates, "seconds": seconds, "p_values": p_values}, indent=1))


if __name__ == "__main__":
    main()
