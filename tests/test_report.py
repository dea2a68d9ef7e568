"""The HTML report: what it contains, that it is self-contained, and what Chromium renders of it.

The rendering check runs only where Debian's `chromium` is installed (apt-get install chromium);
elsewhere it is skipped.
"""

import base64
import hashlib
import re
import shutil
import subprocess
from importlib import metadata

import numpy as np
import pandas as pd
import pytest

from bayesrepro.datasets import dataset_path
from bayesrepro.errors import BayesreproError
from bayesrepro.bayes.sampling import SamplingSettings
from bayesrepro.report import ReportOptions, write_report

FAST = ReportOptions(n_boot=100, sampling=SamplingSettings(draws=300, tune=300, chains=2, seed=2, allow_unconverged=True))


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report") / "report.html"
    summary = write_report("kreutzer_ter", "conditional_length", out, options=FAST)
    return out, out.read_text(encoding="utf-8"), summary


def test_report_states_data_provenance(report):
    _, page, summary = report
    digest = hashlib.sha256(dataset_path("kreutzer_ter").read_bytes()).hexdigest()
    assert summary.sha256 == digest and digest in page
    assert "7,287" in page and summary.n_rows == 7287


def test_report_shows_exact_formulas_priors_diagnostics_and_versions(report):
    _, page, _ = report
    assert "ter ~ system*len + (1|sentence_id)" in page and "ter ~ system + len + (1|sentence_id)" in page
    assert "HalfStudentT" in page and "HalfNormal" in page        # the priors of the Bayesian model
    assert "R-hat" in page and "bootstrap refits" in page
    assert f"<td>{metadata.version('numpy')}</td>" in page and f"<td>{metadata.version('pymc')}</td>" in page
    assert re.search(r"<td>32\.43</td>", page)                     # published chi2 of the interaction test
    assert "Where the engines disagree" in page


def test_report_is_self_contained_with_embedded_png_figures(report):
    _, page, _ = report
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert len(images) >= 4                                       # VCA bars, phi, forest, interaction
    assert all(base64.b64decode(image)[:8] == b"\x89PNG\r\n\x1a\n" for image in images)
    assert "<script" not in page.lower()
    assert not re.search(r"(src|href)=['\"]?(https?:|//)", page)


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_chromium_renders_the_report(report, tmp_path):
    out, _, _ = report
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(["chromium", *flags, "--dump-dom", out.as_uri()], capture_output=True, text=True, timeout=120)
    assert "Reliability φ" in dom.stdout and "Package versions" in dom.stdout
    shot = tmp_path / "shot.png"
    subprocess.run(["chromium", *flags, f"--screenshot={shot}", "--window-size=1200,3000", out.as_uri()],
                   capture_output=True, timeout=120)
    import matplotlib.image

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (3000, 1200)
    # a page with tables and figures: far from a blank (single-colour) screenshot
    assert np.std(pixels[..., :3]) > 0.05


def test_report_refuses_bad_output_and_missing_columns(tmp_path):
    with pytest.raises(BayesreproError, match="should end in .html"):
        write_report("kreutzer_ter", "system_comparison", tmp_path / "report.pdf", options=FAST)
    with pytest.raises(BayesreproError, match="needs column 'TER' for \\{score\\}"):
        write_report("kreutzer_ter", "system_comparison", tmp_path / "r.html", columns={"score": "TER"}, options=FAST)


def test_a_comparison_report_plans_the_next_evaluation(tmp_path):
    from bayesrepro.plan import analyse_pilot, plan_power

    out = tmp_path / "report.html"
    write_report("kreutzer_ter", "system_comparison", out, options=FAST)
    page = out.read_text(encoding="utf-8")
    assert "Planning the next evaluation: power for the closest pair of levels" in page
    # the closest pair of kreutzer_ter's systems is PostEdit and Marking; the report's power at the pilot's size
    pilot = analyse_pilot("ter ~ system + (1|sentence_id)", "kreutzer_ter", "system=PostEdit-Marking")
    power = plan_power(pilot.assumptions, {"sentence_id": [1041]}, simulations=0).rows[0]["power"]
    assert "PostEdit &minus; Marking" in page and f"<td>{power:.4g}</td>" in page


def test_a_split_spec_through_duckdb_sums_the_same_rows_per_level_as_memory(tmp_path):
    from bayesrepro.data import read_table
    from bayesrepro.design.producers import grouped_source
    from bayesrepro.report import _grouped_portions, _row_portions
    from bayesrepro.specs import load_spec

    path = dataset_path("kreutzer_annotation")
    spec = load_spec("annotation")
    memory = _row_portions(spec, spec.prepare(read_table(str(path), where="rater != 1")))
    duck = _grouped_portions(spec, grouped_source(str(path), "duckdb", where="rater != 1"))
    assert [p.level for p in duck] == [p.level for p in memory] == ["Marking", "Post Edit"]
    for d, m in zip(duck, memory):
        assert d.rows is None and d.frame.n_obs == m.frame.n_obs < 150
        s, t = d.frame.stats(), m.frame.stats()
        np.testing.assert_array_equal(s.rest_gram, t.rest_gram)
        np.testing.assert_allclose(s.rest_zy, t.rest_zy, rtol=1e-10, atol=1e-12)
        assert s.yty == pytest.approx(t.yty, rel=1e-10)


def test_a_report_through_duckdb_refuses_a_derived_column_and_hashes_every_file(tmp_path):
    from bayesrepro.datasets import load_dataset
    from bayesrepro.report import input_digest

    data = load_dataset("kreutzer_ter")
    for k, part in enumerate(np.array_split(np.arange(len(data)), 2)):
        data.iloc[part].to_parquet(tmp_path / f"part{k}.parquet")
    with pytest.raises(BayesreproError, match="derives the column 'len' from 'src_length' on rows in memory; "
                                              "use --engine memory"):
        write_report(str(tmp_path / "part*.parquet"), "conditional_length", tmp_path / "r.html", options=FAST)
    digest, described = input_digest(str(tmp_path / "part*.parquet"))
    joined = (tmp_path / "part0.parquet").read_bytes() + (tmp_path / "part1.parquet").read_bytes()
    assert digest == hashlib.sha256(joined).hexdigest() and "2 files" in described
    with pytest.raises(BayesreproError, match="data file 'nowhere.csv' does not exist"):
        input_digest("nowhere.csv")


@pytest.mark.slow
def test_a_report_over_parquet_files_through_duckdb_matches_the_report_in_memory(tmp_path):
    from bayesrepro import cli
    from bayesrepro.datasets import load_dataset

    data = load_dataset("kreutzer_annotation")
    for k, part in enumerate(np.array_split(np.arange(len(data)), 3)):
        data.iloc[part].to_parquet(tmp_path / f"part{k}.parquet")
    quick = ["--bootstrap", "100", "--draws", "300", "--tune", "300", "--chains", "2", "--seed", "2",
             "--allow-unconverged"]
    assert cli.main(["report", str(tmp_path / "part*.parquet"), "--spec", "annotation", "--engine", "duckdb",
                     "--out", str(tmp_path / "duck.html"), *quick]) in (0, 3)
    assert cli.main(["report", "kreutzer_annotation", "--spec", "annotation", "--out", str(tmp_path / "memory.html"),
                     *quick]) in (0, 3)
    duck, memory = ((tmp_path / name).read_text(encoding="utf-8") for name in ("duck.html", "memory.html"))
    assert "3 files (sha256 of their bytes" in duck and "300" in duck
    # the REML columns of every variance table, rounded to 4 digits as shown, are those of the rows in memory
    assert reml_cells(duck) == reml_cells(memory) and len(reml_cells(duck)) == 2 * 2 * 7


def reml_cells(page: str) -> list[str]:
    """The second cell (REML) of every row of the report's variance and percent tables."""
    tables = re.findall(r"<h3>(?:Variance components|Percent of total variance)</h3>\s*<table.*?</table>", page, re.S)
    return [re.findall(r"<td>(.*?)</td>", row)[1] for table in tables for row in re.findall(r"<tr>(.*?)</tr>", table, re.S)
            if "<td>" in row]


def test_the_planning_section_of_grouped_sums_says_it_needs_the_rows():
    from types import SimpleNamespace

    import pandas as pd

    from bayesrepro.report import _planning
    from bayesrepro.specs import load_spec

    result = SimpleNamespace(means=pd.DataFrame({"system": ["A", "B"], "estimate": [0.1, 0.2]}), by=None,
                             method="REML", factor="system", object="sentence_id")
    section = _planning(load_spec("system_comparison"), None, result)
    assert "Not planned here: the pilot's facets and their nesting are read from the rows in memory" in section
    assert "--engine memory" in section


SEEDS_SPEC = """
title = "Two systems, three seeds each"
analysis = "comparison"

[columns]
score = "score"
item = "item"
system = "system"

[model]
h0 = "{score} ~ 1 + (1|{item}) + (1|{system}:seed)"
h1 = "{score} ~ {system} + (1|{item}) + (1|{system}:seed)"
factor = "{system}"
object = "{item}"
"""


def test_contrast_headings_and_intervals_name_their_reference(tmp_path, report):
    """Seeds nested in systems carry the contrast: Kenward-Roger t intervals on the REML fit, and the page says so."""
    rng = np.random.default_rng(15)
    items, seeds = 40, 3
    item = np.repeat(np.arange(items), 2 * seeds)
    instance = np.tile(np.arange(2 * seeds), items)
    rows = pd.DataFrame({"score": rng.normal(0, 0.1, items)[item] + rng.normal(0, 0.03, 2 * seeds)[instance]
                                  + rng.normal(0, 0.1, len(item)),
                         "item": [f"i{i}" for i in item], "system": np.where(instance < seeds, "A", "B"),
                         "seed": [f"s{i % seeds}" for i in instance]})
    data, spec, out = tmp_path / "seeds.csv", tmp_path / "seeds.toml", tmp_path / "seeds.html"
    rows.to_csv(data, index=False)
    spec.write_text(SEEDS_SPEC)
    write_report(str(data), str(spec), out, options=FAST)
    page = out.read_text(encoding="utf-8")
    assert "Contrasts: Kenward-Roger t (REML fit, Holm within each family) and posterior" in page
    assert "<th>Kenward-Roger t 95 % low</th>" in page and "<th>Kenward-Roger t 95 % high</th>" in page
    assert "Wald z 95 %" not in page and "Contrasts: Wald" not in page
    # items crossed with the systems carry none of the contrast: Wald z on the ML fit
    _, paper, _ = report
    assert "Contrasts: Wald z (ML fit, Holm within each family) and posterior" in paper
    assert "<th>Wald z 95 % low</th>" in paper and "Kenward-Roger" not in paper


def test_report_checks_both_engines_models(report):
    _, page, _ = report
    assert "Model checks: the data against data simulated from each engine" in page
    assert "<h4>REML/ML fit</h4>" in page and "<h4>Posterior (posterior predictive draws)</h4>" in page
    assert page.count("quantile residuals Q-Q: The ordered quantile residuals") == 2


@pytest.mark.slow
def test_the_model_checks_of_a_report_escape_level_names(tmp_path):
    rng = np.random.default_rng(4)
    hostile = "<script>alert(1)</script>"
    items = [hostile] + [f"i{k}" for k in range(1, 30)]
    scores = pd.DataFrame({"item": np.repeat(items, 4), "score": np.repeat(rng.normal(0, 1, 30), 4)
                           + rng.normal(0, 0.5, 120)})
    scores.loc[scores["item"] == hostile, "score"] += 12.0      # an item far in the tail: the finding names it
    data = tmp_path / "scores.csv"
    scores.to_csv(data, index=False)
    out = tmp_path / "report.html"
    write_report(str(data), "minimal_phi", out, columns={"score": "score", "item": "item"}, options=FAST)
    page = out.read_text(encoding="utf-8")
    assert "Some levels of item lie further in the tails" in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; (z = +" in page and "<script" not in page.lower()
