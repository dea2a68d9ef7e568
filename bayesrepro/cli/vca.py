"""`bayesrepro vca`: variance component analysis and the reliability coefficient φ."""

from __future__ import annotations

import sys

from .common import add_data_options, categorical_columns, print_json


def register(subparsers) -> None:
    parser = subparsers.add_parser("vca", help="variance components (REML/ML) and reliability phi")
    add_data_options(parser)
    parser.add_argument("--formula", required=True, help="e.g. 'ter ~ 1 + (1|sentence_id) + (1|seed)'")
    parser.add_argument("--object", help="object of measurement (default: the grouping factor with most levels)")
    parser.add_argument("--method", default="reml", choices=("reml", "ml"))
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..data import read_table
    from ..frequentist import fit_lmm
    from ..reliability import koo_li_label, phi, vca_table
    from ..reliability import default_object

    data = read_table(args.data, where=args.where, categorical=categorical_columns(args))
    fit = fit_lmm(args.formula, data, method=args.method, drop_missing=args.drop_missing)
    object_name = args.object or default_object(fit.variances, fit.n_levels)
    reliability = float(phi(fit.variances, object_name))
    table = vca_table(fit.variances, object_name)
    if args.json:
        print_json(
            {
                "method": fit.method,
                "n_obs": fit.n_obs,
                "components": [
                    {"name": name, "variance": float(row.variance), "percent": float(row.percent)}
                    for name, row in table.iterrows()
                ],
                "phi": reliability,
                "object": object_name,
                "loglik": fit.loglik,
                "reml_criterion": fit.reml_criterion,
                "converged": fit.converged,
                "boundary": fit.boundary,
                "notes": fit.notes,
            }
        )
    else:
        print(fit)
        print(f"phi ({object_name}) = {reliability:.4f}: {koo_li_label(reliability)} (Koo & Li)")
    if not fit.converged:
        print(f"bayesrepro: warning: the {fit.method.upper()} fit did not converge: {fit.message}", file=sys.stderr)
        return 1
    return 0
