"""No lost report: writes are whole or nothing, --out is checked before the work, an interrupt writes nothing,
and user strings in the report are text, never markup (checked in headless Chromium where it is installed)."""

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from bayesrepro.cli import main
from bayesrepro.errors import BayesreproError
from bayesrepro.output import check_writable, write_atomic

PREVIOUS = "<html>the previous report</html>"


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".partial"))


def test_a_write_that_fails_midway_leaves_the_previous_file_and_no_temporary(tmp_path, monkeypatch):
    out = tmp_path / "report.html"
    out.write_text(PREVIOUS)

    def full_disk(self, *args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_text", full_disk)
    with pytest.raises(OSError):
        write_atomic(out, "<html>the new report</html>")
    monkeypatch.undo()
    assert out.read_text() == PREVIOUS and _leftovers(tmp_path) == []


@pytest.mark.parametrize("make_target, message", [
    (lambda tmp: tmp / "missing-folder" / "r.html", "does not exist; create it first"),
    (lambda tmp: (tmp / "a-file").write_text("x") and tmp / "a-file" / "r.html", "is a file"),
    (lambda tmp: (tmp / "folder.html").mkdir() or tmp / "folder.html", "is a directory"),
])
def test_an_unwritable_out_is_refused_before_any_work(tmp_path, make_target, message, capsys, monkeypatch):
    import bayesrepro.report

    target = make_target(tmp_path)
    with pytest.raises(BayesreproError, match=message):
        check_writable(target, (".html",))

    def work(*args, **kwargs):
        raise AssertionError("the data were read before --out was checked")

    for reader in ("input_digest", "read_table", "grouped_source"):   # refused up front, not after the analysis
        monkeypatch.setattr(bayesrepro.report, reader, work)
    status = main(["report", "kreutzer_ter", "--spec", "system_comparison", "--out", str(target)])
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and err.startswith("bayesrepro: error:") and "--out" in err


@pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process")
def test_ctrl_c_during_the_report_exits_130_and_keeps_the_previous_report(tmp_path):
    out = tmp_path / "report.html"
    out.write_text(PREVIOUS)
    command = [sys.executable, "-m", "bayesrepro", "report", "kreutzer_ter", "--spec", "system_comparison",
               "--out", str(out), "--bootstrap", "100", "--draws", "40000", "--tune", "100000", "--chains", "2",
               "--progress"]
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONUNBUFFERED": "1"})
    shown = []   # past reading, the REML fit and its bootstrap: the sampler's first progress line
    while not (shown and shown[-1].startswith("bayesrepro: sampling:")):
        line = child.stderr.readline()
        assert line, "".join(shown) + child.communicate()[1]
        shown.append(line)
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    err = "".join(shown) + err
    assert child.returncode == 130, err
    assert err.strip().splitlines()[-1].startswith("bayesrepro: interrupted")
    assert out.read_text() == PREVIOUS and _leftovers(tmp_path) == []


def test_an_interrupted_command_ends_without_the_interpreters_tear_down(monkeypatch):
    import bayesrepro.cli as cli

    class Ended(Exception):
        pass

    def exit_now(status):
        raise Ended(status)

    monkeypatch.setattr(cli, "main", lambda: 130)
    monkeypatch.setattr(cli.os, "_exit", exit_now)
    monkeypatch.setattr(cli.gc, "set_threshold", lambda *thresholds: None)
    monkeypatch.setattr("bayesrepro.runtime.blas_single_threaded_from_start", lambda: None)
    with pytest.raises(Ended, match="130"):   # a sampler's aborted threads could still use what tear-down frees
        cli._main_frozen()
    monkeypatch.setattr(cli, "main", lambda: 0)
    monkeypatch.setattr(cli.gc, "freeze", lambda: None)
    assert cli._main_frozen() == 0


HOSTILE = "<img src=x onerror=\"document.title='PWNED'\"><script>document.title='PWNED'</script>"


@pytest.mark.skipif(shutil.which("chromium") is None, reason="Debian's chromium is not installed")
def test_hostile_names_render_as_text_and_run_no_script(tmp_path):
    folder = tmp_path / "<script>document.title='PWNED'<"
    folder.mkdir()
    rng = np.random.default_rng(3)
    scores = pd.DataFrame({
        "item": [f"i{i}" for i in range(30)] * 4,
        "system": [HOSTILE] * 60 + ["B&<b>bold</b>"] * 60,
        "score": np.tile(rng.normal(0, 0.3, 30), 4) + np.repeat([0.0, 0.2], 60) + rng.normal(0, 0.1, 120),
    })
    data = folder / "scores.csv"
    scores.to_csv(data, index=False)
    out = tmp_path / "report.html"
    status = main(["report", str(data), "--spec", "system_comparison", "--column", "score=score", "--column", "item=item",
                   "--where", "item != 'x<script>'", "--out", str(out), "--bootstrap", "100", "--draws", "300",
                   "--tune", "300", "--chains", "2", "--allow-unconverged"])
    assert status in (0, 3)
    page = out.read_text(encoding="utf-8")
    assert "<script" not in page.lower() and "<img src=x" not in page and "<b>bold" not in page
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update", "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run(["chromium", *flags, "--virtual-time-budget=3000", "--dump-dom", out.as_uri()],
                         capture_output=True, text=True, timeout=120).stdout
    assert "<title>PWNED</title>" not in dom and "<title>" in dom   # the page's own title, untouched by a script
    assert "document.title='PWNED'" in dom                          # the names are shown, as text
