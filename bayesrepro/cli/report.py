"""`bayesrepro report`: one self-contained HTML report of a named analysis spec."""

from __future__ import annotations

from .common import add_data_options, add_side_by_side_options, categorical_columns, print_json


def register(subparsers) -> None:
    parser = subparsers.add_parser("report", help="HTML report of a named spec: both engines, figures, provenance")
    add_data_options(parser)
    parser.add_argument("--spec", required=True, help="spec name in models/ (e.g. system_comparison) or a .toml path")
    parser.add_argument("--out", required=True, help="HTML file to write, e.g. report.html")
    parser.add_argument("--column", action="append", default=[], metavar="PARAMETER=COLUMN",
                        help="use another column for a spec parameter, e.g. --column score=bleu (repeatable)")
    add_side_by_side_options(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..bayes.sampling import SamplingSettings
    from ..errors import BayesreproError
    from ..report import ReportOptions, write_report
    from ..specs import parse_column_options

    if args.drop_missing:
        raise BayesreproError("--drop-missing is not available for reports; filter the rows with --where instead")
    sampling = SamplingSettings(draws=args.draws, tune=args.tune, chains=args.chains, seed=args.seed,
                                allow_unconverged=args.allow_unconverged)
    options = ReportOptions(n_boot=args.bootstrap, sampling=sampling)
    summary = write_report(args.data, args.spec, args.out, columns=parse_column_options(args.column),
                           where=args.where, categorical=categorical_columns(args), options=options)
    if args.json:
        print_json(summary)
    else:
        print(f"wrote {summary['out']} ({summary['n_rows']} rows, sha256 {summary['sha256'][:12]}...)")
        for level, flags in summary["flags"].items():
            for flag in flags:
                print(f"{level}: {flag}")
    return 0
