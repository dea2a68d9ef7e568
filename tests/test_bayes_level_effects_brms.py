"""Level effects of binary leaderboards with brms's default priors (``prior="brms"``) against brms itself.

A simulated 12-system leaderboard (200 items, one 0/1 score per pair) is fitted by brms through ``Rscript``
(tests/reference/brms_level_effects.R: 4 chains of 4,000 draws after 1,000 of warmup) and by our sampler (4 × 4,000
draws). brms's answers (brms 2.18.0, R 4.2.2, written by that script) are committed beside the script as
``brms_level_effects_<formula>.json`` and are what the slow suite compares with; with
``BAYESREPRO_RERUN_BRMS=1`` (on demand: brms compiles and samples for minutes) the script runs again, its answer
kept in a cache directory ($BAYESREPRO_TEST_CACHE, else the system's temporary one) keyed by the script, the data
and the formula, and that fresh answer is compared instead; skipped then without ``Rscript`` or brms.
"""

import hashlib
import json
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from conftest import brms_available

SCRIPT = Path(__file__).parent / "reference" / "brms_level_effects.R"
# Both sample the same posterior: each level's 5 %, 50 % and 95 % quantiles agree within 6 % of brms's 90 % width.
# For a normal posterior the Monte Carlo SE of a 5 % quantile is about 0.65 / √ESS of the 90 % width, so with a
# bulk ESS of n on both sides the difference of two has an SE of 0.92 / √n of the width: 6 % is 4 SEs at n = 3,700.
# The smallest bulk ESS of a level effect was ours 3,565 and brms's 7,337 with random systems (6 % is 4.5 SEs),
# 17,263 and 24,922 with fixed ones; the largest difference measured was 3.0 % and 2.7 % of the width.
WIDTH_SHARE = 0.06
FORMULAS = {"random_systems": "correct ~ 1 + (1|system) + (1|item)", "fixed_systems": "correct ~ system + (1|item)"}
RERUN = os.environ.get("BAYESREPRO_RERUN_BRMS") == "1"


def leaderboard() -> pd.DataFrame:
    rng = np.random.default_rng(20261128)
    systems = [f"sys{k:02d}" for k in range(12)]
    ability = rng.normal(0, 0.6, 12)
    items = [f"item{i:03d}" for i in range(200)]
    ease = rng.normal(0.5, 1.5, 200)
    rows = [(s, it, int(rng.random() < 1 / (1 + np.exp(-(a + e)))))
            for s, a in zip(systems, ability) for it, e in zip(items, ease)]
    return pd.DataFrame(rows, columns=["system", "item", "correct"])


def committed_quantiles(name: str, formula: str) -> dict:
    """brms's quantiles of every level effect as the reference script wrote them for this leaderboard."""
    reference = json.loads((SCRIPT.parent / f"brms_level_effects_{name}.json").read_text())
    assert reference["formula"] == formula
    return reference


def brms_quantiles(data: pd.DataFrame, formula: str) -> dict:
    """brms's quantiles of every level effect, from the cache or from a fresh run of the reference script."""
    text = data.to_csv(index=False)
    key = hashlib.sha256(SCRIPT.read_bytes() + text.encode() + formula.encode()).hexdigest()[:16]
    cache = Path(os.environ.get("BAYESREPRO_TEST_CACHE", tempfile.gettempdir())) / "bayesrepro-brms"
    cache.mkdir(parents=True, exist_ok=True)
    answer = cache / f"level_effects_{key}.json"
    if not answer.exists():
        csv = cache / f"leaderboard_{key}.csv"
        csv.write_text(text)
        partial = answer.with_suffix(".partial")
        subprocess.run(["Rscript", str(SCRIPT), str(csv), formula, str(partial)], check=True, capture_output=True)
        partial.replace(answer)
    return json.loads(answer.read_text())


@pytest.mark.slow
@pytest.mark.skipif(RERUN and not brms_available(), reason="Rscript with the brms package is not installed")
@pytest.mark.parametrize("name", FORMULAS)
def test_level_effects_match_brms(name):
    data, formula = leaderboard(), FORMULAS[name]
    reference = brms_quantiles(data, formula) if RERUN else committed_quantiles(name, formula)
    posterior = br.Model(formula, data).sample(prior="brms", draws=4000, tune=1000, chains=4, seed=3)
    ours = posterior.level_effects(prob=0.9).set_index(["group", "level", "term"])
    assert len(reference["levels"]) == len(ours) > 0
    worst = 0.0
    for row in reference["levels"]:
        term = "(Intercept)" if row["term"] == "Intercept" else row["term"]
        mine = ours.loc[(row["group"], row["level"], term)]
        width = row["0.95"] - row["0.05"]
        for quantile, column in (("0.05", "low"), ("0.5", "estimate"), ("0.95", "high")):
            share = abs(mine[column] - row[quantile]) / width
            worst = max(worst, share)
            assert share <= WIDTH_SHARE, (row["group"], row["level"], quantile, mine[column], row[quantile])
    print(f"{formula}: largest difference {100 * worst:.2f} % of brms's 90 % width; smallest bulk ESS of ours "
          f"{ours['ess_bulk'].min():.0f}, of brms's {reference['ess_bulk_min']:.0f}")
