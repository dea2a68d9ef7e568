"""Options and output shared by the subcommands."""

from __future__ import annotations

import json
import math


def add_data_options(parser) -> None:
    parser.add_argument("data", help="CSV/TSV (optionally .gz), Parquet or JSON Lines file, harness logs "
                        "(lm-eval:PATH, inspect:PATH), or a bundled dataset name")
    parser.add_argument("--where", help="condition selecting rows (comparisons, in, and/or/not; see README), e.g. \"mode == 'Marking'\"")
    parser.add_argument("--categorical", default="", help="comma-separated columns to treat as categories")
    parser.add_argument("--drop-missing", action="store_true", help="drop rows with missing values instead of failing")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")


def add_family_options(parser) -> None:
    """--family and --link: how the scores are modelled (resolved by design.resolve_family)."""
    parser.add_argument("--family", default="auto", choices=("auto", "gaussian", "bernoulli", "binomial"),
                        help="auto (default): Bernoulli for 0/1 scores, binomial for p(successes, trials), Gaussian "
                             "otherwise; gaussian on 0/1 scores fits a linear probability model")
    parser.add_argument("--link", choices=("logit", "probit"), help="link of a binary model (default logit)")


def add_side_by_side_options(parser) -> None:
    """Settings of the REML bootstrap and of the sampler, for commands that run both engines."""
    parser.add_argument("--bootstrap", type=int, default=300, help="parametric bootstrap replicates (default 300)")
    parser.add_argument("--draws", type=int, default=1000, help="posterior draws per chain (default 1000)")
    parser.add_argument("--tune", type=int, default=1000, help="tuning steps per chain (default 1000)")
    parser.add_argument("--chains", type=int, default=4, help="NUTS chains (default 4)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the bootstrap and the sampler (default 0)")
    parser.add_argument("--allow-unconverged", action="store_true", help="keep posterior draws that fail the diagnostics")


def categorical_columns(args) -> list[str]:
    return [c.strip() for c in args.categorical.split(",") if c.strip()]


def print_json(payload) -> None:
    print(json.dumps(_finite(payload), indent=None))


def _finite(value):
    """JSON has no NaN/inf: write them as null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value
