"""`bayesrepro budget`: expected best score among B configurations of a grid."""

from __future__ import annotations

from .. import limits
from .common import add_count, add_data_options, add_seed, print_json, read_rows

HELP = "expected best score under a budget of B configurations (closed form and bootstrap)"


def register(subparsers) -> None:
    parser = subparsers.add_parser("budget", help=HELP, description=HELP)
    add_data_options(parser, progress=True)
    parser.add_argument("--score", required=True, help="column with the score")
    parser.add_argument("--config", required=True, nargs="+", metavar="COL",
                        help="column(s) whose combination identifies a configuration; "
                             "its rows are averaged into one score")
    parser.add_argument("--lower-is-better", action="store_true", help="lower scores are better (e.g. TER)")
    add_count(parser, limits.BUDGETS, None, "budgets to report",
              default_text="about 25 from 1 to the number of configurations", metavar="B", nargs="+")
    parser.add_argument("--level", type=float, default=0.95, help="interval level, between 0 and 1 (default 0.95)")
    add_count(parser, limits.RESAMPLES, 2000, "bootstrap resamples per budget; resamples x the sum of the budgets at "
                                              "most 2,000,000,000")
    add_seed(parser, None)
    parser.add_argument("--plot", metavar="PATH", help="write the curve to this image file (.png, .pdf or .svg)")
    parser.set_defaults(func=run)


PLOT_SUFFIXES = (".png", ".pdf", ".svg")


def run(args) -> int:
    from ..api.budget import budget
    from ..errors import BayesreproError
    from ..output import atomic_path, check_writable

    plot = check_writable(args.plot, PLOT_SUFFIXES, option="--plot") if args.plot else None
    frame = read_rows(args, list(args.config) + [args.score])
    result = budget(frame, args.score, list(args.config), lower_is_better=args.lower_is_better, budgets=args.budgets,
                    level=args.level, resamples=args.resamples, seed=args.seed,
                    progress=True if args.progress else None)
    if plot is not None:
        import matplotlib.pyplot as plt

        fig = result.plot()
        try:
            with atomic_path(plot) as temporary:
                fig.savefig(temporary, format=plot.suffix.lstrip(".").lower(), dpi=120, bbox_inches="tight")
        except OSError as exc:
            raise BayesreproError(f"--plot: could not write '{plot}': {exc.strerror or exc}") from None
        finally:
            plt.close(fig)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result.summary())
    return 0
