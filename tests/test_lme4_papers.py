"""Agreement with lme4 on the papers' data (tests/reference/lme4_papers.R, lme4 1.1-31).

For every model lme4 fitted, our criterion (REML criterion or ML deviance) at
our optimum must be no worse than lme4's at its own (beyond 1e-6), and the
variance components must agree within 1 % relative where they hold at least
0.1 % of the total, else within 1e-5 of the total: components that small sit on
flat likelihood ridges where two converged optimisers stop at slightly
different points (on sofa_mlp_grid lme4's two optimisers differ by 0.5 % there).
Components of confounded grouping factors are compared by their sum: only it
is identified.
"""

import json
import re
from pathlib import Path

import pytest

from bayesrepro.datasets import DATASETS, load_dataset
from bayesrepro.frequentist.lmm import fit_lmm
from bayesrepro.properties import length_class

REFERENCE = Path(__file__).parent / "reference"
SLOW_DATASETS = {"kreutzer_marking_full"}


def records():
    found = []

    def walk(node, path):
        if "formula" in node and "variances" in node:
            found.append(("/".join(path), node))
            return
        for key, value in node.items():
            if isinstance(value, dict):
                walk(value, path + [key])

    for file in ("lme4_papers.json", "lme4_full_grid.json"):
        if (REFERENCE / file).exists():
            content = json.loads((REFERENCE / file).read_text())
            walk({k: v for k, v in content.items() if k not in ("producer", "versions")}, [])
    return found


def dataset_name(path):
    first = path.split("/")[0]
    return first if first in DATASETS else "kreutzer_marking_full"  # lme4_full_grid.json holds one model


def data_for(path):
    frame = load_dataset(dataset_name(path))
    if dataset_name(path) == "kreutzer_annotation":
        frame = frame[frame["mode"] == path.split("/")[1]]
    if "src_length" in frame:
        frame["len"] = length_class(frame["src_length"])
    return frame


PARAMS = [
    pytest.param(path, record, id=path, marks=[pytest.mark.slow] if dataset_name(path) in SLOW_DATASETS else [])
    for path, record in records()
]


@pytest.mark.parametrize("path, record", PARAMS)
def test_papers_models_match_lme4(path, record):
    frame = data_for(path)
    method = "reml" if record["method"].upper().startswith("REML") else "ml"
    fit = fit_lmm(record["formula"], frame, method=method)
    lme4_criterion = record["reml_criterion"] if method == "reml" else record["deviance"]
    assert fit.criterion <= lme4_criterion + 1e-6
    confounded = set()
    for note in fit.notes:
        confounded |= set(re.findall(r"'([^']+)' and '([^']+)' are confounded", note)[0]) if "confounded" in note else set()
    total = sum(record["variances"].values())
    pairs = [(c, fit.variances[c], v) for c, v in record["variances"].items() if c not in confounded]
    if confounded:
        pairs.append(("+".join(sorted(confounded)), sum(fit.variances[c] for c in confounded),
                      sum(record["variances"][c] for c in confounded)))
    for component, ours, theirs in pairs:
        if theirs >= 1e-3 * total:
            assert ours == pytest.approx(theirs, rel=1e-2), component
        else:
            assert ours == pytest.approx(theirs, abs=1e-5 * total), component
