"""``br.simulate_harness_logs``: an evaluation harness's logs of a grid of runs, written with known truth."""

from __future__ import annotations

from .display import public


@public
def simulate_harness_logs(folder, harness: str = "lm-eval", seeds=(1, 2, 3), items: int = 100,
                          random_seed: int = 0):
    """Write the logs of two models x seeds x two few-shot settings on one multiple-choice task, as the harness does.

    Each run's 0/1 scores follow a logit model: intercept 0.3, ``tuned`` better than ``base`` by 0.5, five
    shots better than none by 0.3, item SD 1.2 and seed SD 0.15 on the logit scale.

    Parameters
    ----------
    folder : str or pathlib.Path
        Where the logs are written (created if absent).
    harness : {"lm-eval", "inspect"}, default "lm-eval"
        lm-evaluation-harness (``results_<date>.json`` beside ``samples_<task>_<date>.jsonl``) or Inspect AI
        (``.eval`` archives).
    seeds : sequence of int, default (1, 2, 3)
        Training seeds per model.
    items : int, default 100
        Questions of the task.
    random_seed : int, default 0
        Seed of the simulation.

    Returns
    -------
    SimulatedGrid
        ``folder``, ``runs`` (the number written), ``items`` and ``truth``: ``intercept``, ``model_effects``
        and ``shot_effects`` (name or shots mapped to the logit effect), ``sd_item`` and ``sd_seed``.
    """
    from ..errors import BayesreproError
    from ..harness.simulate import simulate_grid

    if harness not in ("lm-eval", "inspect"):
        raise BayesreproError(f"--harness '{harness}' is unknown; choose one of: lm-eval, inspect")
    return simulate_grid(folder, harness=harness, seeds=tuple(seeds), items=items, random_seed=random_seed)
