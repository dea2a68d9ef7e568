"""`bayesrepro vca`: variance component analysis and the reliability coefficient φ."""

from __future__ import annotations

import sys

from .common import add_data_options, add_family_options, categorical_columns, print_json


def register(subparsers) -> None:
    parser = subparsers.add_parser("vca", help="variance components (REML/ML, or a binary GLMM by ML) and reliability phi")
    add_data_options(parser)
    parser.add_argument("--formula", required=True, help="e.g. 'ter ~ 1 + (1|sentence_id) + (1|seed)'")
    parser.add_argument("--object", help="object of measurement (default: the grouping factor with most levels)")
    parser.add_argument("--method", choices=("reml", "ml"),
                        help="reml (default) or ml for Gaussian scores; binary models are always fitted by ML")
    add_family_options(parser)
    parser.add_argument("--nagq", type=int, default=1,
                        help="binary models with one grouping factor: adaptive Gauss-Hermite nodes (default 1, Laplace)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..data import read_table
    from ..design import build_model_frame, resolve_family
    from ..errors import BayesreproError
    from ..reliability import default_object, koo_li_label, phi, vca_table

    data = read_table(args.data, where=args.where, categorical=categorical_columns(args))
    frame = build_model_frame(args.formula, data, drop_missing=args.drop_missing)
    family = resolve_family(frame, args.family, args.link)
    if family.binary:
        from ..frequentist.glmm import fit_glmm_frame

        if args.method == "reml":
            raise BayesreproError("--method reml applies to Gaussian scores; a binary model is fitted by ML: drop --method")
        fit = fit_glmm_frame(frame, family, args.nagq)
        variances = fit.latent_variances
    else:
        from ..frequentist.lmm import fit_model_frame

        if args.nagq != 1:
            raise BayesreproError("--nagq applies to binary scores; Gaussian models are fitted exactly: drop --nagq")
        fit = fit_model_frame(frame, args.method or "reml")
        variances = fit.variances
    object_name = args.object or default_object(variances, fit.n_levels)
    reliability = float(phi(variances, object_name))
    table = vca_table(variances, object_name)
    observed = fit.phi(object_name)["observed"] if family.binary else None
    if args.json:
        payload = {
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
            "family": family.name,
            "link": family.link,
            "scale": family.scale,
        }
        if family.binary:
            payload.update(phi_observed=observed, approximation=fit.approximation, n_cells=fit.n_cells)
        print_json(payload)
    else:
        print(fit)
        if family.binary:
            print(f"phi ({object_name}, latent {family.link} scale) = {reliability:.4f}: {koo_li_label(reliability)} "
                  f"(Koo & Li); on the observation scale (0/1 scores) = {observed:.4f}")
        else:
            print(f"phi ({object_name}) = {reliability:.4f}: {koo_li_label(reliability)} (Koo & Li)")
    if not fit.converged:
        print(f"bayesrepro: warning: the {fit.method.upper()} fit did not converge: {fit.message}", file=sys.stderr)
        return 1
    return 0
