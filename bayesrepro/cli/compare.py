"""`bayesrepro compare`: the frequentist and the Bayesian answer to one formula, side by side."""

from __future__ import annotations

from .common import (add_data_options, add_family_options, add_formula_options, add_side_by_side_options,
                     convergence_status, formula_of, frame_of, print_json, sampling_settings)

HELP = ("REML (for 0/1 scores: the binary GLMM by ML) with parametric-bootstrap intervals next to the posterior, "
        "contrasts with p next to the probability of direction and LOO; where the two engines disagree, a sentence says so")


def register(subparsers) -> None:
    parser = subparsers.add_parser("compare", help=HELP, description=HELP)
    add_data_options(parser, engines=True)
    add_formula_options(parser)
    parser.add_argument("--factor", help="categorical fixed effect whose levels are compared (default: the first one)")
    parser.add_argument("--by", help="data property the factor interacts with (default: read from the formula)")
    parser.add_argument("--h0", help="null model of the omnibus GLRT (default: the formula without the factor's terms)")
    add_family_options(parser)
    add_side_by_side_options(parser)
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..compare import check_bootstrap, compare

    spec = formula_of(args.formula, object=args.object)
    if args.h0 is not None:
        formula_of(args.h0, "--h0")
    check_bootstrap(args.bootstrap)
    settings = sampling_settings(args, progress=args.progress or None)
    frame = frame_of(args, spec)
    result = compare(frame, object=args.object, factor=args.factor, by=args.by, h0=args.h0,
                     n_boot=args.bootstrap, prob=args.prob, sampling=settings, family=args.family, link=args.link)
    planning = _planning(args, frame, result)
    if args.json:
        print_json({**result.to_dict(), **({"planning": planning.to_dict()} if planning else {})})
    else:
        print(result if planning is None else f"{result}\n\n{planning}")
    return convergence_status(result.not_converged())


def _planning(args, frame, result):
    """The next evaluation of the closest pair of levels (``plan.next_evaluation``); None without a factor."""
    from ..plan.next_evaluation import next_evaluation

    if result.means is None or result.by is not None:
        return None
    return next_evaluation(args.formula, frame, result.factor, result.means, result.object, result.method != "REML")
