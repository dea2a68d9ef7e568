"""`bayesrepro bootstrap`: paired bootstrap (or multi-bootstrap) test of two systems."""

from __future__ import annotations

from .. import limits
from ..errors import BayesreproError
from .common import add_count, add_data_options, add_seed, print_json, read_rows

HELP = "paired bootstrap test (shift method) of two systems scored on the same items"


def register(subparsers) -> None:
    parser = subparsers.add_parser("bootstrap", help=HELP, description=HELP)
    add_comparison_arguments(parser)
    parser.add_argument("--instances", choices=("best", "multi"), default="best",
                        help="with --instance: compare each system's best instance (default) or "
                             "resample instances and items together (multi-bootstrap)")
    parser.set_defaults(func=run)


def add_comparison_arguments(parser) -> None:
    """Arguments shared by the bootstrap and permutation commands."""
    add_data_options(parser, progress=True)
    parser.add_argument("--item", required=True, help="column identifying the evaluation item")
    parser.add_argument("--system", required=True, help="column identifying the system")
    parser.add_argument("--score", required=True, help="column with the per-item score")
    parser.add_argument("--a", required=True, help="first system (statistic = metric(a) - metric(b))")
    parser.add_argument("--b", required=True, help="second system")
    parser.add_argument("--instance", help="column identifying trained instances (seeds) of a system")
    parser.add_argument("--lower-is-better", action="store_true",
                        help="lower scores are better (e.g. TER); used to pick the best instance")
    add_count(parser, limits.RESAMPLES, 10_000, "number of resamples; resamples x items at most 2,000,000,000, "
                                               "which take a few minutes")
    add_seed(parser, None)
    parser.add_argument("--alternative", choices=("two-sided", "greater", "less"), default="two-sided",
                        help="the alternative hypothesis about metric(a) - metric(b) (default two-sided)")


def select_pair(args):
    """The two systems' item scores (best instances) plus a description of the choice."""
    from ..instruments.systems import pick_systems, system_scores

    columns = [args.item, args.system, args.score] + ([args.instance] if args.instance is not None else [])
    frame = read_rows(args, columns)
    blocks = system_scores(frame, args.item, args.system, args.score, args.instance)
    a, b = pick_systems(blocks, args.a, args.b)
    return a, b


def best_instances(args, a, b):
    """Each system's best instance (by mean score), and which ones were chosen when instances exist."""
    name_a, scores_a = a.best_instance(args.lower_is_better)
    name_b, scores_b = b.best_instance(args.lower_is_better)
    chosen = {"instance_a": name_a, "instance_b": name_b} if args.instance is not None else {"instance_a": None, "instance_b": None}
    return scores_a, scores_b, chosen


def describe(args, a, b, chosen: dict) -> dict:
    return {"a": a.system, "b": b.system, "score": args.score, "lower_is_better": args.lower_is_better,
            **chosen}


def report(result_dict: dict, as_json: bool) -> None:
    if as_json:
        print_json(result_dict)
        return
    r = result_dict
    picked = ""
    if r.get("instance_a") is not None:
        picked = f" (instances {r['instance_a']} vs {r['instance_b']})"
    print(f"{r['method']}: {r['a']} vs {r['b']}{picked} on {r['n_items']} items")
    print(f"  metric(a) - metric(b) = {r['statistic']:.6g}")
    print(f"  p = {r['p_value']:.4g} (Monte-Carlo SE {r['mc_standard_error']:.2g}; "
          f"{r['n_extreme']} of {r['n_resamples']} resamples as extreme, p = (r+1)/(R+1); "
          f"{r['alternative']})")


def run(args) -> int:
    from ..instruments.resampling import multi_bootstrap_test, paired_bootstrap_test

    if args.instances == "multi" and args.instance is None:
        raise BayesreproError("--instances multi needs --instance naming the column of trained instances")
    a, b = select_pair(args)
    with progress_bar(args, "bootstrap") as bar:
        if args.instances == "multi":
            result = multi_bootstrap_test(a.scores, b.scores, n_resamples=args.resamples, seed=args.seed,
                                          alternative=args.alternative, progress=bar.update)
            chosen = {"instance_a": None, "instance_b": None,
                      "n_instances_a": len(a.instances), "n_instances_b": len(b.instances)}
        else:
            scores_a, scores_b, chosen = best_instances(args, a, b)
            result = paired_bootstrap_test(scores_a, scores_b, n_resamples=args.resamples, seed=args.seed,
                                           alternative=args.alternative, progress=bar.update)
    report({**describe(args, a, b, chosen), **result.to_dict()}, args.json)
    return 0


def progress_bar(args, label: str):
    """Progress on stderr when asked for with --progress, or when stderr is a terminal."""
    from ..progress import Progress

    return Progress(label, enabled=True if args.progress else None)
