"""Every public result displays in a notebook as HTML tables, its user strings escaped, and reads, from Python, in
Python's words: a headless browser renders each result built on data whose labels are markup, and every text a
Python caller reads (summary, notes, flags, warnings, the HTML) is scanned for command-line options.

The rendering check runs only where Debian's `chromium` is installed (apt-get install chromium).
"""

import inspect
import re
import shutil
import subprocess
import warnings

import numpy as np
import pandas as pd
import pytest

import bayesrepro as br
from bayesrepro.api.display import Result, notes_in

# labels that are markup: shown as text, or the display let a user string through unescaped
SYSTEM_A, SYSTEM_B = "<b>A</b>", "<i>B</i> & co"
ITEM_PREFIX = "<script>alert('item')</script>"
RATER_PREFIX = "<img src=x onerror=alert(1)>"
# a command-line option, as a note written for the command line names it (--object); not a formula's "- -"
OPTION = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def _scores(seed: int = 1, items: int = 40, seeds: int = 3) -> pd.DataFrame:
    """Gaussian scores of two systems, each with a few trained seeds, on the same items."""
    rng = np.random.default_rng(seed)
    rows = [(f"{ITEM_PREFIX}{i}", system, f"s{k}") for i in range(items) for system in (SYSTEM_A, SYSTEM_B)
            for k in range(seeds)]
    frame = pd.DataFrame(rows, columns=["item", "system", "seed"])
    item_effect = rng.normal(0, 1.0, items)[frame.index // (2 * seeds)]
    frame["score"] = item_effect + 0.4 * (frame["system"] == SYSTEM_B) + rng.normal(0, 0.5, len(frame))
    return frame


def _binary() -> pd.DataFrame:
    grid = br.simulate_binary_grid(items=60, seeds=3, prompts=2, random_state=3)
    levels = {name: label for name, label in zip(sorted(grid["system"].unique()), (SYSTEM_A, SYSTEM_B, "C"))}
    return grid.assign(system=grid["system"].map(levels), item=ITEM_PREFIX + grid["item"].astype(str))


def _ratings() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    truth = rng.normal(size=30)
    return pd.DataFrame([(f"{ITEM_PREFIX}{u}", f"{RATER_PREFIX}{r}", truth[u] + rng.normal(0, 0.5))
                         for u in range(30) for r in range(4)], columns=["unit", "rater", "value"])


@pytest.fixture(scope="module")
def results():
    """One of every public result, on data whose labels are markup, with the warnings their calls raised."""
    data = _scores()
    model = br.Model("score ~ system + (1|item) + (1|system:seed)", data)   # the object chosen by default: a note
    short = dict(draws=200, tune=200, chains=2, allow_unconverged=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = {
            "Fit": model.fit(),
            "GlrtTest": model.glrt(h0="score ~ 1 + (1|item) + (1|system:seed)", bootstrap_samples=100, seed=1),
            "Posterior": model.sample(seed=1, **short),
            "LevelEffects": model.effects(),
            "Ranking": model.rank(factor="system", n_boot=100, seed=1, **short),
            "ModelCheck": model.fit().check(seed=0, simulations=99),
            "Comparison": model.compare(n_boot=100, seed=1, **short),
            "PowerPlan": model.plan(vary={"seed": [2, 5]}, simulations=0),
            "Baselines": br.baselines(_binary(), score="correct", item="item", system="system"),
            "ResamplingTest": br.bootstrap(data, item="item", system="system", score="score", a=SYSTEM_A, b=SYSTEM_B,
                                           instance="seed", resamples=200, seed=1),
            "Budget": br.budget(data, "score", ["system", "seed"], budgets=[1, 2, 4], resamples=200, seed=1),
            "Agreement": br.agreement(_ratings(), "unit", "rater", "value", level="interval"),
            "Circularity": br.circularity(br.simulate_liver_sofa(300, max_depth=3, seed=1), "with_bilirubin",
                                          ["bilirubin", "inr", "albumin"], defining=["bilirubin"]),
        }
    return built, [str(w.message) for w in caught]


def test_every_public_result_is_covered(results):
    public = {name for name in br.__all__
              if inspect.isclass(getattr(br, name)) and issubclass(getattr(br, name), Result)}
    assert public == set(results[0]), "add an example of each public result to the fixture"


def test_every_result_displays_as_tables_with_its_header_and_notes(results):
    for name, result in results[0].items():
        shown = result._repr_html_()
        assert shown.count("<table") >= 1 and shown.count("<caption") == shown.count("<table"), name
        assert shown.startswith(f"<div class='bayesrepro-result'><p><strong>{name}</strong>: "), name
        assert "<pre>" not in shown, name
        notes = notes_in(result.to_dict())
        if notes:
            assert "<ul class='bayesrepro-notes'>" in shown and shown.count("<li>") >= len(notes), name
    fit = results[0]["Fit"]._repr_html_()
    for heading in ("<th>variance</th><th>sd</th><th>percent</th>", "<th>estimate</th><th>std_error</th><th>df</th>",
                    "<th>Koo &amp; Li</th>"):
        assert heading in fit
    posterior = results[0]["Posterior"]._repr_html_()
    assert "<th>r_hat</th><th>ess_bulk</th><th>ess_tail</th>" in posterior and "<th>low</th><th>high</th>" in posterior
    assert "<th>chi2</th><th>df</th><th>p</th><th>reference</th>" in results[0]["GlrtTest"]._repr_html_()


def test_no_user_string_reaches_the_html_unescaped(results):
    for name, result in results[0].items():
        shown = result._repr_html_()
        for raw in (SYSTEM_A, "<i>B</i>", "<script>", "<img"):
            assert raw not in shown, f"{name} shows {raw!r} as markup"


def test_python_callers_read_no_command_line_option(results):
    built, caught = results
    assert any("object=" in note for note in built["Fit"].notes), "the fixture should raise the default-object note"
    for name, result in built.items():
        texts = [result.summary(), result._repr_html_(), *notes_in(result.to_dict()), *result.not_converged(),
                 *getattr(result, "notes", []), *getattr(result, "flags", [])]
        for text in texts:
            assert not OPTION.search(text), f"{name}: {OPTION.search(text)[0]} in {text[:300]!r}"
    for message in caught:
        assert not OPTION.search(message), message


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_chromium_renders_each_result_as_tables_and_the_labels_as_text(results, tmp_path):
    page = tmp_path / "results.html"
    body = "".join(f"<section id='{name}'>{result._repr_html_()}</section>" for name, result in results[0].items())
    page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{body}</body></html>",
                    encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(["chromium", *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True,
                         timeout=120).stdout
    sections = re.findall(r"<section id=\"(\w+)\">(.*?)</section>", dom, re.S)
    assert [name for name, _ in sections] == list(results[0])
    for name, html in sections:
        assert "<table" in html and "<td>" in html, name
        # the browser built no element from a label: no script, image, bold or italic element anywhere
        assert not re.search(r"<(script|img|b|i)[\s>]", html), f"{name}: a label became an element"
    # and the systems' labels are there, as text (tables of contrasts, fixed effects and pairs name them)
    assert "&lt;b&gt;A&lt;/b&gt;" in dom and "&lt;i&gt;B&lt;/i&gt; &amp; co" in dom


def _python_examples() -> list:
    """The README's Python examples and those of the documentation's pages, as (where, source) pairs: a page's
    examples run in turn in one namespace, as a reader runs them; an example that reads files of the reader's own
    (``runs/*.parquet``) is left out."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    pages = [root / "README.md", *sorted((root / "docs").rglob("*.md"))]
    examples = []
    for page in pages:
        blocks = [source for source in re.findall(r"```python\n(.*?)```", page.read_text(), re.S)
                  if "runs/*.parquet" not in source]
        if blocks:
            examples.append((str(page.relative_to(root)), "\n".join(blocks)))
    return examples


@pytest.mark.slow
@pytest.mark.parametrize("where, source", _python_examples(), ids=[where for where, _ in _python_examples()])
def test_the_examples_results_name_no_command_line_option(where, source, monkeypatch, tmp_path):
    """Every result the README's and the documentation's examples reach, and every warning they raise, reads in
    Python's words (the notebooks are scanned the same way by tests/test_notebooks.py)."""
    import matplotlib

    from python_wording import Tracking

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)   # an example that writes a file writes it here
    tracking = Tracking().start()
    try:
        exec(compile(source, where, "exec"), {"__name__": "__example__"})
    finally:
        tracking.stop()
    assert tracking.results, f"{where} reached no result"
    assert tracking.options_named() == []
