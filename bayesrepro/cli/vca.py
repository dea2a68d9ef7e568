"""`bayesrepro vca`: variance component analysis and the reliability coefficient φ."""

from __future__ import annotations

from .common import add_data_options, add_formula_options, convergence_status, formula_of, print_json, read_rows

HELP = "variance components (REML/ML), their percent of the total, and reliability phi with its Koo & Li label"


def register(subparsers) -> None:
    parser = subparsers.add_parser("vca", help=HELP, description=HELP)
    add_data_options(parser)
    add_formula_options(parser)
    parser.add_argument("--method", default="reml", choices=("reml", "ml"),
                        help="reml (default): restricted maximum likelihood; ml: maximum likelihood")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..frequentist import fit_lmm
    from ..reliability import default_object, koo_li_label, phi, vca_table

    formula_of(args.formula, object=args.object)
    fit = fit_lmm(args.formula, read_rows(args), method=args.method, drop_missing=args.drop_missing)
    object_name = args.object or default_object(fit.variances, fit.n_levels)
    reliability = float(phi(fit.variances, object_name))
    label = koo_li_label(reliability)
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
                "koo_li_label": label,
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
        print(f"phi ({object_name}) = {reliability:.4f}: {label} (Koo & Li)")
    return convergence_status([] if fit.converged else
                              [f"the {fit.method.upper()} fit did not converge ({fit.message})"])
