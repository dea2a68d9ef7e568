"""``br.Model``: one formula over one data source; its fits, posterior, tests, comparison and plan."""

from __future__ import annotations

from ..choices import DEFAULT_BOOTSTRAP
from .display import public


class Model:
    """A mixed model of evaluation scores: its formula parsed once, its data read (or summed) once.

    Every method reuses the model frame (and its sufficient statistics), and
    fits are kept on the model: ``fit()`` twice fits once.

    Parameters
    ----------
    formula : str
        The model, e.g. ``"acc ~ system + (1|item) + (1|seed)"``: random intercepts ``(1|g)`` of grouping factors
        (``(1|a:b)`` for combinations), fixed effects left of them; ``p(successes, trials) ~ ...`` for counts.
    data : pandas.DataFrame, str or pyspark.sql.DataFrame
        The scores: a DataFrame, a CSV/TSV (optionally .gz), Parquet or JSON Lines file, a glob or directory of
        them, harness logs (``"lm-eval:PATH"``, ``"inspect:PATH"``), a bundled dataset name (``"kreutzer_ter"``)
        or a Spark DataFrame: everything the command line's DATA takes.
    family : {"auto", "gaussian", "bernoulli", "binomial"}, default "auto"
        How the scores are modelled: "auto" takes Bernoulli for 0/1 scores, binomial for ``p(successes, trials)``,
        Gaussian otherwise; "gaussian" on 0/1 scores fits a linear probability model.
    object : str, optional
        The object of measurement of φ, a grouping factor of the formula (default: the single grouping factor
        with most levels, when that choice is clear).
    engine : {"auto", "memory", "duckdb", "spark"}, default "auto"
        What sums the data: rows in memory, DuckDB (files and globs, out of core) or Spark; "auto" takes DuckDB
        for globs, directories and files expected to take over 512 MB in memory, memory otherwise.
    categorical : list of str, optional
        Columns read as categories of their text whatever they hold.
    where : str, optional
        A condition selecting rows, e.g. ``"mode == 'Marking'"`` (the user guide's page "Your data" describes the
        language; it is parsed, never evaluated as Python).
    drop_missing : bool, default False
        Drop rows with a missing value in a column of the formula instead of refusing them.
    link : {"logit", "probit"}, optional
        Link of a binary model (default logit).
    spark_master : str, optional
        Spark master URL for ``engine="spark"`` (default ``local[*]``).
    progress : bool, optional
        Show the progress of long work (scans, sampling, bootstrap) on stderr; default: in a terminal, and the
        sampler's own bar in a notebook. Progress lines are also INFO records of the ``bayesrepro.progress`` logger.
    max_memory : int or str, optional
        Largest dense block a fit may build, in bytes or as a size such as ``"4G"`` (default: half the machine's
        memory); a design that needs more is refused before the memory is spent, or fitted by a path that
        needs less (see the user guide's "Crowd-scale designs").

    Raises
    ------
    BayesreproError
        For a formula that does not parse or an ``object`` that is not one of its grouping factors; the data are
        read when first needed, and their errors are raised then.
    """

    @public
    def __init__(self, formula: str, data, family: str = "auto", object: str | None = None, engine: str = "auto",
                 categorical=None, where: str | None = None, drop_missing: bool = False, link: str | None = None,
                 spark_master: str | None = None, progress: bool | None = None, max_memory=None):
        from ..design import parse_formula
        from ..errors import BayesreproError

        from ..design.random_terms import unquote_factor

        self.formula = str(formula)
        self.spec = parse_formula(self.formula, slopes=True)
        object = unquote_factor(object) if isinstance(object, str) else object
        if object is not None and object not in self.spec.group_names:
            raise BayesreproError(f"--object '{object}' is not a grouping factor of --formula {self.formula!r}; "
                                  f"choose one of: {', '.join(self.spec.group_names) or 'none (add a (1|g) term)'}")
        if engine not in ENGINES:
            raise BayesreproError(f"--engine '{engine}' is unknown; choose one of: {', '.join(ENGINES)}")
        if spark_master is not None and engine != "spark":
            raise BayesreproError("--spark-master applies to --engine spark; add --engine spark or drop --spark-master")
        self.data, self.family_name, self.link, self.object = data, family, link, object
        self.engine, self.spark_master, self.where, self.drop_missing = engine, spark_master, where, drop_missing
        self.categorical = [categorical] if isinstance(categorical, str) else list(categorical or ())
        self.progress, self.max_memory = progress, max_memory
        self._frame = None
        self._family = None
        self._fits = {}

    @property
    def frame(self):
        """The model frame: the rows' design, or the grouped sums a producer built (built on first use)."""
        if self._frame is None:
            from ..design import model_frame

            self._frame = model_frame(self.spec, self.data, self.where, self.drop_missing, self.engine,
                                      self.spark_master, self.categorical, progress=self.progress,
                                      max_memory=self.max_memory)
        return self._frame

    @property
    def family(self):
        """The resolved family of the scores (``design.Family``)."""
        if self._family is None:
            from ..design import resolve_family

            self._family = resolve_family(self.frame, self.family_name, self.link)
        return self._family

    @public
    def fit(self, method: str | None = None, nagq: int = 1):
        """Fit the model by REML or ML (a binary GLMM by ML); the fit is kept on the model.

        Parameters
        ----------
        method : {"reml", "ml"}, optional
            Restricted (default for Gaussian scores) or full maximum likelihood; binary models are fitted by ML.
        nagq : int, default 1
            For a binary model with one grouping factor, adaptive Gauss-Hermite nodes per level (1: Laplace).

        Returns
        -------
        Fit
            Variance components, φ and fixed effects; ``to_dict()`` equals ``bayesrepro vca --json``.
        """
        return self._fit(method, nagq)

    def _fit(self, method: str | None, nagq: int, require_object: bool = True):
        """``fit``; without ``require_object`` a tie between the factors with most levels takes the first of them as
        φ's object instead of a refusal (level effects and predictions do not depend on it)."""
        from ..errors import BayesreproError
        from ..limits import check_nodes
        from ..reliability import ObjectChoice, object_of_measurement
        from .fit import Fit

        if method is not None and str(method).lower() not in METHODS:
            raise BayesreproError(f"--method '{method}' is unknown; choose one of: {', '.join(METHODS)}")
        check_nodes(nagq, len(self.spec.group_names))
        family = self.family
        if family.binary and method == "reml":
            raise BayesreproError("--method reml applies to Gaussian scores; a binary model is fitted by ML: drop --method")
        if not family.binary and nagq != 1:
            raise BayesreproError("--nagq applies to binary scores; Gaussian models are fitted exactly: drop --nagq")
        engine_fit = self.engine_fit("ml", nagq) if family.binary else self._components_fit(method or "reml")
        try:
            choice = object_of_measurement(engine_fit.n_levels, self.object)
        except BayesreproError:
            if require_object:
                raise
            choice = ObjectChoice(next(iter(engine_fit.n_levels)))
        return Fit(engine_fit, family, choice, self._inference_frame(engine_fit), self.spec.random_terms, self.frame)

    def engine_fit(self, method: str, nagq: int = 1):
        """The engine's fit by ``method``, fitted once per model.

        Parameters
        ----------
        method : {"reml", "ml"}
            The criterion (binary models: "ml").
        nagq : int, default 1
            Quadrature nodes of a binary model with one grouping factor.

        Returns
        -------
        LmmFit or GlmmFit
            The Gaussian or binary engine's fit.
        """
        key = (method, nagq)
        if key not in self._fits:
            from ..frequentist.fitting import fit_frame

            self._fits[key] = fit_frame(self.frame, self.family, method, nagq)
        return self._fits[key]

    def _components_fit(self, method: str):
        """The exact Gaussian fit by ``method`` or, where its factor would be too large or slow, the Monte Carlo REML
        (ML) fit, or the moment estimates where even that cannot run (``fit_choice.choose_fit``; the path is announced
        with ``progress``)."""
        key = ("components", method)
        if key not in self._fits:
            from ..frequentist.fit_choice import choose_fit

            fit = choose_fit(self.frame, method, self.progress)
            self._fits[key] = fit
            if fit.method == method and fit.exact:
                self._fits.setdefault((method, 1), fit)
        return self._fits[key]

    def _inference_frame(self, engine_fit):
        """The model frame for Satterthwaite's df of a Gaussian REML fit, None where they do not apply (binary
        scores, ML, moment or Monte Carlo estimates, designs beyond the dense algebra)."""
        from ..frequentist.reml_derivatives import DENSE_LIMIT
        from ..frequentist.reference import dense_size

        if self.family.binary or engine_fit.method != "reml" or not engine_fit.exact \
                or dense_size(self.frame) > DENSE_LIMIT:
            return None
        return self.frame

    @public
    def sample(self, draws: int = 1000, tune: int = 1000, chains: int = 4, seed: int | None = 1,
               prior: str | None = None, prior_scale: dict | None = None, backend: str = "auto",
               sampler: str = "auto", allow_unconverged: bool = False, prob: float = 0.95,
               target_accept: float = 0.95):
        """Sample the posterior of every variance component and of φ by NUTS.

        Parameters
        ----------
        draws : int, default 1000
            Posterior draws per chain.
        tune : int, default 1000
            Tuning steps per chain.
        chains : int, default 4
            NUTS chains.
        seed : int or None, default 1
            Seed of the sampler; None draws a fresh one.
        prior : {"scaled", "bambi", "r2d2", "brms"}, optional
            Family of priors: half-normal SD priors scaled by the scores' SD (default for Gaussian scores), Bambi's
            automatic priors, total SD x Dirichlet shares, or brms's defaults. Models with random slopes take
            "scaled" or "brms" (an LKJ(1) prior on every term's correlations) and report ``random_effects``.
        prior_scale : dict, optional
            Scales overriding single priors: a grouping factor, ``"Residual"``, ``"total"`` or ``"concentration"``
            mapped to its value.
        backend : {"auto", "fast", "bambi"}, default "auto"
            The exact fast marginal model where possible, or Bambi's own model.
        sampler : str, default "auto"
            The NUTS implementation (nutpie on the compiled fast path, PyMC for Bambi's model).
        allow_unconverged : bool, default False
            Return the draws even if R-hat, ESS or divergences say the sampler did not converge (they are refused
            with ``NotConvergedError`` otherwise).
        prob : float, default 0.95
            Probability of every interval of the summary and of ``to_dict``.
        target_accept : float, default 0.95
            NUTS's target acceptance rate, in [0.5, 1): higher (0.99) for a posterior with a funnel (a component
            near zero), at the cost of smaller steps.

        Returns
        -------
        Posterior
            ``to_dict()`` equals ``bayesrepro phi --json``.
        """
        from ..bayes import fit_bayes
        from ..bayes.posterior import check_probability
        from ..bayes.priors import prior_scale as checked_scale
        from ..bayes.sampling import SamplingSettings
        from .posterior import Posterior

        overrides = {str(name): checked_scale(str(name), str(value), self.spec.group_names)
                     for name, value in (prior_scale or {}).items()}
        check_probability(prob)
        settings = SamplingSettings(draws=draws, tune=tune, chains=chains, seed=seed, sampler=sampler,
                                    allow_unconverged=allow_unconverged, progress=self.progress,
                                    target_accept=target_accept)
        bayes = fit_bayes(self.frame, object=self.object, family=self.family_name, link=self.link, backend=backend,
                          prior=prior, prior_overrides=overrides, sampling=settings)
        return Posterior(bayes, prob)

    @public
    def effects(self, group: str | None = None, prob: float = 0.95, bayes: bool = False, **sampler_options):
        """Each level's random effects with an interval: conditional modes of the fit, or posterior summaries.

        Parameters
        ----------
        group : str, optional
            A grouping factor of the formula (default: every one).
        prob : float, default 0.95
            Probability of the intervals: normal ones (estimate ± z·sd) for the fit, central posterior ones.
        bayes : bool, default False
            Summarise the posterior (``sample``) instead of the REML/ML fit.
        **sampler_options
            With ``bayes``, the options of ``sample`` (``draws``, ``chains``, ``seed``, ``prior``...).

        Returns
        -------
        LevelEffects
            ``to_dict()`` equals ``bayesrepro effects --json``; ``.table`` holds the rows of ``Fit.level_effects``
            (from a posterior, with ``r_hat`` and ``ess_bulk``).
        """
        from ..bayes.posterior import check_probability
        from ..errors import BayesreproError
        from .level_effects import LevelEffects

        check_probability(prob)
        if bayes:
            posterior = self.sample(**sampler_options)
            table = posterior.level_effects(group, prob)
            return LevelEffects(table, "bayes", prob, table.attrs.get("notes", []), posterior.not_converged())
        if sampler_options:
            option = next(iter(sampler_options)).replace("_", "-")
            raise BayesreproError(f"--{option} applies to the posterior; add --bayes or drop --{option}")
        fit = self._fit(None, 1, require_object=False)
        table = fit.level_effects(group, prob)
        return LevelEffects(table, "frequentist", prob, table.attrs.get("notes", []), fit.not_converged())

    @public
    def glrt(self, h0: str, reference: str = "auto", bootstrap_samples: int = 1000, seed: int | None = None):
        """Generalized likelihood-ratio test of the smaller model ``h0`` against this one, both fitted by ML.

        Parameters
        ----------
        h0 : str
            The null model, nested in this one, e.g. ``"acc ~ 1 + (1|item) + (1|seed)"``.
        reference : str, default "auto"
            Reference distribution of the p-value: "auto" (calibrated when a grouping factor with fewer than 50
            levels carries the tested effect, chi2 otherwise), "chi2", "kenward-roger", "satterthwaite",
            "bootstrap" or "exact-rlrt". Between covariance structures of random slopes, "auto" is the asymptotic
            reference (the 50:50 chi2 mixture for one added slope with its correlations), "bootstrap" calibrates it
            and "exact-rlrt" is refused.
        bootstrap_samples : int, default 1000
            Refits of data simulated under H0 for ``reference="bootstrap"``.
        seed : int, optional
            Seed of the simulated references (bootstrap, exact-rlrt); None draws a fresh one.

        Returns
        -------
        GlrtTest
            ``to_dict()`` equals ``bayesrepro glrt --json``.
        """
        from ..design import parse_formula
        from ..frequentist.glrt import glrt
        from ..frequentist.reference import check_reference
        from .results import GlrtTest

        reference = check_reference(reference)
        parse_formula(h0, slopes=True)
        return GlrtTest(glrt(h0, self.frame, reference=reference, bootstrap_samples=bootstrap_samples, seed=seed,
                             family=self.family_name, link=self.link))

    @public
    def compare(self, factor: str | None = None, by: str | None = None, h0: str | None = None, seed: int | None = 0,
                n_boot: int = DEFAULT_BOOTSTRAP, draws: int = 1000, tune: int = 1000, chains: int = 4,
                allow_unconverged: bool = False, prob: float = 0.95, target_accept: float = 0.95,
                phi: bool = True):
        """The frequentist and the Bayesian answer side by side, with the next evaluation's plan.

        A Gaussian model with random slopes gets Satterthwaite contrasts, bootstrap intervals simulated on its rows
        and the slope posterior; LOO when every random term is of one grouping factor, and no planning section
        (notes say what is left out). 0/1 scores with random slopes are compared as intercept models are: Laplace
        ML with a bootstrap simulated on the rows, Wald z contrasts and the slope posterior.

        Parameters
        ----------
        factor : str, optional
            The categorical fixed effect whose levels are compared (default: the first one).
        by : str, optional
            A data property the factor interacts with (default: read from the formula).
        h0 : str, optional
            Null model of the omnibus GLRT (default: this model without the factor's terms).
        seed : int or None, default 0
            Seed of the bootstrap, the simulated references and the sampler; None draws a fresh one.
        n_boot : int, default 1000
            Parametric bootstrap replicates.
        draws, tune, chains : int, default 1000, 1000 and 4
            The sampler's draws and tuning steps per chain, and its number of chains, as in ``sample``.
        allow_unconverged : bool, default False
            Report the draws even if the sampler did not converge.
        prob : float, default 0.95
            Probability of the Bayesian and bootstrap intervals.
        target_accept : float, default 0.95
            NUTS's target acceptance rate, as in ``sample``.
        phi : bool, default True
            Report φ of the object of measurement; False for a design without one (a grid of meta-parameters).

        Returns
        -------
        Comparison
            ``to_dict()`` equals ``bayesrepro compare --json``.
        """
        from ..bayes.posterior import check_probability
        from ..bayes.sampling import SamplingSettings
        from ..compare import check_bootstrap, compare
        from ..design import parse_formula
        from ..errors import BayesreproError
        from ..plan.next_evaluation import SLOPE_PLANNING_REASON, NextEvaluation, next_evaluation
        from .results import Comparison

        if h0 is not None:
            parse_formula(h0, slopes=True)
        check_bootstrap(n_boot)
        check_probability(prob)
        if not phi and self.object is not None:
            raise BayesreproError("--object and --no-phi contradict each other: an object of measurement is named "
                                  "for a phi that is left out; drop one of them")
        settings = SamplingSettings(draws=draws, tune=tune, chains=chains, seed=seed,
                                    allow_unconverged=allow_unconverged, progress=self.progress,
                                    target_accept=target_accept)
        side = compare(self.frame, object=self.object, factor=factor, by=by, h0=h0, reliability=phi, n_boot=n_boot,
                       prob=prob, sampling=settings, family=self.family_name, link=self.link)
        planning = None
        if side.means is not None and side.by is None and self.frame.spec.has_slopes:
            planning = NextEvaluation(None, None, None, None, SLOPE_PLANNING_REASON)
        elif side.means is not None and side.by is None:
            planning = next_evaluation(self.formula, self.frame, side.factor, side.means, side.object,
                                       side.method != "REML")
        return Comparison(side, planning)

    @public
    def rank(self, factor: str = "system", top: int = 1, lower_is_better: bool = False, prob: float = 0.95,
             n_boot: int = DEFAULT_BOOTSTRAP, seed: int | None = 0, draws: int = 1000, tune: int = 1000,
             chains: int = 4, prior: str | None = None, allow_unconverged: bool = False,
             target_accept: float = 0.95):
        """A leaderboard of the levels of ``factor`` with the uncertainty of every rank, from both engines.

        Rank 1 is the best. For every level: the frequentist estimate of its mean with a parametric-bootstrap
        interval, the share of bootstrap replicates in which it is best and its bootstrap rank interval; the
        posterior probability that it is best (``p_best``) and in the top ``top`` (``p_top``), its expected rank and
        rank interval. A note says where the engines disagree about the leader.

        Parameters
        ----------
        factor : str, default "system"
            A categorical fixed effect of the formula (its estimated marginal means are ranked, link scale for
            0/1 scores).
        top : int, default 1
            The k of ``p_top``, from 1 to the number of levels.
        lower_is_better : bool, default False
            Rank the smallest mean first (error rates, TER).
        prob : float, default 0.95
            Probability of every interval, the rank intervals' included.
        n_boot : int, default 300
            Parametric bootstrap replicates: data simulated from the fit and refitted.
        seed : int or None, default 0
            Seed of the bootstrap and the sampler; None draws a fresh one.
        draws, tune, chains : int, default 1000, 1000 and 4
            The sampler's draws and tuning steps per chain, and its number of chains, as in ``sample``.
        prior : {"scaled", "bambi", "r2d2", "brms"}, optional
            Family of priors, as in ``sample``.
        allow_unconverged : bool, default False
            Report the draws even if the sampler did not converge.
        target_accept : float, default 0.95
            NUTS's target acceptance rate, as in ``sample``.

        Returns
        -------
        Ranking
            ``to_dict()`` equals ``bayesrepro rank --json``.
        """
        from ..bayes.sampling import SamplingSettings
        from ..choices import PRIOR_CHOICES
        from ..errors import BayesreproError
        from ..rankings import rank_levels
        from .ranking import Ranking

        if prior is not None and prior not in PRIOR_CHOICES:
            raise BayesreproError(f"--prior '{prior}' is unknown; choose one of: {', '.join(PRIOR_CHOICES)}")
        settings = SamplingSettings(draws=draws, tune=tune, chains=chains, seed=seed,
                                    allow_unconverged=allow_unconverged, progress=self.progress,
                                    target_accept=target_accept)
        return Ranking(rank_levels(self, factor, top=top, lower_is_better=lower_is_better, prob=prob, n_boot=n_boot,
                                   sampling=settings, prior=prior))

    @public
    def plan(self, contrast: str | None = None, vary: dict | None = None, *, effect: float | None = None,
             replicates: int = 1, simulations: int = 500, seed: int = 0, workers: int | None = None,
             alpha: float = 0.05, test: str = "auto", cost=None, budget: float | None = None,
             target_power: float | None = None, target_phi: float | None = None, criterion: str | None = None,
             object: str | None = None, maximum: dict | None = None, assurance: bool = False, rope: float = 0.0,
             draws: int = 1000, tune: int = 1000, chains: int = 4, allow_unconverged: bool = False,
             figure: bool = False, assume: dict | None = None):
        """Power of the next evaluation per planned size, or the cheapest allocation of its facets.

        This model's data are the pilot. Facets are the columns of the formula's ``(1|g)`` terms; a facet nested in the compared factor (seeds of
        each system) is counted per level of it. A model with random slopes is planned for φ only (a D-study of each
        term's variance averaged over the pilot's rows); the power of a contrast is refused for it.

        Parameters
        ----------
        contrast : str, optional
            ``"FACTOR=B-A"``, the comparison to plan for (write ``" - "`` between levels that hold ``-``); without
            it the plan is of φ (a D-study).
        vary : dict, optional
            Counts of facets to try, e.g. ``{"item": [200, 800]}``; every combination is a planned design.
        effect : float, optional
            True B - A to detect, on the score scale (binary GLMM: the link scale); default: the pilot's estimate.
        replicates : int, default 1
            Scores per cell of the planned design (trials per cell for ``p(successes, trials)``).
        simulations : int, default 500
            Simulated data sets per design (0: the closed form only).
        seed : int, default 0
            Seed of the simulation and of the assurance's sampler.
        workers : int, optional
            Processes the simulation runs in (default: 2, or the number of cores if fewer).
        alpha : float, default 0.05
            Level of the test.
        test : {"auto", "wald", "kenward-roger", "lrt"}, default "auto"
            The planned test: "auto" takes Kenward-Roger where fewer than 50 levels carry the contrast, else Wald.
        cost : str or dict, optional
            Cost per level, e.g. ``"item=1,system:seed=200"`` or ``{"item": 1, "system:seed": 200}``
            (``"a:b"`` per combination, ``"observation"`` per score).
        budget : float, optional
            Largest total cost: the most powerful (or most reliable) allocation within it (needs ``cost``).
        target_power : float, optional
            The cheapest allocation with at least this power (needs ``cost``).
        target_phi : float, optional
            The cheapest allocation whose D-study φ reaches this (needs ``cost``).
        criterion : {"power", "phi"}, optional
            What ``budget`` maximises (default: power with a contrast, φ without).
        object : str, optional
            Object of measurement of φ, a facet (default: this model's ``object``, else the facet with most levels).
        maximum : dict, optional
            Upper bounds of the allocation search per facet (default 50; 10^6 for the facet with most levels).
        assurance : bool, default False
            Also the assurance: power averaged over the pilot's posterior (samples with NUTS).
        rope : float, default 0.0
            Half-width of the region the posterior interval must exclude, for the assurance.
        draws, tune, chains : int, default 1000, 1000 and 4
            The assurance's sampler: draws and tuning steps per chain, and chains.
        allow_unconverged : bool, default False
            Use the assurance's draws even if the sampler did not converge.
        figure : bool, default False
            Draw the power curves (or the cost frontier) for ``PowerPlan.plot``.
        assume : dict, optional
            Variances replacing the pilot's estimates, per component, e.g. ``{"system:seed": 4e-4}``: a plan for
            what the pilot cannot rule out (latent scale for a binary GLMM).

        Returns
        -------
        PowerPlan
            ``to_dict()`` equals ``bayesrepro plan --json``.
        """
        import os
        from types import SimpleNamespace

        from .planning import power_plan

        if isinstance(cost, dict):
            cost = ",".join(f"{name}={value}" for name, value in cost.items())
        request = SimpleNamespace(
            formula=self.formula, spec=self.spec, family=self.family_name, link=self.link, progress=self.progress,
            contrast=contrast, vary=vary or {}, effect=effect, replicates=replicates, simulations=simulations,
            seed=seed, workers=workers or min(2, os.cpu_count() or 1), alpha=alpha, test=test, cost=cost,
            budget=budget, target_power=target_power, target_phi=target_phi, criterion=criterion,
            object=object or self.object, maximum=maximum or {}, assurance=assurance, rope=rope, draws=draws,
            tune=tune, chains=chains, allow_unconverged=allow_unconverged, figure=figure, assume=assume or {})
        return power_plan(self, request)


ENGINES = ("auto", "memory", "duckdb", "spark")
METHODS = ("reml", "ml")
