"""`bayesrepro plan`: power per planned size, and the cheapest allocation of items, seeds and other facets."""

from __future__ import annotations

import os

from .. import limits
from .common import add_count, add_data_options, add_family_options, add_seed, convergence_status, model_of, print_json

HELP = "power of the next evaluation per number of items, seeds, ...; the cheapest allocation for a target"
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")
CRITERIA = ("power", "phi")


def register(subparsers) -> None:
    parser = subparsers.add_parser("plan", help=HELP, description=HELP + (
        ". Facets are the columns of the formula's (1|g) terms; a facet nested in the compared factor (seeds of "
        "each system) is counted per level of it: seed=5 means five seeds for each system."))
    add_data_options(parser, engines=True)
    parser.add_argument("--formula", required=True, help="the pilot's model, e.g. 'ter ~ system + (1|item) + (1|system:seed)'")
    parser.add_argument("--contrast", help="FACTOR=B-A, the comparison to plan for, e.g. system=Marking-Baseline "
                                           "(write ' - ' between levels that hold '-')")
    parser.add_argument("--effect", help="true B - A to detect, on the score scale (binary GLMM: the link scale; "
                                         "default: the pilot's estimate)")
    parser.add_argument("--vary", action="append", default=[], metavar="FACET=N,N,...",
                        help=f"counts of a facet to try, e.g. item=100,400,1600 (repeatable; every combination is a "
                             f"row): each from 1 to {limits.PLANNED_COUNT:,}, at most {limits.MAX_DESIGNS:,} rows")
    add_count(parser, limits.REPLICATES, 1, "scores per cell of the planned design (for p(successes, trials): "
              "trials per cell)")
    add_count(parser, limits.SIMULATIONS, 500,
              f"simulated data sets per design (0: closed form only); simulations x designs at most "
              f"{limits.MAX_SIMULATED_FITS:,}")
    add_seed(parser, 0, "the simulation and of --assurance's sampler")
    add_count(parser, limits.WORKERS, min(2, os.cpu_count() or 1), "processes the simulation runs in",
              default_text="2, or the number of cores if fewer")
    add_family_options(parser)
    parser.add_argument("--alpha", default="0.05", help="level of the test (default 0.05)")
    parser.add_argument("--test", default="auto", help="auto (default: kenward-roger where fewer than 50 levels carry "
                                                       "the contrast, as glrt; else wald), wald (REML Wald z), "
                                                       "kenward-roger (REML t), lrt (GLRT of ML fits)")
    parser.add_argument("--cost", help="cost per level, e.g. item=1,system:seed=200 ('a:b' per combination, "
                                       "'observation' per score); with --vary alone it adds a cost column")
    parser.add_argument("--budget", help="largest total cost: report the most powerful (or most reliable) allocation")
    parser.add_argument("--target-power", help="the cheapest allocation with at least this power")
    parser.add_argument("--target-phi", help="the cheapest allocation whose D-study phi reaches this")
    parser.add_argument("--criterion", choices=CRITERIA,
                        help="what --budget maximises: power (default with --contrast) or phi (default without)")
    parser.add_argument("--object", help="object of measurement of phi (default: the facet with most levels)")
    parser.add_argument("--max", metavar="FACET=N,...", help="upper bounds of the allocation search (default 50; "
                                                             f"10^6 for the facet with most levels; at most "
                                                             f"{limits.PLANNED_COUNT:,})")
    parser.add_argument("--assurance", action="store_true",
                        help="also the assurance: power averaged over the pilot's posterior (samples with NUTS)")
    parser.add_argument("--rope", default="0", help="half-width of the region the interval must exclude (default 0)")
    add_count(parser, limits.DRAWS, 1000, "posterior draws per chain for --assurance")
    add_count(parser, limits.TUNE, 1000, "tuning steps per chain for --assurance")
    add_count(parser, limits.CHAINS, 4, "chains for --assurance")
    parser.add_argument("--allow-unconverged", action="store_true",
                        help="with --assurance, use the draws even if the sampler did not converge (exit status 3)")
    parser.add_argument("--assume", metavar="COMPONENT=VARIANCE,...",
                        help="variances replacing the pilot's estimates, e.g. system:seed=0.0004: plan for what the "
                             "pilot cannot rule out (latent scale for binary scores)")
    parser.add_argument("--plot", metavar="PATH", help="write power curves (or the cost frontier) to this .png/.pdf/.svg")
    parser.set_defaults(func=run)


def run(args) -> int:
    from ..output import atomic_path, check_writable

    vary = _counts(args.vary, "--vary", lists=True)
    maximum = _counts([args.max] if args.max else [], "--max", lists=False)
    path = check_writable(args.plot, FIGURE_SUFFIXES, "--plot") if args.plot else None
    plan = model_of(args, args.formula).plan(
        args.contrast, vary, effect=args.effect, replicates=args.replicates, simulations=args.simulations,
        seed=args.seed, workers=args.workers, alpha=args.alpha, test=args.test, cost=args.cost, budget=args.budget,
        target_power=args.target_power, target_phi=args.target_phi, criterion=args.criterion, object=args.object,
        maximum=maximum, assurance=args.assurance, rope=args.rope, draws=args.draws, tune=args.tune,
        chains=args.chains, allow_unconverged=args.allow_unconverged, figure=path is not None,
        assume=_counts([args.assume] if args.assume else [], "--assume", lists=False))
    if path is not None:
        with atomic_path(path) as temporary:
            plan.plot().savefig(temporary, format=path.suffix.lstrip("."), dpi=120)
    if args.json:
        print_json(plan.to_dict())
    else:
        print(plan.summary())
    return convergence_status(plan.not_converged())


def _counts(items, option, lists: bool) -> dict:
    """FACET=N,N,... (lists) or FACET=N,FACET=N (bounds) as a mapping; ``Model.plan`` checks names and counts."""
    from ..errors import BayesreproError

    result = {}
    pieces = items if lists else [p for item in items for p in item.split(",")]
    for item in pieces:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise BayesreproError(f"{option} '{item}' needs the form FACET=N{',N,...' if lists else ''}")
        if name in result:
            raise BayesreproError(f"{option} names '{name}' twice")
        counts = [v.strip() for v in values.split(",")]
        result[name] = counts if lists else counts[0]
    return result
