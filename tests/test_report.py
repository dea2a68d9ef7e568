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
    assert summary["sha256"] == digest and digest in page
    assert "7,287" in page and summary["n_rows"] == 7287


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
