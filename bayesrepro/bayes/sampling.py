"""NUTS runs, reproducible from a seed, with BLAS kept single-threaded.

The models sampled here evaluate small dense matrices thousands of times; a
multithreaded BLAS spends far more time synchronising threads than computing
on them (measured: a 3×3 triangular solve 17 µs single-threaded, 2.4 ms with
two OpenBLAS threads), so every run limits BLAS to one thread per process.
Parallelism comes from running chains in separate processes instead.
"""

from __future__ import annotations

import warnings

from ..errors import BayesreproError

SAMPLERS = ("pymc", "nutpie")


def run_nuts(model, *, draws: int, tune: int, chains: int, seed: int | None, cores: int | None = None,
             sampler: str = "pymc", target_accept: float = 0.9, progressbar: bool = False):
    """Sample a PyMC model with NUTS; returns an ``arviz.InferenceData``."""
    import pymc as pm
    from threadpoolctl import threadpool_limits

    check_sampling_options(draws, tune, chains, sampler)
    with threadpool_limits(limits=1), warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*BLAS.*")
        warnings.filterwarnings("ignore", category=FutureWarning)
        # Early tuning steps may overflow before the step size adapts; such proposals are rejected.
        warnings.filterwarnings("ignore", message="overflow encountered", category=RuntimeWarning)
        return pm.sample(
            draws=draws,
            tune=tune,
            chains=chains,
            cores=cores if cores is not None else min(chains, 2),
            random_seed=seed,
            model=model,
            nuts_sampler=sampler,
            target_accept=target_accept,
            progressbar=progressbar,
            compute_convergence_checks=False,
            mp_ctx="fork",  # children inherit the BLAS thread limit and warning filters
        )


def check_sampling_options(draws: int, tune: int, chains: int, sampler: str) -> None:
    if int(draws) < 1:
        raise BayesreproError(f"--draws must be at least 1, got {draws}")
    if int(tune) < 0:
        raise BayesreproError(f"--tune must be non-negative, got {tune}")
    if int(chains) < 1:
        raise BayesreproError(f"--chains must be at least 1, got {chains}")
    if sampler not in SAMPLERS:
        raise BayesreproError(f"sampler '{sampler}' is unknown; choose one of: {', '.join(SAMPLERS)}")
