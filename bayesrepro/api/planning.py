"""``Model.plan``: power per planned size of the next evaluation, and the cheapest allocation of its facets."""

from __future__ import annotations

import math
from collections.abc import Mapping

from .. import limits
from .display import Result

TESTS = ("auto", "wald", "kenward-roger", "lrt")
CRITERIA = ("power", "phi")


class PowerPlan(Result):
    """Power (or D-study φ) of planned designs, and the allocation a budget or target asks for.

    Returned by ``Model.plan``.

    Parameters
    ----------
    payload : dict
        The plan as ``bayesrepro plan --json`` prints it.
    text : str
        The plan as ``bayesrepro plan`` prints it.
    figure : matplotlib.figure.Figure or None
        Power curves or the cost frontier, when asked for.
    problems : list of str
        What did not converge (the sampler of the assurance).

    Attributes
    ----------
    rows : pandas.DataFrame
        One row per planned design: its counts and its power (or φ), with cost and assurance where asked for.
    """

    def __init__(self, payload: dict, text: str, figure=None, problems=()):
        self.payload, self.text, self.figure, self.problems = payload, text, figure, list(problems)

    @property
    def rows(self):
        """The planned designs, one row each."""
        import pandas as pd

        return pd.DataFrame(self.payload["rows"])

    def _problems(self) -> list[str]:
        return self.problems

    def _payload(self) -> dict:
        return self.payload

    def _text(self) -> str:
        return self.text

    def plot(self):
        """The power curves, or the cost frontier of an allocation, drawn by ``Model.plan(..., figure=True)``.

        Returns
        -------
        matplotlib.figure.Figure
            The figure, to display or to save.
        """
        from ..errors import BayesreproError

        if self.figure is None:
            raise BayesreproError("this plan has no figure; plan with figure=True to draw power curves or the "
                                  "cost frontier")
        return self.figure


def power_plan(model, request) -> PowerPlan:
    """The plan ``request`` (the arguments of ``Model.plan``) asks for, from ``model`` as the pilot."""
    options = Options(request)
    if options.criterion == "phi":
        payload, text, figure, problems = _reliability_plan(request, options, model)
    else:
        _refuse_slopes(model.spec)
        payload, text, figure, problems = _contrast_plan(request, options, model.frame)
    return PowerPlan(payload, text, figure, problems)


def _refuse_slopes(spec) -> None:
    """The power of a contrast (closed form and simulated refits) is written for random intercepts: with a slope,
    Var(B − A) depends on where the planned design puts the covariate, which facet counts do not say."""
    from ..errors import BayesreproError

    slope = next((term.text for term in spec.random_terms if not term.intercept_only), None)
    if slope is not None:
        raise BayesreproError(f"random slope '{slope}': plan computes the power of a contrast for random intercepts "
                              "only; plan phi of the slope model (a D-study: --criterion phi, or no --contrast)")


class Options:
    """Every option of the command, validated before any data is read."""

    def __init__(self, request):
        from ..errors import BayesreproError
        from ..plan.pilot import check_formula_for_contrast, parse_contrast

        self.alpha = limits.number(request.alpha, "--alpha", low=0, high=1, open_interval=True)
        self.simulations, self.seed = limits.SIMULATIONS.check(request.simulations), limits.SEED.check(request.seed)
        self.workers, self.replicates = limits.WORKERS.check(request.workers), limits.REPLICATES.check(request.replicates)
        self.draws, self.chains = limits.DRAWS.check(request.draws), limits.CHAINS.check(request.chains)
        self.effect = None if request.effect is None else limits.number(request.effect, "--effect")
        self.rope = limits.number(request.rope, "--rope", low=0)
        if request.test not in TESTS:
            raise BayesreproError(f"--test '{request.test}' is unknown; choose one of: {', '.join(TESTS)}")
        goals = [name for name in ("budget", "target_power", "target_phi") if getattr(request, name) is not None]
        if len(goals) > 1:
            raise BayesreproError(f"give one of --budget, --target-power, --target-phi, not {len(goals)}")
        self.goal = goals[0] if goals else None
        self.goal_value = None
        if self.goal == "budget":
            self.goal_value = limits.number(request.budget, "--budget", low=0, open_interval=True)
        elif self.goal:
            option = "--" + self.goal.replace("_", "-")
            self.goal_value = limits.number(getattr(request, self.goal), option, low=0, high=1, open_interval=True)
        self.contrast = parse_contrast(request.contrast) if request.contrast else None
        self.criterion = self._criterion(request)
        if self.goal and not request.cost:
            raise BayesreproError(f"--{self.goal.replace('_', '-')} needs --cost, e.g. --cost item=1,system:seed=200")
        if self.criterion == "power" and self.contrast is None:
            raise BayesreproError("--contrast is needed for power (e.g. system=Marking-Baseline); without it, plan "
                                  "phi: --target-phi, --budget, or --vary for a D-study")
        if self.contrast is not None and self.criterion == "power":
            check_formula_for_contrast(request.spec, self.contrast.factor)
        spec = request.spec
        factor = self.contrast.factor if self.contrast else None
        self.facets = list(dict.fromkeys(c for cols in spec.group_factors for c in cols if c != factor))
        self.vary = _counts(request.vary, "--vary", self.facets, lists=True)
        self.maximum = _counts(request.maximum, "--max", self.facets, lists=False)
        _check_grid(self.vary, self.simulations)
        fixed = [name for name, values in self.vary.items() if len(values) > 1]
        if self.goal and fixed:
            raise BayesreproError(f"--vary {fixed[0]} gives several counts; with an allocation goal a --vary fixes one count")
        if request.object is not None and request.object not in self.facets:
            raise BayesreproError(f"--object '{request.object}' is not a facet of the formula; facets are: {', '.join(self.facets)}")
        if request.assurance and self.criterion != "power":
            raise BayesreproError("--assurance concerns the contrast's power; it does not apply to phi")
        if not self.goal and not self.vary:
            raise BayesreproError("nothing to plan: give --vary FACET=N,N,... or an allocation goal with --cost")
        self.sampling = self._sampling(request) if request.assurance else None
        self.plot = request.figure
        if not isinstance(request.assume, Mapping):
            raise BayesreproError(f"--assume must map components to variances, e.g. {{'system:seed': 0.0004}}, "
                                  f"not {request.assume!r}")
        self.assume = {str(name): limits.number(value, f"--assume {name}", low=0) for name, value in request.assume.items()}
        if self.assume and request.assurance:
            raise BayesreproError("--assurance averages over the pilot's posterior, not over --assume's variances; "
                                  "drop one of them")

    def assumed(self, variances: dict) -> dict:
        """The pilot's variances with those of ``--assume`` in their place, names checked against the pilot's."""
        from ..errors import BayesreproError

        unknown = [name for name in self.assume if name not in variances]
        if unknown:
            raise BayesreproError(f"--assume '{unknown[0]}' is not a component of the pilot; components are: "
                                  f"{', '.join(variances)}")
        return {**variances, **self.assume}

    def assumed_notes(self) -> list[str]:
        """One note naming the variances assumed in place of the pilot's, when there are any."""
        listed = ", ".join(f"{name} = {value:.6g}" for name, value in self.assume.items())
        return [f"assumed in place of the pilot's estimates (--assume): {listed}"] if self.assume else []

    def _criterion(self, request) -> str:
        from ..errors import BayesreproError

        if request.criterion not in (None, *CRITERIA):
            raise BayesreproError(f"--criterion '{request.criterion}' is unknown; choose one of: {', '.join(CRITERIA)}")
        implied = {"target_power": "power", "target_phi": "phi"}.get(self.goal)
        default = implied or ("power" if self.contrast is not None else "phi")
        chosen = request.criterion or default
        if implied and chosen != implied:
            raise BayesreproError(f"--criterion {chosen} contradicts --{self.goal.replace('_', '-')}")
        return chosen

    def _sampling(self, request):
        from ..bayes.sampling import SamplingSettings

        return SamplingSettings(draws=request.draws, tune=request.tune, chains=request.chains, seed=self.seed,
                                allow_unconverged=request.allow_unconverged)



def _counts(given: dict, option, facets, lists: bool) -> dict:
    """Counts per facet (a list of them per facet with ``lists``), names checked against the formula's facets."""
    from ..errors import BayesreproError

    if not isinstance(given, Mapping):
        raise BayesreproError(f"{option} must map each facet to {'its counts' if lists else 'a count'}, e.g. "
                              f"{{'item': {[200, 800] if lists else 800}}}, not {given!r}")
    result = {}
    for name, values in given.items():
        if name not in facets:
            raise BayesreproError(f"{option}: '{name}' is not a facet of the formula; facets are: {', '.join(facets)}")
        count = limits.Count(f"{option} {name}", 1, limits.PLANNED_COUNT, "levels of one facet in a planned design")
        counts = [count.check(value) for value in (values if lists and isinstance(values, (list, tuple)) else [values])]
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


def _contrast_plan(request, options, frame):
    from dataclasses import replace

    from ..errors import BayesreproError
    from ..plan import allocate, analyse_pilot, parse_costs, plan_power, power_criterion
    from ..plan.figures import cost_frontier, power_curves
    from ..plan.structure import REPLICATE

    pilot = analyse_pilot(request.formula, frame, options.contrast, options.effect, request.family, request.link)
    assumptions = replace(pilot.assumptions, counts={**pilot.assumptions.counts, REPLICATE: options.replicates},
                          variances=options.assumed(pilot.assumptions.variances),
                          notes=(*pilot.assumptions.notes, *options.assumed_notes()))
    if assumptions.glmm and options.goal:
        raise BayesreproError(
            f"--{options.goal.replace('_', '-')} searches allocations by the closed form, which binary scores modelled "
            "by the GLMM do not have; compare sizes with --vary and --simulations, or plan a linear probability model "
            "with --family gaussian")
    if request.assurance and assumptions.family != "gaussian":
        raise BayesreproError("--assurance is available for Gaussian scores")
    costs = parse_costs(request.cost, assumptions.structure) if request.cost else None
    allocation, vary = None, options.vary
    if options.goal:
        goal = {"target": options.goal_value} if options.goal == "target_power" else {"budget": options.goal_value}
        allocation = allocate(assumptions.structure, assumptions.counts, costs,
                              power_criterion(assumptions, options.alpha, request.test),
                              fixed={name: values[0] for name, values in options.vary.items()},
                              maximum=options.maximum, frontier=options.plot, **goal)
        vary = {name: [allocation.counts[name]] for name in assumptions.structure.facets} if allocation.counts else {}
    plan = plan_power(assumptions, vary, options.simulations, options.alpha, options.seed, request.test,
                      options.workers) if vary else None
    if plan is not None and costs is not None:
        for row in plan.rows:
            row["cost"] = costs.cost(assumptions.structure, assumptions.design({f: row[f] for f in vary}))
    problems = _add_assurance(plan, pilot, options, request) if request.assurance and plan is not None else []
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
        payload["allocation"] = {**allocation.to_dict(), "costs": request.cost}
        parts.append(f"Allocation ({request.cost}):\n{allocation}\n")
        if options.plot:
            figure = cost_frontier(allocation, options.goal_value if options.goal == "target_power" else None)
    elif options.plot:
        facets = list(options.vary)
        by = {facets[1]: options.vary[facets[1]]} if len(facets) > 1 else None
        figure = power_curves(assumptions, facets[0], options.vary[facets[0]], by, options.alpha, plan, request.test)
    if plan is not None:
        parts.append(str(plan))
    return payload, "\n".join(parts), figure, problems


def _add_assurance(plan, pilot, options, request) -> list[str]:
    """Adds the assurance of every row; returns what did not converge (the sampler, if allowed not to)."""
    from dataclasses import replace

    from ..plan import assurance, pilot_posterior

    sampling = replace(options.sampling, progress=request.progress)
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
    return [] if diagnostics.converged else [f"the sampler of --assurance did not converge ({diagnostics.line()})"]


def _reliability_plan(request, options, model):
    import pandas as pd

    from ..design.random_design import factor_variances
    from ..plan import allocate, parse_costs, phi_criterion
    from ..plan.d_study import SLOPE_DEFINITION, along_each_facet, d_study_rows
    from ..plan.figures import cost_frontier
    from ..plan.pilot import facet_structure
    from ..plan.power import design_grid
    from ..reliability import default_object

    frame = model.frame
    variances, scale, source = _pilot_components(model)
    variances = options.assumed(factor_variances(variances, model.spec.random_terms))
    factor, levels = _fixed_factor(frame, options.contrast)
    structure, counts = facet_structure(frame, factor, levels)
    object_name = request.object or default_object(variances, {f: counts[f] for f in structure.facets})
    costs = parse_costs(request.cost, structure) if request.cost else None
    fixed = {name: values[0] for name, values in options.vary.items()}
    result, figure = None, None
    if options.goal:
        goal = {"target": options.goal_value} if options.goal == "target_phi" else {"budget": options.goal_value}
        result = allocate(structure, counts, costs, phi_criterion(variances, object_name, structure),
                          fixed=fixed, maximum=options.maximum, frontier=options.plot, **goal)
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
    if model.spec.has_slopes:
        payload["assumed"]["phi_definition"] = SLOPE_DEFINITION
    lines = []
    if result is not None:
        payload["allocation"] = {**result.to_dict(), "costs": request.cost}
        goal = (f"phi({object_name}) >= {options.goal_value}" if options.goal == "target_phi"
                else f"the largest phi({object_name}) within {options.goal_value:g}")
        lines += [f"Cheapest design for {goal} ({request.cost}):" if options.goal == "target_phi" else
                  f"Design with {goal} ({request.cost}):", str(result), ""]
    lines += [f"D-study of phi({object_name}) ({scale} components; {source}):",
              pd.DataFrame(rows).to_string(index=False, float_format=lambda v: f"{v:.4g}")]
    lines += [f"  {c['name']}: {c['variance']:.6g}" for c in components]
    lines += [f"  {line}" for line in structure.describe_nesting()]
    lines += [f"note: {SLOPE_DEFINITION}"] if model.spec.has_slopes else []
    if options.assume:
        lines += [f"note: {note}" for note in options.assumed_notes()]
        payload["notes"] = options.assumed_notes()
    return payload, "\n".join(lines), figure, []


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


def _pilot_components(model):
    """The components φ is computed from: REML (Gaussian) or the GLMM's latent scale (binary); its label and source."""
    family, n_obs = model.family, model.frame.n_obs
    variances = model.engine_fit("ml" if family.binary else "reml").components
    if family.binary:
        return variances, f"latent-scale ({family.link})", f"ML fit of the binary GLMM ({n_obs} scores)"
    return variances, "REML", f"REML fit of the pilot ({n_obs} scores)"
