"""`bayesrepro import`: harness logs (lm-evaluation-harness, Inspect AI) into one long table."""

from __future__ import annotations

from .common import print_json

HARNESS_HELP = {
    "lm-eval": "lm-evaluation-harness: results_<date>.json beside samples_<task>_<date>.jsonl (--log_samples)",
    "inspect": "Inspect AI: .eval archives or .json logs",
}


def register(subparsers) -> None:
    summary = "harness logs (lm-eval, Inspect) into one long table: one row per run, task and item"
    parser = subparsers.add_parser("import", help=summary, description=summary)
    parser.add_argument("harness", choices=list(HARNESS_HELP), help="; ".join(f"{k}: {v}" for k, v in HARNESS_HELP.items()))
    parser.add_argument("paths", nargs="+", metavar="PATH", help="log files, or directories searched recursively")
    parser.add_argument("--out", required=True, help="the table to write: .parquet or .csv")
    parser.add_argument("--metric", action="append", default=[],
                        help="import only this metric (repeat, or separate with commas); default: every metric")
    parser.add_argument("--strict", action="store_true",
                        help="fail on runs that did not finish and on samples that ended in an error instead of skipping them")
    parser.add_argument("--replications", action="store_true",
                        help="keep runs of a task with the same model, arguments and settings (refused by default), "
                             "numbered 1, 2, ... in the order they started in a column 'replication'")
    parser.add_argument("--drop-infinite", action="store_true",
                        help="leave out samples with an infinite score (counted in the summary) instead of refusing "
                             "the logs")
    parser.add_argument("--json", action="store_true",
                        help="print a JSON summary: rows, runs, items, tasks, metrics, skipped files, and the checks of "
                             "each run's means against the harness's own aggregates")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..harness import import_logs

    metrics = [name.strip() for option in args.metric for name in option.split(",") if name.strip()]
    summary = import_logs(args.harness, args.paths, args.out, metrics=metrics or None, strict=args.strict,
                          replications=args.replications, drop_infinite=args.drop_infinite)
    if args.json:
        print_json(summary.to_dict())
    else:
        print(summary.summary())
    return 0
