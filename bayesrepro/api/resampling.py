"""``br.bootstrap`` and ``br.permutation``: resampling tests of two systems scored on the same items, as the
``bootstrap`` and ``permutation`` commands report them."""

from __future__ import annotations

from .display import Result, public
from .shared_docs import shared_parameters


class ResamplingTest(Result):
    """A paired bootstrap, multi-bootstrap or permutation test of two systems.

    Returned by ``bootstrap`` and ``permutation``.

    Parameters
    ----------
    outcome : dict
        The systems compared, the instances chosen and the test's outcome, as the command's ``--json`` has them.

    Attributes
    ----------
    method : str
        The test.
    a, b : str
        The systems compared; ``statistic`` is metric(a) - metric(b).
    instance_a, instance_b : str or None
        Each system's best instance, when instances were named and the best ones compared.
    statistic, p_value, mc_standard_error : float
        The observed difference, its p-value (r + 1)/(R + 1) and the p-value's Monte-Carlo standard error.
    n_extreme, n_resamples, n_items : int
        Resamples as extreme as the observed difference, resamples drawn, items paired.
    """

    def __init__(self, outcome: dict):
        self._outcome = outcome
        for key, value in outcome.items():
            setattr(self, key, value)

    def _problems(self) -> list[str]:
        return []

    def _payload(self) -> dict:
        return dict(self._outcome)

    def _text(self) -> str:
        r = self._outcome
        picked = "" if r.get("instance_a") is None else f" (instances {r['instance_a']} vs {r['instance_b']})"
        return (f"{r['method']}: {r['a']} vs {r['b']}{picked} on {r['n_items']} items\n"
                f"  metric(a) - metric(b) = {r['statistic']:.6g}\n"
                f"  p = {r['p_value']:.4g} (Monte-Carlo SE {r['mc_standard_error']:.2g}; "
                f"{r['n_extreme']} of {r['n_resamples']} resamples as extreme, p = (r+1)/(R+1); "
                f"{r['alternative']})")


def _pair(data, item, system, score, a, b, instance, where, categorical, drop_missing):
    """The two systems' blocks of item scores (per instance when ``instance`` names a column)."""
    from ..instruments.systems import pick_systems, system_scores
    from .reading import read_columns

    columns = [item, system, score] + ([instance] if instance is not None else [])
    frame = read_columns(data, columns, where, categorical, drop_missing)
    return pick_systems(system_scores(frame, item, system, score, instance), a, b)


def _best_instances(block_a, block_b, instance, lower_is_better):
    """Each system's best instance (by mean score) and, when instances were named, which ones were chosen."""
    name_a, scores_a = block_a.best_instance(lower_is_better)
    name_b, scores_b = block_b.best_instance(lower_is_better)
    named = instance is not None
    return scores_a, scores_b, {"instance_a": name_a if named else None, "instance_b": name_b if named else None}


def _outcome(block_a, block_b, score, lower_is_better, chosen, result) -> ResamplingTest:
    return ResamplingTest({"a": block_a.system, "b": block_b.system, "score": score,
                           "lower_is_better": lower_is_better, **chosen, **result.to_dict()})


@public
@shared_parameters
def bootstrap(data, item: str, system: str, score: str, a: str, b: str, instance: str | None = None,
              lower_is_better: bool = False, resamples: int = 10_000, seed: int | None = None,
              alternative: str = "two-sided", instances: str = "best", where: str | None = None, categorical=None,
              drop_missing: bool = False, progress: bool | None = None) -> ResamplingTest:
    """Paired bootstrap test (shift method) of two systems, or the multi-bootstrap over items and instances.

    Parameters
    ----------
    <pair>
    instance : str, optional
        Column of the trained instances (seeds) of a system.
    lower_is_better : bool, default False
        Lower scores are better (e.g. TER); picks the best instance.
    resamples : int, default 10000
        Bootstrap resamples.
    seed : int, optional
        Seed of the resampling.
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        The alternative hypothesis about metric(a) - metric(b).
    instances : {"best", "multi"}, default "best"
        With ``instance``: compare each system's best instance, or resample instances and items together.
    <rows_progress>

    Returns
    -------
    ResamplingTest
        ``to_dict()`` equals ``bayesrepro bootstrap --json``.
    """
    from ..errors import BayesreproError
    from ..instruments.resampling import multi_bootstrap_test, paired_bootstrap_test
    from ..progress import Progress

    if instances not in ("best", "multi"):
        raise BayesreproError(f"--instances must be 'best' or 'multi', not {instances!r}")
    if instances == "multi" and instance is None:
        raise BayesreproError("--instances multi needs --instance naming the column of trained instances")
    block_a, block_b = _pair(data, item, system, score, a, b, instance, where, categorical, drop_missing)
    with Progress("bootstrap", enabled=progress) as bar:
        if instances == "multi":
            result = multi_bootstrap_test(block_a.scores, block_b.scores, n_resamples=resamples, seed=seed,
                                          alternative=alternative, progress=bar.update)
            chosen = {"instance_a": None, "instance_b": None,
                      "n_instances_a": len(block_a.instances), "n_instances_b": len(block_b.instances)}
        else:
            scores_a, scores_b, chosen = _best_instances(block_a, block_b, instance, lower_is_better)
            result = paired_bootstrap_test(scores_a, scores_b, n_resamples=resamples, seed=seed,
                                           alternative=alternative, progress=bar.update)
    return _outcome(block_a, block_b, score, lower_is_better, chosen, result)


@public
@shared_parameters
def permutation(data, item: str, system: str, score: str, a: str, b: str, instance: str | None = None,
                lower_is_better: bool = False, resamples: int = 10_000, seed: int | None = None,
                alternative: str = "two-sided", where: str | None = None, categorical=None, drop_missing: bool = False,
                progress: bool | None = None) -> ResamplingTest:
    """Approximate randomization (permutation) test of two systems, each represented by its best instance.

    Parameters
    ----------
    <pair>
    instance : str, optional
        Column of the trained instances (seeds) of a system; each system's best instance is compared.
    lower_is_better : bool, default False
        Lower scores are better (e.g. TER); picks the best instance.
    resamples : int, default 10000
        Random swaps of the pairs.
    seed : int, optional
        Seed of the swaps.
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        The alternative hypothesis about metric(a) - metric(b).
    <rows_progress>

    Returns
    -------
    ResamplingTest
        The test of each system's best instance; ``to_dict()`` equals ``bayesrepro permutation --json``.
    """
    from ..instruments.resampling import permutation_test
    from ..progress import Progress

    block_a, block_b = _pair(data, item, system, score, a, b, instance, where, categorical, drop_missing)
    scores_a, scores_b, chosen = _best_instances(block_a, block_b, instance, lower_is_better)
    with Progress("permutation", enabled=progress) as bar:
        result = permutation_test(scores_a, scores_b, n_resamples=resamples, seed=seed, alternative=alternative,
                                  progress=bar.update)
    return _outcome(block_a, block_b, score, lower_is_better, chosen, result)
