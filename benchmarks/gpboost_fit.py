"""One GPBoost fit of crossed random intercepts, as a Python user runs it: read the CSV, code the factors, fit.

    python benchmarks/gpboost_fit.py DATA.csv FACTOR1,FACTOR2 RESPONSE

GPBoost (an optional benchmark dependency: ``pip install gpboost``; never imported by bayesrepro) fits the
model by maximum likelihood with its default settings. Prints one JSON line: ``n_obs``, ``variances``
({factor: variance, ..., "Residual": variance}), ``gpboost`` (its version), ``read_seconds``, ``fit_seconds``,
``settings`` (the estimation settings GPBoost reports choosing).
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np
import pandas as pd


def main() -> int:
    import gpboost

    path, factors, response = sys.argv[1], sys.argv[2].split(","), sys.argv[3]
    start = time.perf_counter()
    table = pd.read_csv(path, dtype={f: str for f in factors})
    groups = np.column_stack([pd.factorize(table[f])[0] for f in factors])
    y = table[response].to_numpy(float)
    read = time.perf_counter() - start
    start = time.perf_counter()
    model = gpboost.GPModel(group_data=groups, likelihood="gaussian")
    model.fit(y=y, X=np.ones((len(y), 1)))
    fit = time.perf_counter() - start
    parameters = np.asarray(model.get_cov_pars()).ravel()   # error variance first, then the groups in order
    variances = {f: float(v) for f, v in zip(factors, parameters[1:])}
    variances["Residual"] = float(parameters[0])
    settings = {}
    if hasattr(model, "get_optim_params"):
        settings = {k: str(v) for k, v in model.get_optim_params().items()}
    print(json.dumps({"n_obs": len(y), "variances": variances, "gpboost": gpboost.__version__,
                      "read_seconds": read, "fit_seconds": fit, "settings": settings}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
