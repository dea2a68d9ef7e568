"""A name the file system cannot look up (here: longer than a file name may be) is refused in one line by every
reader: the data engines, and the harness logs."""

import pytest

from bayesrepro.cli import main
from bayesrepro.errors import EXIT_BAD_INPUT

TOO_LONG = "x" * 300


@pytest.mark.parametrize("engine", ["auto", "memory", "duckdb"])
def test_a_data_path_too_long_is_refused_by_every_engine(engine, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status = main(["vca", f"{TOO_LONG}.csv", "--formula", "y ~ 1 + (1|a)", "--engine", engine])
    err = capsys.readouterr().err
    assert status == EXIT_BAD_INPUT
    assert err.count("\n") == 1 and "cannot be opened: File name too long" in err


@pytest.mark.parametrize("argv", [["import", "lm-eval", TOO_LONG, "--out", "scores.parquet"],
                                  ["vca", f"lm-eval:{TOO_LONG}", "--formula", "y ~ 1 + (1|a)"]])
def test_a_log_path_too_long_is_refused(argv, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status = main(argv)
    err = capsys.readouterr().err
    assert status == EXIT_BAD_INPUT
    assert err.count("\n") == 1 and "cannot be opened: File name too long" in err
