"""`bayesrepro report`: one self-contained HTML report of a named analysis spec."""

from __future__ import annotations

from .common import add_data_options, add_side_by_side_options, categorical_columns, convergence_status, print_json

HELP = ("one self-contained HTML report of a named analysis spec: both engines' tables and figures, formulas, "
        "priors, diagnostics, package versions and the input's hash")


def register(subparsers) -> None:
    parser = subparsers.add_parser("report", help=HELP, description=HELP)
    # no --drop-missing: a report documents every row its filter keeps; select rows with --where
    add_data_options(parser, drop_missing=False, engines=True)
    parser.add_argument("--spec", required=True, help="spec name in models/ (e.g. system_comparison) or a .toml path")
    parser.add_argument("--out", required=True,
                        help="HTML file to write, e.g. report.html; replaced only once the report is complete")
    parser.add_argument("--column", action="append", default=[], metavar="PARAMETER=COLUMN",
                        help="use another column for a spec parameter, e.g. --column score=bleu (repeatable)")
    add_side_by_side_options(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..report import ReportOptions, write_report
    from ..specs import load_spec, parse_column_options
    from .common import sampling_settings

    spec = load_spec(args.spec, **parse_column_options(args.column))
    options = ReportOptions(n_boot=args.bootstrap, sampling=sampling_settings(args, progress=args.progress or None),
                            prob=args.prob)
    report = write_report(args.data, spec, args.out, where=args.where, categorical=categorical_columns(args),
                          options=options, engine=args.engine, spark_master=args.spark_master,
                          progress=args.progress or None, max_memory=args.max_memory)
    if args.json:
        print_json(report.to_dict())
    else:
        print(report.summary())
    return convergence_status(report.not_converged())
