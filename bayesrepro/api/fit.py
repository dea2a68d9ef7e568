"""``br.Fit``: the frequentist fit of a model (Gaussian LMM by REML/ML, or binary GLMM by ML) as ``vca`` reports it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from .. import limits
from .display import Result, public

SIMULATED = limits.Count("n", 1, 100_000)


class Fit(Result):
    """A fitted mixed model: variance components, reliability φ and fixed effects.

    Returned by ``Model.fit``; one type for Gaussian scores (REML or ML) and
    for 0/1 or binomial scores (ML by Laplace or adaptive quadrature, variance
    components on the latent scale of the link).

    Parameters
    ----------
    engine_fit : object
        The engine's fit (``LmmFit`` or ``GlmmFit``).
    family : Family
        The resolved family of the scores.
    choice : ObjectChoice
        The object of measurement of φ and the note that explains a default choice.
    frame : ModelFrame or None
        The model frame of a Gaussian model, for the Satterthwaite degrees of freedom of a REML fit (None: Wald
        z, as for a design too large for the dense Satterthwaite algebra).
    terms : tuple of RandomTerm, default ()
        The formula's random-effect terms: φ's object variance sums every term of its factor (``(x || g)``'s two).
    model_frame : ModelFrame, optional
        The model frame fitted, for level effects, predictions and simulations (None: they are refused).

    Attributes
    ----------
    components : pandas.DataFrame
        One row per variance component, the residual included (latent for binary scores): ``variance`` and
        ``percent`` of the total.
    random_effects : pandas.DataFrame or None
        For Gaussian scores, one row per SD and per correlation, then the residual, in the shape of lme4's
        ``as.data.frame(VarCorr(m))``: ``group``, ``var1``, ``var2`` (None for an SD), ``vcov`` and ``sdcor`` (the
        SD, or the correlation); None for binary scores.
    fixed_effects : pandas.DataFrame
        One row per fixed effect: ``estimate``, ``std_error``, ``df``, ``t`` and ``p``. For a Gaussian REML fit
        ``df`` is Satterthwaite's, as lmerTest gives it, and ``p`` is read from t on ``df``; for an ML fit, a
        binary GLMM, or a design too large for the dense Satterthwaite algebra, ``df`` is infinite (``None`` in
        ``to_dict``) and ``t`` is the Wald z with its normal ``p``, as lme4 reports GLMMs.
    phi : float
        Reliability φ of the object of measurement: its variance over itself plus the residual variance
        (Brennan's absolute coefficient of the one-facet design; latent scale for binary scores).
    phi_observed : float or None
        For binary scores, φ on the observation scale (the correlation of two 0/1 scores of the same object);
        None for Gaussian scores.
    object : str
        The object of measurement of φ.
    method : str
        ``"reml"`` or ``"ml"``.
    converged : bool
        Whether the optimiser met its convergence test.
    boundary : list of str
        The grouping factors whose variance was estimated at exactly zero (a singular fit).
    """

    def __init__(self, engine_fit, family, choice, frame=None, terms=(), model_frame=None):
        from ..design.random_design import factor_variances
        from ..reliability import phi

        self.engine_fit = engine_fit
        self.family = family
        self.object = choice.name
        self._notes = list(engine_fit.notes) + ([choice.note] if choice.note else [])
        self._choice_note = choice.note
        self._frame = frame
        self._terms = terms
        self._fixed = None
        self._model_frame = model_frame
        self._effects = None
        self.variances = engine_fit.components
        self.phi = float(phi(factor_variances(self.variances, terms), self.object))
        self.phi_observed = engine_fit.phi_observed(self.object) if family.binary else None
        self.method, self.converged, self.boundary = engine_fit.method, engine_fit.converged, engine_fit.boundary

    @property
    def koo_li_label(self) -> str:
        """Koo & Li's label of φ (poor, moderate, good, excellent)."""
        from ..reliability import koo_li_label

        return koo_li_label(self.phi)

    @property
    def components(self) -> pd.DataFrame:
        """Variance and percent of the total of every component, the residual included."""
        from ..reliability import vca_table

        return vca_table(self.variances, self.object)

    @property
    def random_effects(self) -> pd.DataFrame | None:
        """Every SD and correlation of the random effects and the residual SD, as lme4's ``VarCorr`` (see the class)."""
        return None if self.family.binary else pd.DataFrame(self.engine_fit.varcorr())

    @property
    def fixed_effects(self) -> pd.DataFrame:
        """Estimate, standard error, degrees of freedom, t and p of every fixed effect (see the class)."""
        if self._fixed is None:
            self._fixed = _fixed_effect_tests(self.engine_fit, self._frame)
        return self._fixed

    def d_study(self, counts: dict) -> pd.DataFrame:
        """Reliability of scores averaged over several levels of other facets (Brennan's D-study).

        Parameters
        ----------
        counts : dict
            Levels averaged over per facet, one count or a list of counts each, e.g. ``{"seed": [1, 3, 10]}``;
            every combination of the counts is one design (a facet left out counts one level).

        Returns
        -------
        pandas.DataFrame
            One row per design: its counts, Brennan's absolute coefficient ``phi`` and the relative ``e_rho2``
            of the object of measurement (latent scale for binary scores). With random slopes a term's variance
            is the one ``components`` holds (averaged over the rows), a factor's several terms summed, divided by
            the counts as an intercept's.
        """
        from ..design.random_design import factor_variances
        from ..reliability import d_study
        from .counts import designs, facet_counts

        rows = []
        variances = factor_variances(self.variances, self._terms)
        for design in designs(facet_counts(counts, "counts")):
            result = d_study(variances, self.object, design)
            rows.append({**design, "phi": float(result["phi"]), "e_rho2": float(result["e_rho2"])})
        return pd.DataFrame(rows)

    @public
    def level_effects(self, group: str | None = None, prob: float = 0.95) -> pd.DataFrame:
        """Each level's random effects: conditional modes and conditional SDs, as lme4's ``ranef(condVar = TRUE)``.

        Parameters
        ----------
        group : str, optional
            A grouping factor of the formula (default: every one).
        prob : float, default 0.95
            Probability of the normal interval estimate ± z·sd.

        Returns
        -------
        pandas.DataFrame
            One row per level and term (a slope term: one row per level for each of its columns): ``group``,
            ``term`` (lme4's name, "(Intercept)" or the slope's), ``level``, ``estimate`` (the conditional mode:
            the BLUP of a Gaussian fit, with the fixed effects at their estimates, the Laplace mode of a binary one,
            latent scale), ``sd`` (the conditional SD, lme4's ``condsd``; NaN for moment estimates), ``low`` and
            ``high``. ``attrs["notes"]`` holds what qualifies them (why ``sd`` is NaN).
        """
        from ..bayes.posterior import check_probability
        from ..frequentist.level_effects import chosen_groups, effects_table

        check_probability(prob)
        groups = chosen_groups(self._require_frame("level effects").spec, group)
        effects = self._fitted_effects()
        table = effects_table(effects, groups, prob)
        table.attrs["notes"] = list(effects.notes)
        return table

    @public
    def predict(self, data: pd.DataFrame | None = None, random_effects: bool = True) -> np.ndarray:
        """Predictions on the response scale: the fitted values, or those of new rows.

        Parameters
        ----------
        data : pandas.DataFrame, optional
            New rows holding the formula's fixed variables (and its grouping and slope columns when
            ``random_effects``); default: the rows fitted. A level the fit has not seen predicts its population
            value (lme4's ``allow.new.levels = TRUE``); a category of a fixed factor it has not seen is refused.
        random_effects : bool, default True
            Add each row's random effects at their conditional modes; False gives the fixed part Xβ alone
            (lme4's ``re.form = NA``).

        Returns
        -------
        numpy.ndarray
            One value per row: the mean score, or for binary scores the probability of a success.
        """
        from ..frequentist.prediction import predict

        frame = self._require_frame("predictions")
        effects = self._fitted_effects() if random_effects else None
        return predict(frame, self.family, self.engine_fit, effects, data)

    @public
    def simulate(self, n: int = 1, seed: int | None = None) -> np.ndarray:
        """Responses simulated from the fitted model, random effects drawn afresh (lme4's ``simulate``).

        Parameters
        ----------
        n : int, default 1
            Simulated responses per row.
        seed : int, optional
            Seed of the random numbers (None: a fresh one).

        Returns
        -------
        numpy.ndarray
            Shape (rows, n): Gaussian scores, or successes (0/1, or out of the trials of ``p(successes, trials)``).
        """
        from .. import limits
        from ..frequentist.prediction import simulate

        frame = self._require_frame("simulated responses")
        n = SIMULATED.check(n)
        limits.check_product(frame.n_obs * n, limits.MAX_POSTERIOR_VALUES, "simulated values (rows x n)",
                             "lower n")
        seed = None if seed is None else limits.SEED.check(seed)
        return simulate(frame, self.family, self.engine_fit, self._fitted_effects(), n, seed)

    def _require_frame(self, what: str):
        from ..errors import BayesreproError

        if self._model_frame is None:
            raise BayesreproError(f"{what} need the model frame: build this fit with Model.fit")
        return self._model_frame

    def _fitted_effects(self):
        if self._effects is None:
            from ..frequentist.level_effects import fitted_effects

            self._effects = fitted_effects(self._require_frame("level effects"), self.family, self.engine_fit)
        return self._effects

    # --- model checks: residuals and simulation-based checks of the fit (model_checks) ---

    @public
    def residuals(self, kind: str = "response", seed: int | None = None) -> np.ndarray:
        """Residuals of every row fitted.

        Parameters
        ----------
        kind : {"response", "pearson", "deviance", "quantile"}, default "response"
            ``"response"``: the score minus its conditional fitted value (lme4's ``residuals(m, "response")``; the
            observed proportion for binomial scores). ``"pearson"`` and ``"deviance"``: as lme4 defines them (for a
            Gaussian fit both equal the response residual; for a binomial fit √n(y/n − μ)/√(μ(1 − μ)) and the
            signed root of the row's deviance). ``"quantile"``: randomized quantile residuals, each score's rank
            among 250 scores simulated from the fit with fresh random effects (ties randomized), uniform on (0, 1)
            when the model is right, for binary scores too.
        seed : int, optional
            Seed of the simulations of quantile residuals (None: a fresh one).

        Returns
        -------
        numpy.ndarray
            One residual per row.
        """
        from ..model_checks.frequentist import fit_residuals

        return fit_residuals(self, kind, seed)

    @public
    def check(self, seed: int | None = 0, simulations: int = 250):
        """Check the model against data sets simulated from the fit: residuals, dispersion, slopes, outlying levels.

        Parameters
        ----------
        seed : int or None, default 0
            Seed of the simulations and of the randomized residuals (None: a fresh one).
        simulations : int, default 250
            Simulated data sets every test reads its statistic against (19 to 10,000); the smallest p-value a
            test can give is 1/(simulations + 1).

        Returns
        -------
        ModelCheck
            Every test with its p-value and finding, and the figures; ``to_dict()`` equals ``bayesrepro check
            --json``.
        """
        from ..model_checks.frequentist import check_fit

        return check_fit(self, seed, simulations)

    # --- end of model checks ---

    def _problems(self) -> list[str]:
        fit = self.engine_fit
        return [] if fit.converged else [f"the {fit.method.upper()} fit did not converge ({fit.message})"]

    def _payload(self) -> dict:
        fit, family = self.engine_fit, self.family
        payload = {
            "method": fit.method,
            "n_obs": fit.n_obs,
            "components": [{"name": name, "variance": float(row.variance), "percent": float(row.percent)}
                           for name, row in self.components.iterrows()],
            "phi": self.phi,
            "koo_li_label": self.koo_li_label,
            "object": self.object,
            "loglik": fit.loglik,
            "reml_criterion": fit.reml_criterion,
            "converged": fit.converged,
            "boundary": fit.boundary,
            "notes": self._notes,
            "family": family.name,
            "link": family.link,
            "scale": family.scale,
        }
        if hasattr(fit, "path_fields"):   # moments or Monte Carlo traces: no likelihood, the estimates' own errors
            payload.update(fit.path_fields())
        if family.binary:
            payload.update(phi_observed=self.phi_observed, approximation=fit.approximation, n_cells=fit.n_cells)
        payload["random_effects"] = fit.varcorr()
        payload["fixed_effects"] = [{"term": term, **row} for term, row in
                                    self.fixed_effects.to_dict(orient="index").items()]
        return payload

    def _text(self) -> str:
        lines = [str(self.engine_fit)]
        if self.family.binary:
            lines.append(f"phi ({self.object}, latent {self.family.link} scale) = {self.phi:.4f}: {self.koo_li_label} "
                         f"(Koo & Li); on the observation scale (0/1 scores) = {self.phi_observed:.4f}")
        else:
            lines.append(f"phi ({self.object}) = {self.phi:.4f}: {self.koo_li_label} (Koo & Li)")
        if self._choice_note:
            lines.append(f"note: {self._choice_note}")
        return "\n".join(lines)

    def _html_tables(self) -> list:
        components = self.components.assign(sd=np.sqrt(self.components["variance"]))[["variance", "sd", "percent"]]
        phi = {"object": self.object, "phi": self.phi, "Koo & Li": self.koo_li_label,
               "scale": "latent" if self.family.binary else "observed"}
        if self.family.binary:
            phi["phi (observation scale)"] = self.phi_observed
        tables = [("variance components", components), ("fixed effects", self.fixed_effects),
                  (f"reliability phi of {self.object}", pd.DataFrame([phi]))]
        varcorr = self.random_effects
        if varcorr is not None and len(varcorr) > len(self.components):   # slopes or correlations beyond the SDs
            tables.append(("random effects (SDs and correlations)", varcorr))
        return tables

    def plot(self, title: str | None = None):
        """Draw the percent of the total variance of every component as bars.

        Parameters
        ----------
        title : str, optional
            The figure's title (default: the formula).

        Returns
        -------
        matplotlib.figure.Figure
            The figure, to display or to save.
        """
        from ..plots import component_bars

        return component_bars(self.components["percent"], title or self.engine_fit.formula)


def _fixed_effect_tests(fit, frame) -> pd.DataFrame:
    """Estimate, SE, df, t and p of every coefficient: Satterthwaite t for a REML fit (lmerTest), else Wald z."""
    from ..frequentist.ddf import SATTERTHWAITE, frame_inference, t_p_values
    from ..runtime import numerical_work

    estimate = np.asarray(fit.beta, dtype=float)
    se, df = fit.se, np.full(len(estimate), np.inf)
    if frame is not None and fit.method == "reml":
        with numerical_work():   # computed when first asked for, perhaps outside any other numerical work
            inference = frame_inference(frame, fit, (SATTERTHWAITE,))
            se, df = inference.contrasts(np.eye(len(estimate)), SATTERTHWAITE)
    t = estimate / se
    # the normal tail 2Φ(−|t|) = erfc(|t|/√2) from the standard library: a large fit (no df) needs no scipy.special
    p = np.array([math.erfc(abs(value) / math.sqrt(2.0)) for value in t], dtype=float)
    finite = np.isfinite(df)
    if finite.any():
        p[finite] = t_p_values(estimate[finite], se[finite], df[finite])
    return pd.DataFrame({"estimate": estimate, "std_error": se, "df": df, "t": t, "p": p},
                        index=pd.Index(fit.fixed_names, name="term"))
