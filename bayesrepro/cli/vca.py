"""`bayesrepro vca`: variance component analysis and the reliability coefficient φ."""

from __future__ import annotations

from .. import limits
from .common import (add_count, add_data_options, add_family_options, add_formula_options, convergence_status,
                     formula_of, frame_of, print_json)

HELP = ("variance components (REML/ML, or a binary GLMM by ML), their percent of the total, and reliability phi "
        "with its Koo & Li label")


def register(subparsers) -> None:
    parser = subparsers.add_parser("vca", help=HELP, description=HELP)
    add_data_options(parser, engines=True)
    add_formula_options(parser)
    parser.add_argument("--method", choices=("reml", "ml"),
                        help="reml (default): restricted maximum likelihood; ml: maximum likelihood "
                             "(Gaussian scores; binary models are always fitted by ML)")
    add_family_options(parser)
    add_count(parser, limits.NAGQ, 1, "binary models with one grouping factor: adaptive Gauss-Hermite nodes per "
                                       "level (1: the Laplace approximation)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..design import resolve_family
    from ..errors import BayesreproError
    from ..reliability import koo_li_label, object_of_measurement, phi, vca_table

    from ..frequentist.quadrature import check_nodes

    spec = formula_of(args.formula, object=args.object, slopes=True)
    check_nodes(args.nagq, len(spec.group_names))
    frame = frame_of(args, spec)
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
    choice = object_of_measurement(fit.n_levels, args.object)
    object_name = choice.name
    notes = fit.notes + ([choice.note] if choice.note else [])
    reliability = float(phi(variances, object_name))
    label = koo_li_label(reliability)
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
            "koo_li_label": label,
            "object": object_name,
            "loglik": fit.loglik,
            "reml_criterion": fit.reml_criterion,
            "converged": fit.converged,
            "boundary": fit.boundary,
            "notes": notes,
            "family": family.name,
            "link": family.link,
            "scale": family.scale,
        }
        if family.binary:
            payload.update(phi_observed=observed, approximation=fit.approximation, n_cells=fit.n_cells)
        else:
            payload["random_effects"] = fit.varcorr()
        print_json(payload)
    else:
        print(fit)
        if family.binary:
            print(f"phi ({object_name}, latent {family.link} scale) = {reliability:.4f}: {label} "
                  f"(Koo & Li); on the observation scale (0/1 scores) = {observed:.4f}")
        else:
            print(f"phi ({object_name}) = {reliability:.4f}: {label} (Koo & Li)")
        if choice.note:
            print(f"note: {choice.note}")
    return convergence_status([] if fit.converged else
                              [f"the {fit.method.upper()} fit did not converge ({fit.message})"])
