"""The range of every count an option or a keyword accepts, and the one rule that refuses a value outside it.

A count outside its range either means nothing (one chain has no R-hat, one
bootstrap replicate no interval) or cannot finish: sampling, bootstraps and
simulations take time and memory in proportion to their counts, and values
far beyond these (10^12 draws) end in an abort of the sampler's allocator or
in a run that never ends. The upper bounds are chosen so that a run at the
top of a range finishes within minutes on two cores for the designs the
package is for (measured on the bundled data: a REML bootstrap replicate of
the 337,284 rows of kreutzer_marking_full takes 0.1 s, a bootstrap refit of
a GLRT 0.02 s, a simulated planning fit 0.03 s plus 9 µs per level).
Products of counts that multiply the work are bounded where the command
line knows them (``check_product``). The command line checks every count
while parsing its options, before any data are read; the Python functions
check the same ranges.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from dataclasses import dataclass

from . import errors
from .errors import BayesreproError

_WHOLE = re.compile(r"[+-]?[0-9]+")
_SCIENTIFIC = re.compile(r"[+-]?[0-9]+(?:[.][0-9]*)?[eE][+]?[0-9]+")


@dataclass(frozen=True)
class Count:
    """A whole number an option takes, from ``low`` to ``high``; ``reason`` says why, in the refusal."""

    option: str
    low: int
    high: int
    reason: str = ""

    def check(self, value) -> int:
        """``value`` as an int, or one error line naming the option and its range."""
        number = whole_number(value)
        if number is None or not self.low <= number <= self.high:
            raise BayesreproError(self.refusal(value))
        return number

    def refusal(self, value) -> str:
        return (f"{self.option} must be a whole number from {self.low:,} to {self.high:,}, not {shown(value)}"
                + (f"; {self.reason}" if self.reason else ""))

    @property
    def range(self) -> str:
        return f"{self.low:,} to {self.high:,}"


def whole_number(value) -> int | None:
    """An int from an int, a whole float, or a text written as one (``2000``, ``2e3``); None otherwise."""
    # NumPy's integer and float scalars register as numbers.Integral and numbers.Real; its bool as neither
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return int(value) if math.isfinite(value) and float(value).is_integer() else None
    if isinstance(value, str):
        text = value.strip()
        if _WHOLE.fullmatch(text):
            return int(text)
        if _SCIENTIFIC.fullmatch(text) and len(text) < 32:
            number = float(text)
            return int(number) if math.isfinite(number) and number.is_integer() else None
    return None


def shown(value) -> str:
    """A value as a user wrote it, for an error line: an option's text as typed, a NumPy scalar as a number."""
    if isinstance(value, str) and value.strip() and len(value) <= 40:
        return value
    return errors.shown(value)


def check_product(total: int, limit: int, what: str, advice: str, bound: str = "that finish in minutes") -> None:
    """Refuse work that multiplies counts beyond ``limit``, saying how much it would be and what to lower."""
    if total > limit:
        raise BayesreproError(f"{what} come to {total:,}, more than the {limit:,} {bound}; {advice}")


def number(text, option, low=-math.inf, high=math.inf, open_interval=False) -> float:
    """``text`` as a finite float within the bounds, or one error line naming ``option``."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise BayesreproError(f"{option} must be a number, not '{text}'") from None
    if not math.isfinite(value):
        raise BayesreproError(f"{option} must be a finite number, not {text}")
    inside = (low < value < high) if open_interval else (low <= value <= high)
    if not inside:
        bounds = f"strictly between {low:g} and {high:g}" if open_interval and high < math.inf else (
            f"above {low:g}" if open_interval else f"at least {low:g}")
        raise BayesreproError(f"{option} must be {bounds}, not {text}")
    return value


def check_nodes(nodes, n_components: int) -> int:
    """The number of quadrature nodes (--nagq) within its range; above 1 only for one grouping factor."""
    nodes = NAGQ.check(nodes)
    if nodes > 1 and n_components != 1:
        raise BayesreproError(
            f"--nagq {nodes}: adaptive quadrature integrates over one grouping factor and this model has "
            f"{n_components}; leave --nagq at 1 (the Laplace approximation)"
        )
    return nodes


# --- sampling (phi, compare, report, plan --assurance) ---------------------------------------------------------
# R-hat compares chains and ESS needs draws enough to see autocorrelation: below the lower
# bounds the convergence diagnostics that every result carries are meaningless.
DRAWS = Count("--draws", 100, 100_000, "ESS and R-hat need at least 100 draws per chain")
TUNE = Count("--tune", 1, 100_000, "the sampler adapts its step size in at least one tuning step")
CHAINS = Count("--chains", 2, 64, "R-hat needs two chains to compare")
# chains x (tune + draws): 50 times the default 4 x (1000 + 1000)
MAX_NUTS_STEPS = 400_000
# chains x draws x values stored per draw (variance components, fixed and level effects): 800 MB of float64
MAX_POSTERIOR_VALUES = 100_000_000
SEED = Count("--seed", 0, 2**32 - 1)

# --- frequentist resampling ---------------------------------------------------------------------------------------
# compare/report: a REML refit per replicate; the ends of a percentile interval need 100
BOOTSTRAP = Count("--bootstrap", 100, 5_000, "the ends of a percentile interval need at least 100 replicates")
# glrt --reference bootstrap: two ML refits per sample; below 20 no p-value falls under 5 %
BOOTSTRAP_SAMPLES = Count("--bootstrap-samples", 20, 10_000,
                          "10,000 give a p-value near 0.05 a Monte-Carlo standard error of 0.002")
NAGQ = Count("--nagq", 1, 25, "1 is the Laplace approximation")

# --- rank ---------------------------------------------------------------------------------------------------------
# the k of P(top k); the model's levels bound it further once the data are read
TOP = Count("--top", 1, 1_000_000, "at most the number of levels ranked")

# --- instruments --------------------------------------------------------------------------------------------------
RESAMPLES = Count("--resamples", 1, 10_000_000, "10,000 resolve p = 0.001")
BUDGETS = Count("--budgets", 1, 1_000_000)
GAM_DF = Count("--df", 4, 40, "a cubic smooth needs 4")
MAX_SIZE = Count("--max-size", 1, 1_000)
PATIENTS = Count("--patients", 50, 1_000_000, "the trees' leaves need at least 10 patients each")
TREE_DEPTH = Count("--max-depth", 1, 20)

# --- planning -----------------------------------------------------------------------------------------------------
SIMULATIONS = Count("--simulations", 0, 10_000, "0 gives the closed form alone")
CHECK_SIMULATIONS = Count("--simulations", 19, 10_000, "a Monte-Carlo p-value below 5 % needs 19")  # model checks
WORKERS = Count("--workers", 1, max(2, os.cpu_count() or 1), "processes; more than the cores only wait for them")
REPLICATES = Count("--replicates", 1, 1_000)
PLANNED_COUNT = 1_000_000         # a count of --vary or --max: levels of one facet in a planned design
MAX_DESIGNS = 10_000              # rows of the --vary grid (closed form: 0.5 ms each)
MAX_SIMULATED_FITS = 5_000        # --simulations x designs (about 30 ms of CPU each on small pilots)
MAX_SIMULATED_LEVELS = 10_000_000  # --simulations x the varied levels of every design (9 µs each)
