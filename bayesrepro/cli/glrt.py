"""`bayesrepro glrt`: likelihood-ratio test of two nested models."""

from __future__ import annotations

from .common import add_data_options, convergence_status, formula_of, print_json, read_rows

HELP = ("generalized likelihood-ratio test of two nested LMMs, both fitted by ML "
        "(a single variance component is tested against the 50:50 boundary mixture)")


def register(subparsers) -> None:
    parser = subparsers.add_parser("glrt", help=HELP, description=HELP)
    add_data_options(parser)
    parser.add_argument("--h0", required=True, help="the smaller model, e.g. 'ter ~ 1 + (1|sentence_id)'")
    parser.add_argument("--h1", required=True, help="the larger model, e.g. 'ter ~ system + (1|sentence_id)'")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..frequentist import glrt

    formula_of(args.h0, "--h0")
    formula_of(args.h1, "--h1")
    result = glrt(args.h0, args.h1, read_rows(args), drop_missing=args.drop_missing)
    if args.json:
        print_json(result.to_dict())
    else:
        print(result)
    return convergence_status([f"the ML fit of {name} did not converge ({fit.message})"
                               for name, fit in (("H0", result.h0), ("H1", result.h1)) if not fit.converged])
