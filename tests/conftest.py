import functools
import shutil
import subprocess

import numpy as np
import pytest

from bayesrepro.datasets import load_dataset


@pytest.fixture(scope="session")
def ter():
    return load_dataset("kreutzer_ter")


@pytest.fixture(scope="session")
def annotation():
    return load_dataset("kreutzer_annotation")


@pytest.fixture(scope="session")
def harness_grid(tmp_path_factory):
    """lm-eval logs of models × seeds × few-shot settings with known effects (bayesrepro.harness.simulate)."""
    from bayesrepro.harness.simulate import simulate_grid

    return simulate_grid(tmp_path_factory.mktemp("harness_grid"), seeds=(1, 2, 3), items=60, tasks=2)


ANNOTATION = (
    "score ~ 1 + (1|sentence) + (1|rater) + (1|occasion) + (1|sentence:rater) + (1|sentence:occasion) + (1|rater:occasion)"
)


def gaussian_cases():
    """Gaussian random-intercept models of the papers' data for checks of the fast path's density:
    a six-component G-study, one factor, and an unbalanced design (items with 1–9 rows)."""
    annotation = load_dataset("kreutzer_annotation")
    ter = load_dataset("kreutzer_ter")
    ter = ter[ter["sentence_id"].isin(ter["sentence_id"].cat.categories[:60])]
    unbalanced = ter.iloc[np.random.default_rng(3).permutation(len(ter))[:300]]
    return [
        (ANNOTATION, annotation[annotation["mode"] == "Marking"]),
        ("ter ~ system + (1|sentence_id)", ter),
        ("ter ~ system + src_length + (1|sentence_id) + (1|replication)", unbalanced),
    ]


@functools.lru_cache(maxsize=None)
def brms_available() -> bool:
    """Is ``Rscript`` installed with the brms package? Tests run against brms skip cleanly without it."""
    if shutil.which("Rscript") is None:
        return False
    return subprocess.run(["Rscript", "-e", "library(brms)"], capture_output=True).returncode == 0
