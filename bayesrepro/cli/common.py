"""Options, data reading and output shared by the subcommands.

Every option is checked before the data are read or anything is fitted: a
mistake in an option must cost the user seconds, not the minutes of an analysis.
"""

from __future__ import annotations

import argparse
import json
import re
import sys

from .. import limits
from ..errors import EXIT_NOT_CONVERGED, EXIT_OK, BayesreproError


def counted(limit: limits.Count):
    """An argparse type for a count option: its value, or one line naming the option and its range."""
    def parse(text: str) -> int:
        try:
            return limit.check(text)
        except BayesreproError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    parse.limit = limit
    return parse


def add_count(parser, limit: limits.Count, default, help: str, default_text: str | None = None,
              metavar: str = "N", **kwargs) -> None:
    """A count option whose help states its range and default; out-of-range values are refused while parsing."""
    shown = default_text or (f"{default:,}" if isinstance(default, int) else str(default))
    parser.add_argument(limit.option, type=counted(limit), default=default, metavar=metavar,
                        help=f"{help} ({limit.range}; default {shown})", **kwargs)


def add_seed(parser, default: int | None, what: str = "the random numbers") -> None:
    add_count(parser, limits.SEED, default, f"seed of {what}; the same seed gives the same numbers",
              default_text=None if default is not None else "a fresh seed each run", metavar="S")


def add_data_options(parser, drop_missing: bool = True, engines: bool = False, progress: bool = False) -> None:
    """DATA and the options that select and read its rows; ``engines`` adds --engine and --spark-master,
    ``progress`` (or ``engines``: scans take long) adds --progress."""
    parser.add_argument("data", help="CSV/TSV (optionally .gz), Parquet or JSON Lines file, harness logs "
                        "(lm-eval:PATH, inspect:PATH), or a bundled dataset name")
    parser.add_argument("--where", metavar="EXPR",
                        help="condition selecting rows, e.g. \"mode == 'Marking'\" (the user guide's page "
                             "\"Your data\" describes the language)")
    parser.add_argument("--categorical", default="", metavar="COL,COL",
                        help="comma-separated columns to treat as categories")
    if drop_missing:
        parser.add_argument("--drop-missing", action="store_true",
                            help="drop rows with missing values in the columns used instead of failing")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    if engines:
        parser.add_argument("--engine", default="auto", choices=("auto", "memory", "duckdb", "spark"),
                            help="what sums the data: memory; duckdb (files and globs, out of core); spark; "
                                 "auto (default): duckdb for globs, directories and files that would take over 512 MB in "
                                 "memory, memory otherwise")
        parser.add_argument("--spark-master", metavar="URL", type=spark_master,
                            help="Spark master for --engine spark: local, local[N], local[*], spark://HOST:PORT, yarn "
                                 "or k8s://URL (default local[*])")
    if engines:
        parser.add_argument("--max-memory", type=memory_size, metavar="SIZE",
                            help="largest dense block a fit may build, e.g. 4G or 500M (default: half of the "
                                 "machine's memory); a design needing more is refused before any work")
    if engines or progress:
        parser.add_argument("--progress", action="store_true",
                            help="show the progress of long work (scans, sampling, bootstrap) on stderr (shown anyway "
                                 "when stderr is a terminal)")


def memory_size(text: str) -> int:
    """An argparse type: a size such as 4G or 500M, in bytes."""
    from ..design.memory_estimate import parse_memory

    try:
        return parse_memory(text)
    except BayesreproError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


SPARK_MASTER = re.compile(r"local(\[(\*|[1-9][0-9]*)\])?|(spark|k8s|mesos)://\S+|yarn")


def spark_master(text: str) -> str:
    """An argparse type: a master URL Spark accepts (anything else ends its JVM before a word is said)."""
    if not SPARK_MASTER.fullmatch(text):
        raise argparse.ArgumentTypeError(f"--spark-master must be local, local[N], local[*], spark://HOST:PORT, yarn "
                                         f"or k8s://URL, not {text!r}")
    return text


def model_of(args, formula: str, object: str | None = None):
    """The ``Model`` of ``formula`` over the command's data, read as its options say."""
    from ..api.model import Model

    return Model(formula, args.data, family=getattr(args, "family", "auto"), object=object, engine=args.engine,
                 categorical=categorical_columns(args), where=args.where, drop_missing=args.drop_missing,
                 link=getattr(args, "link", None), spark_master=args.spark_master, progress=args.progress or None,
                 max_memory=getattr(args, "max_memory", None))


def add_formula_options(parser, object_help: str = "object of measurement of phi") -> None:
    parser.add_argument("--formula", required=True, help="e.g. 'ter ~ system + (1|sentence_id)'")
    parser.add_argument("--object", metavar="FACTOR",
                        help=f"{object_help} (default: the single grouping factor with most levels)")


def add_sampling_options(parser, seed_default: int | None) -> None:
    """The sampler's settings, checked by ``SamplingSettings`` before any work (``sampling_settings``)."""
    add_count(parser, limits.DRAWS, 1000, "posterior draws per chain")
    add_count(parser, limits.TUNE, 1000, "tuning steps per chain")
    add_count(parser, limits.CHAINS, 4, f"NUTS chains; chains x (tune + draws) at most {limits.MAX_NUTS_STEPS:,}")
    add_seed(parser, seed_default, "the sampler")
    parser.add_argument("--allow-unconverged", action="store_true",
                        help="report the draws even if R-hat/ESS/divergences say the sampler did not converge "
                             "(the exit status is still 3)")
    parser.add_argument("--prob", type=float, default=0.95,
                        help="probability of every interval the Bayesian and bootstrap columns show (default 0.95)")
    parser.add_argument("--target-accept", type=float, default=0.95,
                        help="NUTS's target acceptance rate, in [0.5, 1) (default 0.95): higher (0.99) for a posterior "
                             "with a funnel, a component near zero, at the cost of smaller steps")


def add_family_options(parser) -> None:
    """--family and --link: how the scores are modelled (resolved by design.resolve_family)."""
    parser.add_argument("--family", default="auto", choices=("auto", "gaussian", "bernoulli", "binomial"),
                        help="auto (default): Bernoulli for 0/1 scores, binomial for p(successes, trials), Gaussian "
                             "otherwise; gaussian on 0/1 scores fits a linear probability model")
    parser.add_argument("--link", choices=("logit", "probit"), help="link of a binary model (default logit)")


def add_side_by_side_options(parser) -> None:
    """Settings of the REML bootstrap and of the sampler, for commands that run both engines."""
    from ..choices import DEFAULT_BOOTSTRAP

    add_count(parser, limits.BOOTSTRAP, DEFAULT_BOOTSTRAP, "parametric bootstrap replicates")
    add_sampling_options(parser, seed_default=0)


def sampling_settings(args, **extra):
    """The sampler's settings from the options, refused in one line if out of range; checks --prob too."""
    from ..bayes.posterior import check_probability
    from ..bayes.sampling import SamplingSettings

    check_probability(args.prob)
    return SamplingSettings(draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed,
                            allow_unconverged=args.allow_unconverged, target_accept=args.target_accept, **extra)


def categorical_columns(args) -> list[str]:
    return [c.strip() for c in args.categorical.split(",") if c.strip()]


def read_rows(args, columns=()):
    """The data with the --where filter and --categorical applied; the ``columns`` a command uses must exist,
    and their missing values are refused or, with --drop-missing, dropped with a note on stderr.

    Formula commands build a ``Model`` instead (``model_of``), whose frame knows its columns.
    """
    from ..data import read_table, remove_missing, require_columns

    frame = read_table(args.data, where=args.where, categorical=categorical_columns(args))
    if columns:
        require_columns(frame, columns, "column")
        frame, note = remove_missing(frame, list(columns), args.drop_missing)
        if note:
            print(f"bayesrepro: {note}", file=sys.stderr)
    return frame


def convergence_status(problems: list[str]) -> int:
    """Exit status of a finished analysis: 0, or 3 with one warning line naming what did not converge."""
    if not problems:
        return EXIT_OK
    print(f"bayesrepro: warning: {'; '.join(problems)}; the results above are not to be trusted "
          f"(exit status {EXIT_NOT_CONVERGED})", file=sys.stderr)
    return EXIT_NOT_CONVERGED


def print_json(payload) -> None:
    from ..api.display import json_ready

    print(json.dumps(json_ready(payload), indent=None))
