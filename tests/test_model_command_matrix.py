"""Every model class the package fits through every command, on small data: an answer or a documented refusal.

A model class is a kind of score (Gaussian, 0/1, counts of successes) and of
random part (intercepts, crossed factors, slopes, crowd-scale crossed
factors). The crowd classes run on small data with the thresholds that send
a design to the crowd-scale paths lowered (the sparse core of Gaussian fits,
the rows' response simulator of their bootstrap, the sparse Laplace fit of
binary ones), so that the paths themselves run in seconds. Each command line
runs in-process (as ``test_fuzz`` runs them) and must end with exit status 0
(or 3, not converged, with its warning) and a result, or with exit status 2 and
the one refusal documented for that class and command in ``REFUSALS``; never
status 1 (an internal error), never a traceback, never an undocumented refusal.

To add a command: add its command line to ``COMMANDS`` (and to ``SAMPLING``
if it samples); to add a class: add it to ``CLASSES``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import pytest

from test_fuzz import assert_outcome, run_cli

from bayesrepro.errors import EXIT_BAD_INPUT

pytestmark = pytest.mark.filterwarnings("error::RuntimeWarning:bayesrepro")


def evaluation_rows(seed: int = 5) -> pd.DataFrame:
    """16 items × 2 systems × 3 seeds, each row scored by one of 6 raters: Gaussian, 0/1 and count scores."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(16):
        item, slope = rng.normal(0, 1), rng.normal(0, 0.4)
        for system in ("A", "B"):
            for s in (1, 2, 3):
                x = rng.uniform(-1, 1)
                rater = (i + s + (system == "B")) % 6
                eta = item + slope * x + 0.6 * (system == "B") + 0.3 * (rater - 2.5) / 2.5
                trials = int(rng.integers(3, 9))
                rows.append((f"i{i}", system, s, f"r{rater}", round(x, 4), round(eta + rng.normal(0, 0.5), 4),
                             int(rng.uniform() < 1 / (1 + np.exp(-eta))),
                             int(rng.binomial(trials, 1 / (1 + np.exp(-eta)))), trials))
    return pd.DataFrame(rows, columns=["item", "system", "seed", "rater", "x", "score", "correct", "successes",
                                       "trials"])


def crowd_rows(seed: int = 6) -> pd.DataFrame:
    """60 items, each rated by 4 of 20 raters: a crowd design, small."""
    rng = np.random.default_rng(seed)
    items, raters = rng.normal(0, 1, 60), rng.normal(0, 0.5, 20)
    rows = []
    for i in range(60):
        for r in rng.choice(20, 4, replace=False):
            eta = items[i] + raters[r]
            rows.append((f"i{i}", f"r{r}", round(eta + rng.normal(0, 0.6), 4), int(rng.uniform() < 1 / (1 + np.exp(-eta)))))
    return pd.DataFrame(rows, columns=["item", "rater", "score", "correct"])


@dataclass(frozen=True)
class ModelClass:
    data: str
    formula: str
    h0: str                       # the null model of glrt
    plan: tuple[str, ...]         # plan's options beside --formula
    crowd: bool = False           # run with the crowd-scale thresholds lowered
    ranked: str = "system"        # the factor of rank: a fixed factor, or a grouping factor where there is none
    phi_object: tuple[str, ...] = field(default=())


SYSTEM_PLAN = ("--contrast", "system=B-A", "--vary", "item=8,16", "--simulations", "10", "--seed", "1")
CROWD_PLAN = ("--vary", "item=30,60", "--simulations", "10", "--seed", "1")
CLASSES = {
    "gaussian-intercepts": ModelClass("rows.csv", "score ~ system + (1|item)", "score ~ 1 + (1|item)", SYSTEM_PLAN),
    "gaussian-crossed": ModelClass("rows.csv", "score ~ system + (1|item) + (1|rater)",
                                   "score ~ 1 + (1|item) + (1|rater)", SYSTEM_PLAN),
    "gaussian-slopes": ModelClass("rows.csv", "score ~ system + (1 + x|item)", "score ~ 1 + (1 + x|item)",
                                  SYSTEM_PLAN),
    "gaussian-crowd": ModelClass("crowd.csv", "score ~ 1 + (1|item) + (1|rater)", "score ~ 1 + (1|item)",
                                 CROWD_PLAN, crowd=True, ranked="rater"),
    "binary-intercepts": ModelClass("rows.csv", "correct ~ system + (1|item)", "correct ~ 1 + (1|item)",
                                    SYSTEM_PLAN),
    "binary-crossed": ModelClass("rows.csv", "correct ~ system + (1|item) + (1|rater)",
                                 "correct ~ 1 + (1|item) + (1|rater)", SYSTEM_PLAN),
    "binary-slopes": ModelClass("rows.csv", "correct ~ system + (1 + x|item)", "correct ~ 1 + (1 + x|item)",
                                SYSTEM_PLAN),
    "binary-counts": ModelClass("rows.csv", "p(successes, trials) ~ system + (1|item)",
                                "p(successes, trials) ~ 1 + (1|item)", SYSTEM_PLAN),
    "binary-crowd": ModelClass("crowd.csv", "correct ~ 1 + (1|item) + (1|rater)", "correct ~ 1 + (1|item)",
                               CROWD_PLAN, crowd=True, ranked="rater"),
}

# few draws: the result (status 0, or 3 with its warning when they do not converge) is what is checked
SMALL_DRAWS = ("--draws", "200", "--tune", "200", "--chains", "2", "--seed", "1", "--allow-unconverged")
COMMANDS = {
    "vca": lambda c: ["vca", c.data, "--formula", c.formula],
    "glrt": lambda c: ["glrt", c.data, "--h0", c.h0, "--h1", c.formula],
    "phi": lambda c: ["phi", c.data, "--formula", c.formula, *SMALL_DRAWS],
    "compare": lambda c: ["compare", c.data, "--formula", c.formula, "--bootstrap", "100", *SMALL_DRAWS],
    "plan": lambda c: ["plan", c.data, "--formula", c.formula, *c.plan],
    "plan-dstudy": lambda c: ["plan", c.data, "--formula", c.formula, "--vary", "item=8,16"],
    "effects": lambda c: ["effects", c.data, "--formula", c.formula],
    "effects-bayes": lambda c: ["effects", c.data, "--formula", c.formula, "--bayes", *SMALL_DRAWS],
    "rank": lambda c: ["rank", c.data, "--formula", c.formula, "--factor", c.ranked, "--bootstrap", "100",
                       *SMALL_DRAWS],
    "check": lambda c: ["check", c.data, "--formula", c.formula, "--simulations", "19", "--seed", "1"],
    "check-bayes": lambda c: ["check", c.data, "--formula", c.formula, "--bayes", "--simulations", "19",
                              *SMALL_DRAWS],
}
SAMPLING = {"phi", "compare", "effects-bayes", "rank", "check-bayes"}   # these sample: slow

# The documented refusals: (class, command) -> the one line it ends with (a regular expression). Any other
# refusal of a class and command fails the test.
SLOPE_POSTERIOR_CHECK = r"^bayesrepro: error: the posterior's model check takes random intercepts; .*drop --bayes"
SLOPE_POWER = (r"^bayesrepro: error: random slope '\(1 \+ x\|item\)': plan computes the power of a contrast for "
               r"random intercepts only; plan phi of the slope model")
REFUSALS: dict[tuple[str, str], str] = {
    # README, planning: the power of a contrast is refused for slope models (plan-dstudy gives their phi)
    ("gaussian-slopes", "plan"): SLOPE_POWER,
    ("binary-slopes", "plan"): SLOPE_POWER,
    # guide, model checks: the posterior's check takes random intercepts (the REML/ML fit checks slope models)
    ("gaussian-slopes", "check-bayes"): SLOPE_POSTERIOR_CHECK,
    ("binary-slopes", "check-bayes"): SLOPE_POSTERIOR_CHECK,
}


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    path = tmp_path_factory.mktemp("matrix")
    evaluation_rows().to_csv(path / "rows.csv", index=False)
    crowd_rows().to_csv(path / "crowd.csv", index=False)
    return path


def crowd_thresholds(monkeypatch) -> None:
    """The thresholds above which a design takes the crowd-scale paths, lowered to the small crowd data."""
    from bayesrepro.frequentist import bootstrap_test, cell_products, general_lmm

    monkeypatch.setattr(general_lmm, "DENSE_SCHUR_LEVELS", 4)      # Gaussian: the sparse core
    monkeypatch.setattr(bootstrap_test, "DENSE_SCHUR_LIMIT", 4)     # its bootstrap: simulated through the rows
    monkeypatch.setattr(cell_products, "COUPLING_LIMIT", 100)       # binary: the sparse Laplace fit on the rows


def cases():
    for name in CLASSES:
        for command in COMMANDS:
            marks = [pytest.mark.slow] if command in SAMPLING else []
            yield pytest.param(name, command, id=f"{name}-{command}", marks=marks)


@pytest.mark.parametrize("name, command", list(cases()))
def test_every_model_class_through_every_command(name, command, folder, monkeypatch):
    model = CLASSES[name]
    if model.crowd:
        crowd_thresholds(monkeypatch)
    argv = COMMANDS[command](model)
    status, out, err, help_shown = run_cli(argv, folder)
    assert_outcome(argv, status, out, err, help_shown)
    documented = REFUSALS.get((name, command))
    if status == EXIT_BAD_INPUT:
        assert documented is not None, f"undocumented refusal of {name} by {command}: {err.strip()}"
        assert re.search(documented, err), (documented, err)
    else:
        assert documented is None, f"{name} by {command} is documented as refused but gave a result"
