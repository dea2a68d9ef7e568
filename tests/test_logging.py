"""Notes and progress are records of the ``bayesrepro`` logger and warnings of the package's own categories: a Python
caller's stderr stays clean unless logging is set up or progress is asked for; the command line prints them as
``bayesrepro: ...`` lines."""

import logging
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from bayesrepro import progress
from bayesrepro.errors import BayesreproWarning

ROOT = Path(__file__).resolve().parents[1]


def test_a_path_line_is_a_log_record_and_nothing_is_printed_unless_asked(caplog, capsys):
    progress.announce_path("exact REML")                       # under pytest stderr is no terminal
    assert capsys.readouterr().err == "" and not caplog.records
    with caplog.at_level(logging.INFO, logger="bayesrepro"):
        progress.announce_path("exact REML")
        progress.announce_path("moments", enabled=False)         # progress=False: not even a record
    assert [(r.name, r.levelno, r.getMessage()) for r in caplog.records] == [
        ("bayesrepro.progress", logging.INFO, "path: exact REML")]
    assert capsys.readouterr().err == ""


def test_a_notebook_prints_no_path_line_by_default(monkeypatch, capsys):
    monkeypatch.setattr(progress, "in_notebook", lambda: True)
    progress.announce_path("exact REML")
    assert capsys.readouterr().err == ""


def test_progress_asked_for_is_printed_without_any_logging_set_up(capsys):
    progress.announce_path("exact REML", enabled=True)
    progress.sampling_lines()("0/400")
    path, sampling = capsys.readouterr().err.splitlines()
    assert path == "bayesrepro: path: exact REML"
    assert re.fullmatch(r"bayesrepro: sampling: 0/400 draws, \d+ s", sampling)


def test_the_command_lines_handler_prints_notes_and_only_the_wanted_progress(capsys):
    with progress.lines_on_stderr():
        progress.announce_path("not wanted")                      # no --progress, stderr no terminal
        progress.announce_path("wanted", enabled=True)
        progress.LOGGER.info("a note")
    assert capsys.readouterr().err == "bayesrepro: path: wanted\nbayesrepro: a note\n"
    progress.LOGGER.info("after the command")                    # the handler is gone with the block
    assert capsys.readouterr().err == ""


@pytest.fixture
def unfinished_run_logs(tmp_path):
    """lm-eval logs of one finished run and one whose samples file is missing (a run that did not finish)."""
    from tests.test_harness_lm_eval import write_run

    write_run(tmp_path)
    write_run(tmp_path, date="2026-01-02T10-00-00.000000", seed=2)
    next(tmp_path.rglob("samples_*2026-01-02T10-00-00.000000.jsonl")).unlink()
    return tmp_path


def test_a_skipped_run_warns_a_python_caller_and_is_one_line_on_the_command_line(unfinished_run_logs, capsys):
    import bayesrepro as br

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        table = br.read(f"lm-eval:{unfinished_run_logs}")
    assert len(table) > 0 and capsys.readouterr().err == ""
    assert [w.category for w in caught] == [BayesreproWarning] and "skipped '" in str(caught[0].message)
    run = subprocess.run([sys.executable, "-m", "bayesrepro", "import", "lm-eval", str(unfinished_run_logs), "--out",
                          str(unfinished_run_logs / "t.csv")], capture_output=True, text=True, cwd=ROOT,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=300)
    assert run.returncode == 0, run.stderr
    assert run.stderr.startswith("bayesrepro: skipped '") and run.stderr.count("\n") == 1
