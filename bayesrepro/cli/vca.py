"""`bayesrepro vca`: variance component analysis and the reliability coefficient φ."""

from __future__ import annotations

from .. import limits
from .common import (add_count, add_data_options, add_family_options, add_formula_options, convergence_status,
                     model_of, print_json)

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
    fit = model_of(args, args.formula, args.object).fit(args.method, args.nagq)
    if args.json:
        print_json(fit.to_dict())
    else:
        print(fit.summary())
    return convergence_status(fit.not_converged())
