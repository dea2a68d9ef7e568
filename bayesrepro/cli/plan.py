"""`bayesrepro plan`: power per planned size, and the cheapest allocation of items, seeds and other facets."""

from __future__ import annotations

import math
import os

from .. import limits
from .common import add_count, add_data_options, add_seed, categorical_columns, print_json

HELP = "power of the next evaluation per number of items, seeds, ...; the cheapest allocation for a target"
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")


def register(subparsers) -> None:
    parser = subparsers.add_parser("plan", help=HELP, description=HELP + (
        ". Facets are the columns of the formula's (1|g) terms; a facet nested in the compared factor (seeds of "
        "each system) is counted per level of it: seed=5 means five seeds for each system."))
    add_data_options(parser)
    parser.add_argument("--formula", required=True, help="the pilot's model, e.g. 'ter ~ system + (1|item) + (1|system:seed)'")
    parser.add_argument("--contrast", help="FACTOR=B-A, the comparison to plan for, e.g. system=Marking-Baseline "
                                           "(write ' - ' between levels that hold '-')")
    parser.add_argument("--effect", help="true B - A to detect, on the score scale (default: the pilot's estimate)")
    parser.add_argument("--vary", action="append", default=[], metavar="FACET=N,N,...",
                        help=f"counts of a facet to try, e.g. item=100,400,1600 (repeatable; every combination is a "
                             f"row): each from 1 to {limits.PLANNED_COUNT:,}, at most {limits.MAX_DESIGNS:,} rows")
    add_count(parser, limits.REPLICATES, 1, "scores per cell of the planned design")
    add_count(parser, limits.SIMULATIONS, 500,
              f"simulated data sets per design (0: closed form only); simulations x designs at most "
              f"{limits.MAX_SIMULATED_FITS:,}")
    add_seed(parser, 0, "the simulation")
    add_count(parser, limits.WORKERS, min(2, os.cpu_count() or 1), "processes the simulation runs in",
              default_text="2, or the number of cores if fewer")
    parser.add_argument("--family", default="gaussian", help="gaussian (default) or binomial (0/1 scores; closed form)")
    parser.add_argument("--alpha", default="0.05", help="level of the test (default 0.05)")
    parser.add_argument("--test", default="wald", help="wald (default: REML Wald z, as compare prints) or lrt (GLRT of ML fits)")
    parser.add_argument("--cost", help="cost per level, e.g. item=1,system:seed=200 ('a:b' per combination, "
                                       "'observation' per score)")
    parser.add_argument("--budget", help="largest total cost: report the most powerful (or most reliable) allocation")
    parser.add_argument("--target-power", help="the cheapest allocation with at least this power")
    parser.add_argument("--target-phi", help="the cheapest allocation whose D-study phi reaches this")
    parser.add_argument("--object", help="object of measurement of phi (default: the facet with most levels)")
    parser.add_argument("--max", metavar="FACET=N,...", help="upper bounds of the allocation search (default 50; "
                                                             f"10^6 for the facet with most levels; at most "
                                                             f"{limits.PLANNED_COUNT:,})")
    parser.add_argument("--assurance", action="store_true",
                        help="also the assurance: power averaged over the pilot's posterior (samples with NUTS)")
    parser.add_argument("--rope", default="0", help="half-width of the region the interval must exclude (default 0)")
    add_count(parser, limits.DRAWS, 1000, "posterior draws per chain for --assurance")
    add_count(parser, limits.CHAINS, 4, "chains for --assurance")
    parser.add_argument("--plot", metavar="PATH", help="write power curves (or the cost frontier) to this .png/.pdf/.svg")
    parser.set_defaults(func=run)


class Options:
    """Every option of the command, validated before any data is read."""

    def __init__(self, args):
        from ..design import parse_formula
        from ..errors import BayesreproError
        from ..output import check_writable
        from ..plan.pilot import check_formula_for_contrast, parse_contrast

        self.alpha = _number(args.alpha, "--alpha", low=0, high=1, open_interval=True)
        self.simulations, self.seed, self.workers = args.simulations, args.seed, args.workers
        self.replicates, self.draws, self.chains = args.replicates, args.draws, args.chains
        self.effect = None if args.effect is None else _number(args.effect, "--effect")
        self.rope = _number(args.rope, "--rope", low=0)
        if args.family not in ("gaussian", "binomial"):
            raise BayesreproError(f"--family '{args.family}' is unknown; choose gaussian or binomial")
        if args.test not in ("wald", "lrt"):
            raise BayesreproError(f"--test '{args.test}' is unknown; choose wald or lrt")
        if args.family == "binomial" and self.simulations:
            raise BayesreproError("--family binomial is planned in closed form; add --simulations 0 (simulating binary "
                                  "scores needs the binary mixed-model engine)")
        goals = [name for name in ("budget", "target_power", "target_phi") if getattr(args, name) is not None]
        if len(goals) > 1:
            raise BayesreproError(f"give one of --budget, --target-power, --target-phi, not {len(goals)}")
        self.goal = goals[0] if goals else None
        self.goal_value = None
        if self.goal == "budget":
            self.goal_value = _number(args.budget, "--budget", low=0, open_interval=True)
        elif self.goal:
            option = "--" + self.goal.replace("_", "-")
            self.goal_value = _number(getattr(args, self.goal), option, low=0, high=1, open_interval=True)
        if self.goal and not args.cost:
            raise BayesreproError(f"--{self.goal.replace('_', '-')} needs --cost, e.g. --cost item=1,system:seed=200")
        if args.cost and not self.goal:
            raise BayesreproError("--cost needs a goal: --budget, --target-power or --target-phi")
        self.contrast = parse_contrast(args.contrast) if args.contrast else None
        if self.contrast is None and self.goal != "target_phi":
            raise BayesreproError("--contrast is needed (e.g. system=Marking-Baseline), except with --target-phi")
        if self.contrast is not None:
            check_formula_for_contrast(args.formula, self.contrast.factor)
        spec = parse_formula(args.formula)
        factor = self.contrast.factor if self.contrast else None
        self.facets = list(dict.fromkeys(c for cols in spec.group_factors for c in cols if c != factor))
        self.vary = _counts(args.vary, "--vary", self.facets, lists=True)
        self.maximum = _counts([args.max] if args.max else [], "--max", self.facets, lists=False)
        _check_grid(self.vary, self.simulations)
        fixed = [name for name, values in self.vary.items() if len(values) > 1]
        if self.goal and fixed:
            raise BayesreproError(f"--vary {fixed[0]} gives several counts; with an allocation goal a --vary fixes one count")
        if args.object is not None and args.object not in self.facets:
            raise BayesreproError(f"--object '{args.object}' is not a facet of the formula; facets are: {', '.join(self.facets)}")
        if self.goal_value is not None and self.goal == "target_phi" and args.assurance:
            raise BayesreproError("--assurance concerns the contrast; it does not apply to --target-phi")
        if args.assurance and args.family != "gaussian":
            raise BayesreproError("--assurance is available for the gaussian family")
        if not self.goal and not self.vary:
            raise BayesreproError("nothing to plan: give --vary FACET=N,N,... or an allocation goal with --cost")
        self.plot = check_writable(args.plot, FIGURE_SUFFIXES, "--plot") if args.plot else None


def _number(text, option, low=-math.inf, high=math.inf, open_interval=False) -> float:
    from ..errors import BayesreproError

    try:
        value = float(text)
    except (TypeError, ValueError):
        raise BayesreproError(f"{option} must be a number, not '{text}'") from None
    if not math.isfinite(value):
        raise BayesreproError(f"{option} must be a finite number, not {text}")
    inside = (low < value < high) if open_interval else (low <= value <= high)
    if not inside:
        bounds = f"strictly between {low:g} and {high:g}" if open_interval and high < math.inf else (
            f"above {low:g}" if open_interval else f"at least {low:g}")
        raise BayesreproError(f"{option} must be {bounds}, not {text}")
    return value


def _counts(items, option, facets, lists: bool) -> dict:
    """FACET=N,N,... (lists) or FACET=N,FACET=N (bounds), names checked against the formula's facets."""
    from ..errors import BayesreproError

    result = {}
    pieces = items if lists else [p for item in items for p in item.split(",")]
    for item in pieces:
        name, sep, values = item.partition("=")
        name = name.strip()
        if not sep or not name or not values.strip():
            raise BayesreproError(f"{option} '{item}' needs the form FACET=N{',N,...' if lists else ''}")
        if name not in facets:
            raise BayesreproError(f"{option}: '{name}' is not a facet of the formula; facets are: {', '.join(facets)}")
        if name in result:
            raise BayesreproError(f"{option} names '{name}' twice")
        count = limits.Count(f"{option} {name}", 1, limits.PLANNED_COUNT, "levels of one facet in a planned design")
        counts = [count.check(v.strip()) for v in values.split(",")]
        result[name] = counts if lists else counts[0]
    return result


def _check_grid(vary: dict, simulations: int) -> None:
    """The --vary grid and its simulations, bounded before any data are read (their work multiplies)."""
    designs = math.prod(len(counts) for counts in vary.values())
    limits.check_product(designs, limits.MAX_DESIGNS, "the designs of the --vary grid (every combination of "
                         "its counts)", "give fewer counts to --vary")
    if simulations:
        limits.check_product(simulations * designs, limits.MAX_SIMULATED_FITS,
                             f"--simulations {simulations} x {designs:,} designs (simulated fits)",
                             "lower --simulations or give fewer counts to --vary")
        # every count of a facet appears in designs / len(counts) designs
        varied_levels = sum(sum(counts) * (designs // len(counts)) for counts in vary.values())
        limits.check_product(simulations * varied_levels, limits.MAX_SIMULATED_LEVELS,
                             f"--simulations {simulations} x the varied levels of every design", "lower --simulations "
                             "or the largest counts of --vary (10 simulations of 10^6 items take about 90 s)")


def run(args) -> int:
    from ..data import read_table

    options = Options(args)
    data = read_table(args.data, where=args.where, categorical=categorical_columns(args))
    if options.goal == "target_phi":
        payload, text, figure = _phi_allocation(args, options, data)
    else:
        payload, text, figure = _contrast_plan(args, options, data)
    if options.plot is not None:
        from ..output import atomic_path

        with atomic_path(options.plot) as temporary:
            figure.savefig(temporary, format=options.plot.suffix.lstrip("."), dpi=120)
    if args.json:
        print_json(payload)
    else:
        print(text)
    return 0


def _contrast_plan(args, options, data):
    from dataclasses import replace

    from ..plan import allocate, analyse_pilot, parse_costs, plan_power, power_criterion
    from ..plan.figures import cost_frontier, power_curves
    from ..plan.structure import REPLICATE

    pilot = analyse_pilot(args.formula, data, options.contrast, options.effect, args.family,
                          drop_missing=args.drop_missing)
    assumptions = replace(pilot.assumptions, counts={**pilot.assumptions.counts, REPLICATE: options.replicates})
    allocation, vary = None, options.vary
    if options.goal:
        goal = {"target": options.goal_value} if options.goal == "target_power" else {"budget": options.goal_value}
        allocation = allocate(assumptions.structure, assumptions.counts, parse_costs(args.cost, assumptions.structure),
                              power_criterion(assumptions, options.alpha),
                              fixed={name: values[0] for name, values in options.vary.items()},
                              maximum=options.maximum, **goal)
        vary = {name: [allocation.counts[name]] for name in assumptions.structure.facets} if allocation.counts else {}
    plan = plan_power(assumptions, vary, options.simulations, options.alpha, options.seed, args.test,
                      options.workers) if vary else None
    if args.assurance and plan is not None:
        _add_assurance(plan, pilot, options)
    if plan is not None:
        payload = plan.to_dict()
    else:
        payload = {"assumed": {"components": assumptions.components(), "effect": assumptions.effect,
                               "family": assumptions.family}, "rows": [], "method": ""}
    payload["assumed"]["pilot_estimate"] = {"estimate": pilot.estimate, "std_error": pilot.std_error}
    parts = [f"Pilot estimate of {options.contrast.text}: {pilot.estimate:.4g} (SE {pilot.std_error:.3g})"]
    figure = None
    if allocation is not None:
        payload["allocation"] = {**allocation.to_dict(), "costs": args.cost}
        parts.append(f"Allocation ({args.cost}):\n{allocation}\n")
        if options.plot:
            figure = cost_frontier(allocation, options.goal_value if options.goal == "target_power" else None)
    elif options.plot:
        facets = list(options.vary)
        by = {facets[1]: options.vary[facets[1]]} if len(facets) > 1 else None
        figure = power_curves(assumptions, facets[0], options.vary[facets[0]], by, options.alpha, plan)
    if plan is not None:
        parts.append(str(plan))
    return payload, "\n".join(parts), figure


def _add_assurance(plan, pilot, options) -> None:
    import sys

    from ..plan import assurance, pilot_posterior

    variances, effect = pilot_posterior(pilot, draws=options.draws, chains=options.chains, seed=options.seed,
                                        progress=sys.stderr.isatty())
    for row in plan.rows:
        counts = plan.assumptions.design({name: row[name] for name in plan.assumptions.structure.facets if name in row})
        result = assurance(plan.assumptions.structure, variances, effect, counts, options.alpha, options.rope)
        row["assurance"] = result.value
        row["assurance_mc_se"] = result.mc_se
    plan.method += (f"; assurance: P(the {1 - options.alpha:g} interval of B - A excludes "
                    f"{'0' if not options.rope else f'[-{options.rope:g}, {options.rope:g}]'}) averaged over "
                    f"{len(effect)} posterior draws of the pilot (fit_bayes), normal posterior of the contrast given each draw")


def _phi_allocation(args, options, data):
    from ..design import build_model_frame
    from ..frequentist.lmm import fit_model_frame
    from ..plan import allocate, parse_costs, phi_criterion
    from ..plan.figures import cost_frontier
    from ..plan.pilot import facet_structure
    from ..reliability import default_object

    frame = build_model_frame(args.formula, data, drop_missing=args.drop_missing)
    fit = fit_model_frame(frame, "reml")
    factor = options.contrast.factor if options.contrast else None
    levels = (options.contrast.level_a, options.contrast.level_b) if options.contrast else ()
    structure, counts = facet_structure(frame, factor, levels)
    object_name = args.object or default_object(fit.variances, {f: counts[f] for f in structure.facets})
    fixed = {name: values[0] for name, values in options.vary.items()}
    result = allocate(structure, counts, parse_costs(args.cost, structure), phi_criterion(fit.variances, object_name, structure),
                      target=options.goal_value, fixed=fixed, maximum=options.maximum)
    payload = {
        "assumed": {"components": [{"name": n, "variance": v} for n, v in fit.variances.items()], "effect": None,
                    "family": "gaussian", "object": object_name, "source": f"REML fit of the pilot ({frame.n_obs} scores)",
                    "structure": structure.to_dict(), "nesting": structure.describe_nesting()},
        "rows": [{**{k: v for k, v in result.counts.items() if not k.startswith("(")}, "phi": result.value,
                  "cost": result.cost}] if result.counts else [],
        "method": (f"D-study (reliability.d_study): Brennan's phi of {object_name} scores averaged over the counts of "
                   f"the other facets, REML components of the pilot; search: {result.search}"),
        "allocation": {**result.to_dict(), "costs": args.cost},
    }
    lines = [f"Cheapest design for phi({object_name}) >= {options.goal_value} ({args.cost}):", str(result)]
    lines += [f"  {c['name']}: {c['variance']:.6g}" for c in payload["assumed"]["components"]]
    figure = cost_frontier(result, options.goal_value) if options.plot else None
    return payload, "\n".join(lines), figure
