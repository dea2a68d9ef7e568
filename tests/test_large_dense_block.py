"""A dense block past the order where OpenBLAS's threaded Cholesky factor crashes is factored, and rightly.

numpy's and SciPy's OpenBLAS (0.3.31, 0.3.30) crash the process (SIGSEGV, status 139) in a Cholesky factor of
order 15,800 on two threads (docs/guide/native_crashes.md). The REML criterion of a design whose dense block has
16,001 rows is evaluated here in a child process through the package's own dense path (``ProfiledDeviance``),
which asks for threads as on an idle machine. It must end normally with the criterion computed independently,
rater by rater: items are nested in raters, so V = I + θ_item²·(item blocks) + θ_rater²·(rater blocks) is block
diagonal with one small block per rater.
"""

import json
import subprocess
import sys

import pytest

from bayesrepro.design.memory_estimate import machine_memory

ORDER = 16_000   # raters: the dense block has ORDER + 1 rows (with the intercept)
# peak of the child: the rater Gram matrix and the Schur complement with their temporaries (~3.6 copies of
# ORDER² doubles, measured at 3,000 and 6,000 raters), and the design's sparse parts
NEEDED_BYTES = 8 * 4 * ORDER * ORDER + (1 << 30)

CHILD = r"""
import json, os, sys
import numpy as np, pandas as pd
from bayesrepro import runtime
from bayesrepro.design import build_model_frame
from bayesrepro.frequentist import deviance

raters = int(sys.argv[1])
# as on an idle machine: every core but this process's is idle, so the criterion takes one thread per core
cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
runtime._idle_cores = lambda: cores - 1
rng = np.random.default_rng(20)
per = rng.integers(1, 4, raters)                 # items per rater
item_rater = np.repeat(np.arange(raters), per)
item = np.repeat(np.arange(len(item_rater)), 2)  # two scores per item
rater = item_rater[item]
y = (rng.normal(size=len(item)) + rng.normal(scale=0.8, size=len(item_rater))[item]
     + rng.normal(scale=0.6, size=raters)[rater])
data = pd.DataFrame({"item": item.astype(str), "rater": rater.astype(str), "score": y})
theta = np.array([0.8, 0.6])                     # formula order: item, rater
with runtime.numerical_work():   # as a fit runs: one BLAS thread, more only where the criterion asks for them
    frame = build_model_frame("score ~ 1 + (1|item) + (1|rater)", data).with_memory_limit("64G")
    criterion = deviance.ProfiledDeviance(frame.stats(), reml=True)
    value = criterion(theta)

# the same criterion rater by rater: log|V| + log(1'V^-1 1) + (N - 1)(1 + log(2 pi r2 / (N - 1)))
order = np.argsort(rater, kind="stable")
starts = np.concatenate([[0], np.cumsum(2 * per)])[:-1]
logdet = xvx = xvy = yvy = 0.0
for m in np.unique(per):
    chosen = np.flatnonzero(per == m)
    size = 2 * m
    block = np.eye(size) + theta[0] ** 2 * np.kron(np.eye(m), np.ones((2, 2))) + theta[1] ** 2 * np.ones((size, size))
    inverse = np.linalg.inv(block)
    scores = y[order][starts[chosen][:, None] + np.arange(size)]
    logdet += len(chosen) * np.linalg.slogdet(block)[1]
    xvx += len(chosen) * inverse.sum()
    xvy += float((scores @ inverse).sum())
    yvy += float(np.einsum("ri,ij,rj->", scores, inverse, scores))
n = len(y)
r2 = yvy - xvy * xvy / xvx
reference = logdet + np.log(xvx) + (n - 1) * (1.0 + np.log(2.0 * np.pi * r2 / (n - 1)))
print(json.dumps({"order": criterion.dense_order, "value": float(value), "reference": float(reference)}))
"""


@pytest.mark.ondemand
@pytest.mark.skipif(machine_memory() < NEEDED_BYTES,
                    reason=f"needs {NEEDED_BYTES / 2**30:.0f} GB of memory for a {ORDER:,}-row dense block")
def test_a_dense_block_past_the_threaded_crash_order_is_factored_rightly():
    done = subprocess.run([sys.executable, "-c", CHILD, str(ORDER)], capture_output=True, text=True, timeout=1500)
    assert done.returncode == 0, f"status {done.returncode}: {done.stderr[-2000:]}"
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["order"] == ORDER + 1
    # a sum of ~50,000 logs and of N·log(r²): 1e-9 relative is far above the rounding of either route
    assert result["value"] == pytest.approx(result["reference"], rel=1e-9)
