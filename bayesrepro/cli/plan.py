"""`bayesrepro plan`: power per planned size, and the cheapest allocation of items, seeds and other facets."""

from __future__ import annotations

import math
import os

from .. import limits
from .common import add_count, add_data_options, add_family_options, add_seed, convergence_status, model_of, print_json

HELP = "power of the next evaluation per number of items, seeds, ...; the cheapest allocation for a target"
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")
TESTS = ("auto", "wald", "kenward-roger", "lrt")
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
        if args.test not in TESTS:
            raise BayesreproError(f"--test '{args.test}' is unknown; choose one of: {', '.join(TESTS)}")
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
        self.contrast = parse_contrast(args.contrast) if args.contrast else None
        self.criterion = self._criterion(args)
        if self.goal and not args.cost:
            raise BayesreproError(f"--{self.goal.replace('_', '-')} needs --cost, e.g. --cost item=1,system:seed=200")
        if self.criterion == "power" and self.contrast is None:
            raise BayesreproError("--contrast is needed for power (e.g. system=Marking-Baseline); without it, plan "
                                  "phi: --target-phi, --budget, or --vary for a D-study")
        if self.contrast is not None and self.criterion == "power":
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
        if args.assurance and self.criterion != "power":
            raise BayesreproError("--assurance concerns the contrast's power; it does not apply to phi")
        if not self.goal and not self.vary:
            raise BayesreproError("nothing to plan: give --vary FACET=N,N,... or an allocation goal with --cost")
        self.sampling = self._sampling(args) if args.assurance else None
        self.plot = check_writable(args.plot, FIGURE_SUFFIXES, "--plot") if args.plot else None

    def _criterion(self, args) -> str:
        from ..errors import BayesreproError

        implied = {"target_power": "power", "target_phi": "phi"}.get(self.goal)
        default = implied or ("power" if self.contrast is not None else "phi")
        chosen = args.criterion or default
        if implied and chosen != implied:
            raise BayesreproError(f"--criterion {chosen} contradicts --{self.goal.replace('_', '-')}")
        return chosen

    def _sampling(self, args):
        from ..bayes.sampling import SamplingSettings

        return SamplingSettings(draws=args.draws, tune=args.tune, chains=args.chains, seed=self.seed,
                                allow_unconverged=args.allow_unconverged)


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
    options = Options(args)
    frame = model_of(args, args.formula).frame
    if options.criterion == "phi":
        payload, text, figure, status = _reliability_plan(args, options, frame)
    else:
        payload, text, figure, status = _contrast_plan(args, options, frame)
    if options.plot is not None:
        from ..output import atomic_path

        with atomic_path(options.plot) as temporary:
            figure.savefig(temporary, format=options.plot.suffix.lstrip("."), dpi=120)
    if args.json:
        print_json(payload)
    else:
        print(text)
    return status


def _contrast_plan(args, options, frame):
    from dataclasses import replace

    from ..errors import BayesreproError
    from ..plan import allocate, analyse_pilot, parse_costs, plan_power, power_criterion
    from ..plan.figures import cost_frontier, power_curves
    from ..plan.structure import REPLICATE

    pilot = analyse_pilot(args.formula, frame, options.contrast, options.effect, args.family, args.link)
    assumptions = replace(pilot.assumptions, counts={**pilot.assumptions.counts, REPLICATE: options.replicates})
    if assumptions.glmm and options.goal:
        raise BayesreproError(
            f"--{options.goal.replace('_', '-')} searches allocations by the closed form, which binary scores modelled "
            "by the GLMM do not have; compare sizes with --vary and --simulations, or plan a linear probability model "
            "with --family gaussian")
    if args.assurance and assumptions.family != "gaussian":
        raise BayesreproError("--assurance is available for Gaussian scores")
    costs = parse_costs(args.cost, assumptions.structure) if args.cost else None
    allocation, vary = None, options.vary
    if options.goal:
        goal = {"target": options.goal_value} if options.goal == "target_power" else {"budget": options.goal_value}
        allocation = allocate(assumptions.structure, assumptions.counts, costs,
                              power_criterion(assumptions, options.alpha, args.test),
                              fixed={name: values[0] for name, values in options.vary.items()},
                              maximum=options.maximum, frontier=options.plot is not None, **goal)
        vary = {name: [allocation.counts[name]] for name in assumptions.structure.facets} if allocation.counts else {}
    plan = plan_power(assumptions, vary, options.simulations, options.alpha, options.seed, args.test,
                      options.workers) if vary else None
    if plan is not None and costs is not None:
        for row in plan.rows:
            row["cost"] = costs.cost(assumptions.structure, assumptions.design({f: row[f] for f in vary}))
    status = _add_assurance(plan, pilot, options, args) if args.assurance and plan is not None else 0
    if plan is not None:
        payload = plan.to_dict()
    else:
        payload = {"assumed": {"components": assumptions.components(), "effect": assumptions.effect,
                               "family": assumptions.family}, "rows": [], "method": ""}
    payload["assumed"]["pilot_estimate"] = {"estimate": pilot.estimate, "std_error": pilot.std_error}
    parts = [f"Pilot estimate of {options.contrast.text}: {pilot.estimate:.4g} (SE {pilot.std_error:.3g}"
             f"{', link scale' if assumptions.glmm else ''})"]
    figure = None
    if allocation is not None:
        payload["allocation"] = {**allocation.to_dict(), "costs": args.cost}
        parts.append(f"Allocation ({args.cost}):\n{allocation}\n")
        if options.plot:
            figure = cost_frontier(allocation, options.goal_value if options.goal == "target_power" else None)
    elif options.plot:
        facets = list(options.vary)
        by = {facets[1]: options.vary[facets[1]]} if len(facets) > 1 else None
        figure = power_curves(assumptions, facets[0], options.vary[facets[0]], by, options.alpha, plan, args.test)
    if plan is not None:
        parts.append(str(plan))
    return payload, "\n".join(parts), figure, status


def _add_assurance(plan, pilot, options, args) -> int:
    """Adds the assurance of every row; returns the exit status (3 if the sampler did not converge but was allowed)."""
    from dataclasses import replace

    from ..plan import assurance, pilot_posterior

    sampling = replace(options.sampling, progress=args.progress or None)
    posterior = pilot_posterior(pilot, sampling=sampling)
    for row in plan.rows:
        counts = plan.assumptions.design({name: row[name] for name in plan.assumptions.structure.facets if name in row})
        result = assurance(plan.assumptions.structure, posterior.variances, posterior.effect, counts, options.alpha,
                           options.rope)
        row["assurance"] = result.value
        row["assurance_mc_se"] = result.mc_se
    region = "0" if not options.rope else f"[-{options.rope:g}, {options.rope:g}]"
    plan.method += (f"; assurance: P(the {1 - options.alpha:g} posterior interval of B - A excludes {region}) averaged "
                    f"over {len(posterior.effect)} posterior draws of the pilot (fit_bayes); given a draw, the planned "
                    f"posterior is t with the design's Satterthwaite df around an estimate with the draw's variance")
    diagnostics = posterior.diagnostics
    return convergence_status([] if diagnostics.converged else
                              [f"the sampler of --assurance did not converge ({diagnostics.line()})"])


def _reliability_plan(args, options, frame):
    import pandas as pd

    from ..design import resolve_family
    from ..plan import allocate, parse_costs, phi_criterion
    from ..plan.d_study import along_each_facet, d_study_rows
    from ..plan.figures import cost_frontier
    from ..plan.pilot import facet_structure
    from ..plan.power import design_grid
    from ..reliability import default_object

    variances, scale, source = _pilot_components(frame, resolve_family(frame, args.family, args.link))
    factor, levels = _fixed_factor(frame, options.contrast)
    structure, counts = facet_structure(frame, factor, levels)
    object_name = args.object or default_object(variances, {f: counts[f] for f in structure.facets})
    costs = parse_costs(args.cost, structure) if args.cost else None
    fixed = {name: values[0] for name, values in options.vary.items()}
    result, figure = None, None
    if options.goal:
        goal = {"target": options.goal_value} if options.goal == "target_phi" else {"budget": options.goal_value}
        result = allocate(structure, counts, costs, phi_criterion(variances, object_name, structure),
                          fixed=fixed, maximum=options.maximum, frontier=options.plot is not None, **goal)
        chosen = {**counts, **result.counts} if result.counts else counts
        designs = along_each_facet(chosen, result.allocated, options.maximum)
        figure = cost_frontier(result, options.goal_value if options.goal == "target_phi" else None) \
            if options.plot else None
    else:
        designs = [structure.check_counts({**counts, **d}) for d in design_grid(options.vary)]
    rows = d_study_rows(variances, object_name, structure, designs, costs)
    components = [{"name": n, "variance": v} for n, v in variances.items()]
    payload = {
        "assumed": {"components": components, "effect": None, "family": scale, "object": object_name,
                    "source": source, "structure": structure.to_dict(), "nesting": structure.describe_nesting()},
        "rows": rows,
        "method": (f"D-study (reliability.d_study): Brennan's phi of {object_name} scores averaged over the counts of "
                   f"the other facets, {scale} components of the pilot"
                   + (f"; allocation search: {result.search}" if result else "")
                   + ("; rows: one allocated facet varied at a time from the allocation" if result else "")),
    }
    lines = []
    if result is not None:
        payload["allocation"] = {**result.to_dict(), "costs": args.cost}
        goal = (f"phi({object_name}) >= {options.goal_value}" if options.goal == "target_phi"
                else f"the largest phi({object_name}) within {options.goal_value:g}")
        lines += [f"Cheapest design for {goal} ({args.cost}):" if options.goal == "target_phi" else
                  f"Design with {goal} ({args.cost}):", str(result), ""]
    lines += [f"D-study of phi({object_name}) ({scale} components; {source}):",
              pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.4g}")]
    lines += [f"  {c['name']}: {c['variance']:.6g}" for c in components]
    lines += [f"  {line}" for line in structure.describe_nesting()]
    return payload, "\n".join(lines), figure, 0


def _fixed_factor(frame, contrast):
    """The fixed factor of a reliability plan and its levels: the contrast's two, or every level of the one fixed
    variable that also occurs in a grouping (the systems of (1|system:seed)); seeds are counted within it."""
    from ..design.cells import levels_of
    from ..errors import BayesreproError
    from ..plan.pilot import check_contrast_levels

    if contrast is not None:
        check_contrast_levels(frame, contrast)
        return contrast.factor, (contrast.level_a, contrast.level_b)
    grouped = [v for v in frame.spec.fixed_variables if any(v in g.columns for g in frame.groups)]
    if len(grouped) > 1:
        raise BayesreproError(f"the fixed variables {', '.join(grouped)} all occur in groupings; plan phi with "
                              f"--contrast naming the factor the facets are counted within")
    if not grouped:
        return None, ()
    return grouped[0], tuple(str(level) for level in levels_of(frame.cells, grouped[0]))


def _pilot_components(frame, family):
    """The components φ is computed from: REML (Gaussian) or the GLMM's latent scale (binary); its label and source."""
    if family.binary:
        from ..frequentist.glmm import fit_glmm_frame

        fit = fit_glmm_frame(frame, family)
        return ({**fit.variances, "Residual": fit.latent_residual}, f"latent-scale ({family.link})",
                f"ML fit of the binary GLMM ({frame.n_obs} scores)")
    from ..frequentist.lmm import fit_model_frame

    fit = fit_model_frame(frame, "reml")
    return dict(fit.variances), "REML", f"REML fit of the pilot ({frame.n_obs} scores)"
