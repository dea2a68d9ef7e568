"""One self-contained HTML report of a named analysis: tables, figures, formulas, priors, diagnostics, provenance.

Figures are embedded as base64 PNG and the page has no scripts, no external
styles or fonts, so the file opens offline in any browser and can be archived
with a paper. Every string that comes from the user (data path, spec, columns,
levels, formulas, the row filter, messages quoting them) is HTML-escaped:
through ``_e`` in the page's own markup, by pandas in tables, and as plain
text (no mathtext) in the figures. The file is written atomically, after
``--out`` was checked before any work.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import html
import io
import platform
from dataclasses import dataclass, field, replace
from importlib import metadata
from pathlib import Path

import pandas as pd

from .api.display import Result
from .bayes.posterior import check_probability
from .bayes.sampling import SamplingSettings
from .compare import DEFAULT_BOOTSTRAP, check_bootstrap, compare
from .data import read_table
from .design import ModelFrame, model_frame
from .design.producers import choose_engine, grouped_source
from .errors import BayesreproError
from .output import check_writable, write_atomic
from .reliability import koo_li_label
from .specs import Spec, load_spec

VERSIONED = ("bayesrepro", "numpy", "scipy", "pandas", "formulae", "pymc", "bambi", "arviz", "matplotlib", "nutpie")
STYLE = """
body{font-family:Helvetica,Arial,sans-serif;max-width:1100px;margin:24px auto;color:#222;line-height:1.4}
h1{font-size:1.6em;border-bottom:2px solid #1f4e79}h2{font-size:1.25em;color:#1f4e79;margin-top:1.8em}
h3{font-size:1.05em}table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #ccc;padding:3px 8px;text-align:right}th{background:#eef3f8}
td:first-child,th:first-child{text-align:left}code,pre{background:#f5f5f5;font-size:.88em}
pre{padding:8px;overflow-x:auto;white-space:pre-wrap}.flag{color:#8a1c1c}.ok{color:#1d6b2f}
img{max-width:100%;border:1px solid #ddd;margin:6px 0}.meta td{text-align:left}
"""


REPORT_SUFFIXES = (".html", ".htm")


@dataclass
class ReportOptions:
    """How the report's analyses run: bootstrap replicates, the sampler, the probability of every interval."""

    n_boot: int = DEFAULT_BOOTSTRAP
    sampling: SamplingSettings = field(default_factory=lambda: SamplingSettings(seed=0))
    prob: float = 0.95

    def __post_init__(self):
        check_bootstrap(self.n_boot)
        check_probability(self.prob)


@dataclass(frozen=True)
class WrittenReport(Result):
    """What a report holds, as ``bayesrepro report`` prints it: its file, the input's hash, the flags it raised."""

    out: str
    sha256: str
    n_rows: int
    spec: str
    flags: dict[str, list[str]]     # per portion of the data ("all", or a level of the spec's split)
    problems: list[str]             # what did not converge, one phrase each

    def _payload(self) -> dict:
        return {"out": self.out, "sha256": self.sha256, "n_rows": self.n_rows, "spec": self.spec,
                "flags": self.flags, "not_converged": self.problems}

    def _text(self) -> str:
        lines = [f"wrote {self.out} ({self.n_rows} rows, sha256 {self.sha256[:12]}...)"]
        lines += [f"{level}: {flag}" for level, flags in self.flags.items() for flag in flags]
        return "\n".join(lines)

    def _problems(self) -> list[str]:
        return self.problems


def write_report(source, spec: str | Spec, out: str | Path, columns: dict | None = None, where: str | None = None,
                 categorical=(), options: ReportOptions | None = None, engine: str = "auto",
                 spark_master: str | None = None, progress: bool | None = None, max_memory=None) -> WrittenReport:
    """Run ``spec`` on ``source`` with both engines and write the HTML report to ``out``; returns what it holds.

    ``out`` is checked before any work and replaced only by a complete report: a
    failed or interrupted run leaves a previous report as it was. ``engine``
    (``spark_master``, ``progress``) says what reads the data, as for
    ``design.model_frame``: rows in memory, or grouped sums from DuckDB or Spark. ``max_memory`` bounds the
    dense blocks of every fit (``design.model_frame``).
    """
    out = check_writable(out, REPORT_SUFFIXES)
    spec = spec if isinstance(spec, Spec) else load_spec(spec, **(columns or {}))
    chosen = choose_engine(source, engine)
    digest, described = input_digest(source)
    if chosen == "memory":
        portions = _row_portions(spec, spec.prepare(read_table(source, where=where, categorical=categorical)))
    else:
        portions = _grouped_portions(spec, grouped_source(source, engine, where, spark_master=spark_master,
                                                          categorical=categorical, progress=progress))
    portions = [replace(p, frame=p.frame.with_memory_limit(max_memory)) for p in portions]
    page, summary = render(spec, portions, options or ReportOptions(), described, digest, where)
    try:
        write_atomic(out, page)
    except OSError as exc:
        raise BayesreproError(f"--out '{out}' could not be written ({exc.strerror or exc}); "
                              "a previous report there is unchanged") from None
    return WrittenReport(str(out), digest, sum(p.frame.n_obs for p in portions), **summary)


@dataclass(frozen=True)
class Portion:
    """The rows one section of the report analyses: all of them, or those of one level of the spec's split."""

    level: str | None
    frame: ModelFrame
    rows: pd.DataFrame | None      # the rows themselves, when they are in memory


def _row_portions(spec: Spec, data: pd.DataFrame) -> list[Portion]:
    if not spec.split:
        return [Portion(None, model_frame(spec.formula, data), data)]
    portions = []
    for level in sorted(set(data[spec.split].astype(str))):   # in the order every engine gives
        rows = data[data[spec.split].astype(str) == level]
        portions.append(Portion(level, model_frame(spec.formula, rows), rows))
    return portions


def _grouped_portions(spec: Spec, source) -> list[Portion]:
    """The portions of data a producer sums where they live (DuckDB, Spark); the spec's columns checked first."""
    for item in spec.derive:
        if item.column not in source.schema:
            raise BayesreproError(
                f"spec '{spec.name}' derives the column '{item.column}' from '{item.source}' on rows in memory; "
                f"use --engine memory, or add the column '{item.column}' to the data"
            )
    spec.prepare(pd.DataFrame(columns=list(source.schema)))   # every column the spec names exists
    if not spec.split:
        return [Portion(None, source.frame(spec.formula), None)]
    levels, missing = source.texts_of(spec.split)
    if missing:
        raise BayesreproError(f"the column '{spec.split}' that splits spec '{spec.name}' is missing in {missing} rows; "
                              "select the others with --where")
    return [Portion(level, source.restricted(spec.split, level).frame(spec.formula), None) for level in levels]


def input_digest(source) -> tuple[str, str]:
    """sha256 of the input and what was hashed: the bytes of its file(s), or the CSV text of a DataFrame."""
    from .datasets import DATASETS, dataset_path
    from .design.producers.duckdb_source import data_files
    from .design.producers.spark_source import is_spark_dataframe

    if isinstance(source, pd.DataFrame):
        text = source.to_csv(index=False).encode()
        return hashlib.sha256(text).hexdigest(), "DataFrame (sha256 of its CSV text)"
    if is_spark_dataframe(source):
        return "not computed", "Spark DataFrame (not hashed: its rows stay in Spark)"
    path = Path(source)
    if not path.exists() and str(source) in DATASETS:
        return hashlib.sha256(dataset_path(str(source)).read_bytes()).hexdigest(), f"bundled dataset {source}"
    if path.is_file():
        return hashlib.sha256(path.read_bytes()).hexdigest(), str(path)
    if not path.is_dir() and not any(ch in str(source) for ch in "*?["):
        raise BayesreproError(f"data file '{source}' does not exist")
    files = data_files(str(source))
    digest = hashlib.sha256()
    for file in files:
        with open(file, "rb") as handle:
            while chunk := handle.read(2**24):
                digest.update(chunk)
    return digest.hexdigest(), f"{source}: {len(files)} files (sha256 of their bytes, one after the other in name order)"


def render(spec: Spec, portions: list[Portion], options: ReportOptions, described: str, digest: str,
           where: str | None) -> tuple[str, dict]:
    parts = [f"<h1>{_e(spec.title)}</h1>", f"<p>{_e(spec.description)}</p>"]
    parts.append(_provenance(spec, sum(p.frame.n_obs for p in portions), described, digest, where, options))
    parts.append(_formulas(spec))
    flags, not_converged = {}, []
    for portion in portions:
        heading = "Results" if portion.level is None else f"Results for {spec.split} = {portion.level}"
        result = compare(portion.frame, object=spec.object, factor=spec.factor, by=spec.by, h0=spec.h0,
                         reliability=spec.analysis != "importance", n_boot=options.n_boot,
                         sampling=options.sampling, prob=options.prob)
        parts.append(_results(heading, spec, result))
        parts.append(_planning(spec, portion.rows, result))
        parts.append(_model_checks(portion, result))
        flags[portion.level or "all"] = result.flags
        not_converged += [f"{heading}: {problem}" for problem in result.not_converged()]
    parts.append(_versions())
    body = "\n".join(parts)
    page = (f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>{_e(spec.title)}</title>"
            f"<style>{STYLE}</style></head><body>{body}</body></html>")
    return page, {"spec": spec.name, "flags": flags, "problems": not_converged}


def _provenance(spec, n_rows, described, digest, where, options) -> str:
    rows = [
        ("data", _e(described)), ("sha256 of the input", f"<code>{digest}</code>"), ("rows analysed", f"{n_rows:,}"),
        ("row filter", _e(where or "none")), ("spec", f"{_e(spec.name)} ({_e(spec.source)})"),
        ("columns", _e(", ".join(f"{k} = {v}" for k, v in spec.columns.items()))),
        ("bootstrap", f"{options.n_boot} parametric-bootstrap replicates of the frequentist fit "
                      "(REML; ML by the Laplace approximation for 0/1 scores)"),
        ("intervals", f"central {_level(options.prob)} (bootstrap percentile and posterior); 95 % for means and "
                      "contrasts, from the reference their tables name"),
        ("sampling", f"NUTS, {options.sampling.chains} chains x {options.sampling.draws} draws after "
                     f"{options.sampling.tune} tuning steps"),
        ("seed", str(options.sampling.seed)), ("generated", datetime.datetime.now().isoformat(timespec="seconds")),
    ]
    cells = "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
    return f"<h2>Data and settings</h2><table class='meta'>{cells}</table>"


def _formulas(spec: Spec) -> str:
    items = [f"<li>model fitted by both engines: <code>{_e(spec.formula)}</code></li>"]
    if spec.h0:
        items.append(f"<li>null model of the likelihood-ratio test (ML fits): <code>{_e(spec.h0)}</code></li>")
    for label, value in (("compared factor", spec.factor), ("within levels of", spec.by),
                         ("object of measurement", spec.object), ("fitted separately per level of", spec.split)):
        if value:
            items.append(f"<li>{label}: <code>{_e(value)}</code></li>")
    if spec.facets:
        items.append(f"<li>D-study facets: <code>{_e(', '.join(spec.facets))}</code></li>")
    for item in spec.derive:
        items.append(f"<li>derived column <code>{_e(item.column)}</code>: {_e(item.kind)} of <code>{_e(item.source)}</code> "
                     "(short &le; 15 &lt; typical &le; 55 &lt; very long)</li>")
    return f"<h2>Model</h2><ul>{''.join(items)}</ul>"


def _results(heading: str, spec: Spec, result) -> str:
    from . import plots

    parts = [f"<h2>{_e(heading)}</h2>", f"<p>{result.n_obs:,} observations.</p>"]
    parts.append("<h3>Where the engines disagree</h3>")
    if result.flags:
        parts.append("<ul>" + "".join(f"<li class='flag'>{_e(f)}</li>" for f in result.flags) + "</ul>")
    else:
        parts.append("<p class='ok'>No disagreement flagged: every interval pair overlaps, no significant contrast has a "
                     "posterior interval covering 0, and both engines give the same Koo &amp; Li label.</p>")
    parts += ["<h3>Variance components</h3>", _estimate_table(result, "variance"),
              "<h3>Percent of total variance</h3>", _estimate_table(result, "percent")]
    parts.append(_image(plots.vca_bars(result, title=spec.title)))
    if result.object is not None:
        row = result.phi
        scale = " on the latent scale" if result.bayes.scale == "latent" else ""
        parts += [f"<h3>Reliability &phi;{scale} (object of measurement: {_e(result.object)})</h3>",
                  _estimate_table(result, "phi"),
                  f"<p>Koo &amp; Li label: {_e(result.method)} <b>{koo_li_label(row['reml'])}</b>, posterior median "
                  f"<b>{koo_li_label(row['median'])}</b>. Posterior probability of each band: "
                  + ", ".join(f"{k} {v:.2f}" for k, v in result.bayes.phi()["bands"].items()) + ".</p>",
                  _image(plots.phi_figure(result))]
        if (result.estimates["quantity"] == "phi_observed").any():
            parts += [f"<h3>Reliability &phi; on the observation scale (two 0/1 scores of the same "
                      f"{_e(result.object)})</h3>", _estimate_table(result, "phi_observed")]
        if spec.facets:
            parts.append(_d_study(spec, result))
    if result.tests:
        columns = ["h1", "h0", "chi2", "df", "p", "reference", "p_asymptotic", "reason", "loo_elpd_diff", "loo_se"]
        tests = pd.DataFrame(result.tests)
        parts.append("<h3>Likelihood-ratio test (ML) and leave-one-item-out LOO (elpd of H1 minus H0)</h3>"
                     + _frame(tests[[c for c in columns if c in tests]]))
    if result.contrasts is not None:
        name, fit = _contrast_reference(result.contrasts)
        parts += [f"<h3>Contrasts: {_e(name)} ({fit} fit, Holm within each family) and posterior</h3>",
                  _frame(_interval_columns(result.contrasts.drop(columns=["z"], errors="ignore"), result.prob, name)),
                  _image(plots.forest_plot(result.contrasts, prob=result.prob))]
    if result.means is not None and result.by and "post_median" in result.means and "estimate" in result.means \
            and spec.by in result.means:
        parts.append(_image(plots.interaction_plot(result.means, result.factor, result.by,
                                                   result.reml.formula.split("~")[0].strip(), prob=result.prob)))
    parts.append(_diagnostics(result))
    return "\n".join(parts)


def _planning(spec: Spec, rows: pd.DataFrame | None, result) -> str:
    """Power for the next evaluation of the closest pair of levels, with these data as the pilot (closed form,
    ``plan.next_evaluation``); for a comparison that is not planned the section says why."""
    from .plan.figures import power_curves
    from .plan.next_evaluation import next_evaluation

    if result.means is None or result.by is not None:
        return ""
    heading = "<h3>Planning the next evaluation: power for the closest pair of levels</h3>"
    if rows is None:
        return heading + "<p>Not planned here: the pilot's facets and their nesting are read from the rows in " \
                         "memory (<code>--engine memory</code>).</p>"
    planned = next_evaluation(spec.formula, rows, result.factor, result.means, result.object, result.method != "REML")
    if planned.table is None:
        return heading + f"<p>Not planned here: {_e(planned.reason)}.</p>"
    c, assumptions = planned.contrast, planned.pilot.assumptions
    facets = [f for f in planned.table.columns if f in assumptions.structure.facets]
    by = {facets[1]: sorted(set(planned.table[facets[1]]))} if len(facets) > 1 else None
    counts = planned.table[facets[0]]
    figure = power_curves(assumptions, facets[0], [max(2, int(counts.min()) // 2), 2 * int(counts.max())], by=by)
    return (heading
            + f"<p>The contrast {_e(c.level_b)} &minus; {_e(c.level_a)} (estimate {planned.estimate:.4g}, SE "
              f"{planned.std_error:.3g}) taken as the true effect, the REML components of these data as the truth, "
              f"and the design scaled: the closed-form power at &alpha; = 0.05 of the test the package would run "
              f"(Kenward&ndash;Roger where fewer than 50 levels carry the contrast, else Wald z), components "
              f"estimated at zero included. <code>bayesrepro plan</code> simulates it, finds the cheapest allocation "
              f"and the assurance.</p>"
            + _frame(planned.table) + _image(figure))


def _model_checks(portion: Portion, result) -> str:
    """Both engines' model checks (``Fit.check``, ``Posterior.check``): their tests, findings and figures."""
    from .model_checks.comparison import comparison_checks

    heading = "<h3>Model checks: the data against data simulated from each engine's model</h3>"
    if portion.rows is None:
        return heading + "<p>Not checked here: model checks simulate the rows in memory (<code>--engine memory</code>).</p>"
    parts = [heading, "<p>Every test reads its statistic against the same statistic of the simulated data sets "
                      "(Monte-Carlo p-values, Holm-adjusted over the tests of a check; flagged below 5 %). Quantile "
                      "residuals are uniform when the model is right, for 0/1 scores too.</p>"]
    for check in comparison_checks(portion.frame, result, result.prob):
        if isinstance(check, str):
            parts.append(f"<h4>Posterior</h4><p>Not checked: {_e(check)}.</p>")
            continue
        title = "REML/ML fit" if check.engine == "frequentist" else "Posterior (posterior predictive draws)"
        verdict = ("<p class='flag'>Some checks reject the model.</p>" if check.flagged
                   else "<p class='ok'>No check rejects the model.</p>")
        findings = check.to_dict()
        items = [t["finding"] for t in findings["tests"]] + [f"{f['figure']}: {f['finding']}"
                                                             for f in findings["figures"]]
        parts += [f"<h4>{title}</h4>", verdict, _frame(check.tests.drop(columns="finding")),
                  "<ul>" + "".join(f"<li>{_e(item)}</li>" for item in items + [f"note: {n}" for n in check.notes])
                  + "</ul>", _image(check.plot())]
    return "\n".join(parts)


def _d_study(spec: Spec, result) -> str:
    from . import plots
    from .bayes.posterior import variance_draws
    from .design.random_design import factor_variances
    from .reliability import d_study

    facet, others = spec.facets[0], spec.facets[1:]
    terms = result.bayes.frame.spec.random_terms
    variances = factor_variances(result.variances, terms)
    draws = {name: values.ravel() for name, values in factor_variances(variance_draws(result.bayes.draws), terms).items()}
    fixed = {others[0]: [1, 3]} if others else None
    level = _level(result.prob)
    rows = []
    for n in (1, 2, 3, 5, 10, 20):
        setting = {facet: n}
        point = float(d_study(variances, result.object, setting)["phi"])
        post = pd.Series(d_study(draws, result.object, setting)["phi"]).quantile(
            [0.5, (1 - result.prob) / 2, (1 + result.prob) / 2]).to_numpy()
        rows.append({f"n {facet}": n, f"phi ({result.method})": point, "posterior median": post[0],
                     f"posterior {level} low": post[1], f"posterior {level} high": post[2]})
    figure = plots.d_study_curves(variances, result.object, facet, fixed=fixed, posterior=draws,
                                  prob=result.prob, method=result.method)
    return (f"<h3>D-study: &phi; of the mean over n levels of {_e(facet)}</h3>" + _frame(pd.DataFrame(rows)) + _image(figure))


def _diagnostics(result) -> str:
    d = result.bayes.diagnostics
    status = "converged" if d.converged else "NOT converged"
    parts = ["<h3>Diagnostics</h3>",
             f"<p>{_e(result.method)}: {'converged' if result.reml.converged else 'NOT converged: ' + _e(result.reml.message)}; "
             f"at the boundary (variance exactly 0): {_e(', '.join(result.reml.boundary) or 'none')}; "
             f"bootstrap refits failing the convergence test: {result.bootstrap_unconverged} of {len(result.bootstrap)}.</p>",
             f"<p>Posterior ({result.bayes.backend} backend): {status}: {_e(d.line())}.</p>",
             _frame(d.table.reset_index(names="parameter")),
             "<h3>Priors</h3>", _frame(result.bayes.prior_table)]
    parts += [f"<p>note: {_e(n)}</p>" for n in result.notes + list(result.bayes.notes)]
    return "\n".join(parts)


def _estimate_table(result, quantity: str) -> str:
    rows = result.estimates[result.estimates["quantity"] == quantity].drop(columns="quantity")
    level = _level(result.prob)
    rows = rows.rename(columns={"reml": result.method, "boot_low": f"bootstrap {level} low", "boot_high": f"bootstrap {level} high",
                                "median": "posterior median", "low": f"posterior {level} low",
                                "high": f"posterior {level} high"})
    return _frame(rows)


def _contrast_reference(contrasts: pd.DataFrame) -> tuple[str, str]:
    """What the contrasts' tests and intervals were read against ("Wald z", "Kenward-Roger t"…), and the fit."""
    from .plots import interval_reference

    on_reml = "reference" in contrasts and contrasts["reference"].astype(str).str.endswith("(REML)").any()
    return interval_reference(contrasts), "REML" if on_reml else "ML"


def _interval_columns(contrasts: pd.DataFrame, prob: float, reference: str) -> pd.DataFrame:
    """The contrast table with the reference and level of each interval in its column names."""
    level = _level(prob)
    return contrasts.rename(columns={"low": f"{reference} 95 % low", "high": f"{reference} 95 % high",
                                     "post_low": f"posterior {level} low", "post_high": f"posterior {level} high"})


def _level(prob: float) -> str:
    return f"{100 * prob:g} %"


def _versions() -> str:
    rows = [("python", platform.python_version())]
    for name in VERSIONED:
        try:
            rows.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            rows.append((name, "not installed"))
    cells = "".join(f"<tr><th>{k}</th><td>{_e(v)}</td></tr>" for k, v in rows)
    return f"<h2>Package versions</h2><table class='meta'>{cells}</table>"


def _frame(table: pd.DataFrame) -> str:
    # escape=True: pandas escapes <, > and & in every cell and header (quotes are harmless in element text)
    return table.to_html(index=False, border=0, float_format=lambda v: f"{v:.4g}", na_rep="", escape=True)


def _image(figure) -> str:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=110)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f"<p><img alt='{_e(figure.axes[0].get_title())}' src='data:image/png;base64,{encoded}'></p>"


def _e(text) -> str:
    return html.escape(str(text), quote=True)
