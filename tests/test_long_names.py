"""A name the file system cannot look up (longer than a file name may be, or holding a NUL byte) is refused in one
line by every reader: the data engines, and the harness logs."""

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


@pytest.mark.parametrize("argv, named", [
    (["agreement", "\x00", "--item", "item", "--rater", "seed", "--score", "score"], "argument 2"),
    (["vca", "kreutzer_ter", "--formula", "score ~ system + (1|item\x00)"], "the value of --formula"),
])
def test_a_nul_byte_on_the_command_line_is_refused_naming_the_argument(argv, named, capsys):
    status = main(argv)
    err = capsys.readouterr().err
    assert status == EXIT_BAD_INPUT
    assert err.count("\n") == 1 and err.startswith(f"bayesrepro: error: {named} holds a NUL byte")


@pytest.mark.parametrize("engine", ["auto", "memory", "duckdb"])
def test_a_nul_byte_in_a_data_path_is_refused_by_every_engine(engine):
    import bayesrepro as br

    with pytest.raises(br.BayesreproError, match="its name holds a NUL byte"):
        br.Model("y ~ 1 + (1|a)", "scores\x00.csv", engine=engine).fit()
