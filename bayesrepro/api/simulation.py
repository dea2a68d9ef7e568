"""``br.simulate_binary_grid``: a binary benchmark with known truth, the design of the ``binary_grid`` spec."""

from __future__ import annotations

from collections.abc import Mapping

from .. import limits
from ..errors import BayesreproError
from ..links import get_link
from .display import public


@public
def simulate_binary_grid(items: int = 2000, systems: dict | None = None, seeds: int = 5, prompts: int = 4,
                         item_sd: float = 1.5, seed_sd: float = 0.2, prompt_sd: float = 0.3, intercept: float = 0.5,
                         link: str = "logit", random_state=None):
    """Simulate one binary benchmark: every item scored by every seed of every system with every prompt.

    The score is 1 with probability ``inverse_link(intercept + system effect + item + seed + prompt)``, the
    item, seed (per system) and prompt effects normal with the given SDs on the link scale.

    Parameters
    ----------
    items : int, default 2000
        Test items.
    systems : dict, optional
        Each system's name mapped to its effect on the link scale (default ``{"A": 0, "B": 0.2, "C": 0.4}``).
    seeds : int, default 5
        Training seeds per system.
    prompts : int, default 4
        Prompt templates, shared by all systems.
    item_sd, seed_sd, prompt_sd : float, default 1.5, 0.2 and 0.3
        SDs of the item, seed and prompt effects on the link scale.
    intercept : float, default 0.5
        The link-scale mean of the first system.
    link : {"logit", "probit"}, default "logit"
        The link.
    random_state : int or numpy.random.Generator, optional
        Seed of the simulation.

    Returns
    -------
    pandas.DataFrame
        Columns ``item``, ``system``, ``seed``, ``prompt`` and ``correct`` (0/1), one row per item, system, seed
        and prompt.
    """
    from ..simulate import binary_grid

    items, seeds, prompts = GRID_ITEMS.check(items), GRID_SEEDS.check(seeds), GRID_PROMPTS.check(prompts)
    systems = _system_effects(systems)
    get_link(link)
    item_sd, seed_sd, prompt_sd = (limits.number(sd, name, low=0) for sd, name in
                                   [(item_sd, "item_sd"), (seed_sd, "seed_sd"), (prompt_sd, "prompt_sd")])
    intercept = limits.number(intercept, "intercept")
    limits.check_product(items * (DEFAULT_SYSTEMS if systems is None else len(systems)) * seeds * prompts, GRID_ROWS, "items x systems x seeds x prompts",
                         "lower items= or seeds=", bound="rows a simulation holds")
    return binary_grid(items, systems, seeds, prompts, item_sd, seed_sd, prompt_sd, intercept, link, random_state)


GRID_ITEMS = limits.Count("items", 2, 1_000_000)
GRID_SEEDS = limits.Count("seeds", 1, 1_000)
GRID_PROMPTS = limits.Count("prompts", 1, 1_000)
GRID_ROWS = 50_000_000
DEFAULT_SYSTEMS = 3  # binary_grid's A, B and C


def _system_effects(systems) -> dict | None:
    if systems is None:
        return None
    if not isinstance(systems, Mapping) or not systems:
        raise BayesreproError("systems must map each system's name to a finite effect, e.g. {'A': 0.0, 'B': 0.2}")
    return {name: limits.number(effect, f"systems[{name!r}]") for name, effect in systems.items()}


@public
def simulate_liver_sofa(patients: int = 800, max_depth: int = 4, seed: int = 1):
    """Simulate patients whose liver SOFA score is defined by bilirubin, and the predictions of two trained models.

    The score (0 to 4) follows bilirubin's cut-offs 1.2, 2, 6 and 12 mg/dL; INR and albumin track bilirubin with
    noise; age and heart rate are noise. Two least-squares regression trees are trained on ``patients`` simulated
    patients, one on all five features and one without bilirubin, and predict the score of as many new patients.

    Parameters
    ----------
    patients : int, default 800
        Patients in the training set and in the test set, at least 50.
    max_depth : int, default 4
        Depth of the trees.
    seed : int, default 1
        Seed of the training set; the test set's is the next integer.

    Returns
    -------
    pandas.DataFrame
        The test patients: ``bilirubin``, ``inr``, ``albumin``, ``age``, ``heart_rate``, the true ``sofa_liver``,
        and the predictions ``with_bilirubin`` and ``without_bilirubin`` of the two trees.
    """
    from ..instruments.liver_sofa import FEATURES, fit_regression_tree, make_liver_data

    patients, max_depth = limits.PATIENTS.check(patients), limits.TREE_DEPTH.check(max_depth)
    seed = limits.SEED.check(seed)
    train, test = make_liver_data(patients, seed=seed), make_liver_data(patients, seed=seed + 1)
    for name, features in [("with_bilirubin", list(FEATURES)),
                           ("without_bilirubin", [f for f in FEATURES if f != "bilirubin"])]:
        tree = fit_regression_tree(train[features], train["sofa_liver"], max_depth=max_depth)
        test[name] = tree.predict(test[features])
    return test
