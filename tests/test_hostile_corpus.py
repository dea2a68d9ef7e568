"""A fixed corpus of hostile inputs, each replayed in a process of its own with a time limit.

In-process fuzzing (``test_fuzz``) cannot see an abort of a native library
(the process dies) or a run that never ends. Here every case runs in a child
process forked from a server that has imported the package once (so a case
costs a fork, not an interpreter start-up), with stdout and stderr captured at
the file-descriptor level, so that anything a native library prints shows too.
A case passes when its process exits by itself within the limit with status 0,
2 or 3, and a refusal is one line ``bayesrepro: error: ...``; a signal (an
abort), the limit (a hang), status 1 (an internal error) or a traceback fail it.

The default run replays the cases that must be refused while the options are
parsed or the data read (a second or less each); the slow run adds the tops of
the ranges, which run for real and must finish within the limit.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import shutil
import sys
from pathlib import Path

import pandas as pd
import pytest

from bayesrepro import cli
from bayesrepro.errors import EXIT_BAD_INPUT, EXIT_NOT_CONVERGED, EXIT_OK

sys.path.insert(0, str(Path(__file__).parent))
from hostile_runner import run_case, sleep_forever  # noqa: E402

QUICK_LIMIT = 120      # seconds: a refusal takes well under one, but the machine may be busy
RUNNING_LIMIT = 900    # seconds: the top of a range runs for real and must finish in minutes
PRELOAD = ["hostile_runner"]


# --- running one case in its own process ----------------------------------------------------------

@pytest.fixture(scope="module")
def processes():
    """Processes forked from one server that has imported the package and built the parser once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    # the server is a fresh interpreter: it finds hostile_runner through PYTHONPATH (its preload ignores sys.path)
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parent), *sys.path])
    try:
        yield context
    finally:
        if previous is None:
            del os.environ["PYTHONPATH"]
        else:
            os.environ["PYTHONPATH"] = previous


def replay(context, argv, cwd: Path, limit: float):
    """(exit code or None if it hung, stdout, stderr) of one case."""
    out_path, err_path = cwd / ".case.out", cwd / ".case.err"
    for path in (out_path, err_path):
        path.unlink(missing_ok=True)
    process = context.Process(target=run_case, args=(argv, str(cwd), str(out_path), str(err_path)))
    process.start()
    process.join(limit)
    if process.is_alive():
        process.kill()
        process.join()
        code = None
    else:
        code = process.exitcode
    read = lambda path: path.read_text(errors="replace") if path.exists() else ""  # noqa: E731
    return code, read(out_path), read(err_path)


def assert_survived(argv, code, out, err, limit):
    assert code is not None, f"{argv} did not finish within {limit} s"
    assert code >= 0, f"{argv} was killed by signal {-code} (an abort of a native library)\n{err[-2000:]}"
    assert code in (EXIT_OK, EXIT_BAD_INPUT, EXIT_NOT_CONVERGED), (argv, code, err[-2000:])
    assert "Traceback" not in err, (argv, err[-2000:])
    lines = [line for line in err.splitlines() if line.strip()]
    if code == EXIT_BAD_INPUT or any(line.startswith("bayesrepro: error:") for line in lines):
        assert len(lines) == 1 and lines[0].startswith("bayesrepro: error: ") and not out.strip(), (argv, err, out)
    else:
        assert out.strip() and all(line.startswith("bayesrepro: ") for line in lines), (argv, err)


# --- the corpus -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def corpus_dir(tmp_path_factory):
    from test_fuzz import fixture_frame

    folder = tmp_path_factory.mktemp("hostile")
    frame = fixture_frame()
    frame.to_csv(folder / "rows.csv", index=False)
    shutil.copy(folder / "rows.csv", folder / "<script>alert(1)<script>.csv")
    shutil.copy(folder / "rows.csv", folder / "new\nline.csv")
    os.mkfifo(folder / "fifo.csv")                 # opening it for reading waits for a writer forever
    os.symlink("/dev/zero", folder / "zero.csv")    # endless NUL bytes
    os.symlink(folder / "loop.csv", folder / "loop.csv")
    (folder / "dir.csv").mkdir()
    os.mkfifo(folder / "fifo.html")
    os.mkfifo(folder / "fifo.png")
    (folder / "out").mkdir()
    hostile = frame.rename(columns={"system": "__class__", "seed": "os.system", "rater": "<script>x</script>"})
    hostile["item"] = [["'; DROP TABLE x; --", "{0}", "%s%n", "\x1b[31mred", "a" * 5000, "NA"][k % 6] + str(k % 12)
                       for k in range(len(hostile))]
    hostile.to_csv(folder / "hostile.csv", index=False)
    pd.DataFrame({"score": [1e200, -3e200, 2e200, 5e199] * 9, "item": [f"i{k % 12}" for k in range(36)]}).to_csv(
        folder / "huge.csv", index=False)
    pd.DataFrame({f"c{k}": [k] for k in range(20_000)}).to_csv(folder / "wide.csv", index=False)
    template = ('title = "t"\nanalysis = "comparison"\n[columns]\nscore = "score"\nitem = "item"\nsystem = "system"\n'
                '[model]\nh0 = "{score} ~ 1 + (1|{item})"\nh1 = "{score} ~ {system} + (1|{item})"\nfactor = "{system}"\n')
    specs = {
        "format.toml": template.replace('h0 = "{score}', 'h0 = "{score:>999999999999}'),
        "conversion.toml": template.replace('h0 = "{score}', 'h0 = "{score!r}'),
        "attribute.toml": template.replace('h0 = "{score}', 'h0 = "{score.__class__.__init__.__globals__}'),
        "columns.toml": 'title = "t"\nanalysis = "comparison"\ncolumns = 5\n',
        "model.toml": 'title = "t"\nanalysis = "comparison"\nmodel = 7\n',
        "derive.toml": 'title = "t"\nanalysis = "comparison"\nderive = 5\n',
        "binary.toml": "\x00\x01\x02",
        "script.toml": template.replace('title = "t"', 'title = "<script>alert(1)</script>"'),
    }
    for name, text in specs.items():
        (folder / name).write_text(text)
    os.mkfifo(folder / "fifo.toml")
    # integer labels a double cannot tell apart (2**53 and 2**53 + 1), as a fixed and a grouping term
    labels = frame.assign(rid=[2**53 + (k // 3) % 2 for k in range(len(frame))])
    labels.to_csv(folder / "labels53.csv", index=False)
    harness_logs(folder)
    frame.rename(columns={"item": ODD, "system": "a`b"}).to_csv(folder / "odd_names.csv", index=False)
    from test_readers import late_surrogate_csv

    (folder / "surrogate.csv").write_bytes(late_surrogate_csv(quoted=True))
    from test_readers import long_field_csv

    (folder / "long_field.csv").write_bytes(long_field_csv(3_000_000, quoted=True))
    (folder / "surrogate.jsonl").write_text('{"score": 1, "item": "a"}\n{"score": 2, "item": "b\\udc00"}\n')
    return folder


ODD = 'x") TO \'out.csv\'; --'   # legal in a CSV header


def harness_logs(folder: Path) -> None:
    """Harness logs that once crashed the import: model_args nested hundreds deep, a forged ZIP64 size."""
    from test_harness_inspect import forge_zip64_sizes, write
    from test_harness_lm_eval import LmEvalTask, documents, write_run

    nested = value = {}
    for _ in range(700):
        value["a"] = {}
        value = value["a"]
    value["r"] = 8
    write_run(folder / "deep_args", model_args={"pretrained": "m", "peft": nested})
    for member in ("header.json", "summaries.json"):
        path = write(folder / f"forged_{member}.eval")
        forge_zip64_sizes(path, member, packed=2**62)
    # two runs of one model and date in two folders; filters a-b and a_b of one metric
    write_run(folder / "two_folders" / "a", seed=1)
    write_run(folder / "two_folders" / "b", seed=2)
    task = LmEvalTask("gsm", documents(4))
    write_run(folder / "filters", task=task, scores={"acc,a-b": [1.0, 0.0, 0.0, 1.0], "acc,a_b": [1.0, 1.0, 0.0, 1.0]})
    # an Inspect score written as a bare value
    log = write(folder / "bare_score.json")
    payload = json.loads(log.read_text())
    payload["samples"][1]["scores"]["match"] = "I"
    log.write_text(json.dumps(payload))


def count_options():
    parser = cli.build_parser()
    (action,) = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
    return [(name, a.option_strings[-1], a.type.limit) for name, command in action.choices.items()
            for a in command._actions if hasattr(a.type, "limit")]


TER = ["--formula", "score ~ system + (1|item)"]
PLAN = ["--formula", "score ~ system + (1|item) + (1|system:seed)", "--contrast", "system=B-A"]
PAIR = ["--item", "item", "--system", "system", "--score", "score", "--a", "A", "--b", "B", "--instance", "seed"]


def quick_cases(values=(10**12,)):
    """Cases refused while the options are parsed or the data read."""
    cases = [[command, "rows.csv", flag, str(value)] for command, flag, _ in count_options() for value in values]
    cases += [
        # paths that are not plain files
        ["vca", "fifo.csv", *TER], ["vca", "fifo.csv", *TER, "--engine", "duckdb"], ["vca", "zero.csv", *TER],
        ["vca", "loop.csv", *TER], ["vca", "dir.csv", *TER], ["vca", "/dev/null", *TER],
        ["vca", "<script>alert(1)<script>.csv", *TER, "--object", "<script>"],
        ["vca", "new\nline.csv", *TER, "--where", "item == '\n'"],
        ["report", "rows.csv", "--spec", "minimal_phi", "--column", "score=score", "--column", "item=item",
         "--out", "fifo.html"],
        ["report", "rows.csv", "--spec", "minimal_phi", "--out", "out"],
        ["plan", "rows.csv", *PLAN, "--vary", "item=6", "--plot", "fifo.png"],
        # hostile columns, levels and conditions
        ["vca", "hostile.csv", "--formula", "score ~ 1 + (1|item) + (1|__class__)"],
        ["vca", "hostile.csv", "--formula", "score ~ 1 + (1|item) + (1|os.system)"],
        ["vca", "hostile.csv", "--formula", "score ~ __import__('os').system('touch pwned') + (1|item)"],
        ["vca", "hostile.csv", "--formula", "score ~ 1 + (1|item)", "--where", "__class__.__init__.__globals__"],
        ["vca", "hostile.csv", "--formula", "score ~ 1 + (1|item)", "--where", "@os"],
        ["vca", "hostile.csv", "--formula", "score ~ 1 + (1|item)", "--where", "item == '%s%n0'"],
        ["vca", "hostile.csv", "--formula", "score ~ 1 + (1|item)", "--categorical", "score"],
        ["agreement", "hostile.csv", "--item", "item", "--rater", "<script>x</script>", "--score", "score"],
        ["vca", "huge.csv", "--formula", "score ~ 1 + (1|item)"],
        ["vca", "wide.csv", "--formula", "c0 ~ 1 + (1|c1)"],
        ["vca", "rows.csv", "--formula", "score ~ 1 + (1|item:seed) + (1|system)"],
        ["vca", "rows.csv", "--formula", "score ~ " + " + ".join(["x"] * 2000) + " + (1|item)"],
        ["vca", "rows.csv", "--formula", "score ~ " + "(" * 5000 + "x" + ")" * 5000 + " + (1|item)"],
        # integers beyond 2**53 as labels, under every engine
        *[["vca", "labels53.csv", "--formula", formula, "--engine", engine]
          for formula in ("score ~ rid + (1|item) + (1|seed)", "score ~ 1 + (1|item) + (1|rid)")
          for engine in ("memory", "duckdb")],
        # harness logs that once crashed the import
        ["import", "lm-eval", "deep_args", "--out", "out/deep.parquet"],
        *[["import", "inspect", f"forged_{member}.eval", "--out", "out/forged.parquet"]
          for member in ("header.json", "summaries.json")],
        ["vca", "inspect:forged_summaries.json.eval", "--formula", "match ~ 1 + (1|item)"],
        ["import", "lm-eval", "two_folders", "--out", "out/two.parquet"],
        ["import", "lm-eval", "filters", "--out", "out/filters.parquet"],
        ["import", "inspect", "bare_score.json", "--out", "out/bare.parquet"],
        # odd but legal names, in backticks in --formula, --object and --where, under every engine
        *[["vca", "odd_names.csv", "--formula", f"score ~ 1 + (1|`{ODD}`) + (1|seed)", "--object", f"`{ODD}`",
           "--where", f"`{ODD}` != 'NA' and score > -9", "--engine", engine] for engine in ("memory", "duckdb")],
        ["vca", "odd_names.csv", "--formula", "score ~ `a`b` + (1|seed)"],
        ["vca", "odd_names.csv", "--formula", "score ~ `a``b` + (1|seed)"],
        ["vca", "rows.csv", "--formula", "score ~ " + " + ".join(["seed"] * 3000) + " + (1|item)"],
        # a lone surrogate, in a CSV and as a JSON escape
        *[["vca", name, "--formula", "score ~ 1 + (1|item)", "--engine", engine]
          for name in ("surrogate.csv", "surrogate.jsonl", "long_field.csv") for engine in ("memory", "duckdb")],
        # spec files
        *[["report", "rows.csv", "--spec", name, "--out", "out/r.html"]
          for name in ("format.toml", "conversion.toml", "attribute.toml", "columns.toml", "model.toml",
                       "derive.toml", "binary.toml", "fifo.toml", "../../../etc/passwd")],
        # products of counts that each pass alone
        ["phi", "rows.csv", *TER, "--chains", "64", "--draws", "100000"],
        ["phi", "rows.csv", *TER, "--tune", "0"],   # nutpie panics without a tuning step
        ["compare", "rows.csv", *TER, "--draws", "100000", "--tune", "1000", "--chains", "4"],
        ["plan", "rows.csv", *PLAN, "--vary", "item=6,12", "--simulations", "2501"],
        ["plan", "rows.csv", *PLAN, "--vary", "item=" + ",".join(map(str, range(1, 3001))),
         "--vary", "seed=" + ",".join(map(str, range(1, 3001)))],
        ["plan", "rows.csv", *PLAN, "--vary", "item=1000000", "--simulations", "10000"],
        ["budget", "rows.csv", "--score", "score", "--config", "item", "--budgets", "1000000", "--resamples", "10000000"],
        ["circularity", "rows.csv", "--prediction", "pred", "--features", "x", "score", "--max-size", "1000"],
    ]
    return cases


def running_cases():
    """The tops of the ranges, run for real: each must finish within RUNNING_LIMIT or be refused."""
    return [
        ["bootstrap", "rows.csv", *PAIR, "--resamples", "10000000"],
        ["permutation", "rows.csv", *PAIR, "--resamples", "10000000"],
        ["bootstrap", "rows.csv", *PAIR, "--resamples", "10000000", "--instances", "multi"],
        ["budget", "rows.csv", "--score", "score", "--config", "item", "seed", "--resamples", "10000000"],
        ["glrt", "rows.csv", "--h0", "score ~ 1 + (1|item)", "--h1", "score ~ system + (1|item)",
         "--reference", "bootstrap", "--bootstrap-samples", "10000"],
        ["vca", "rows.csv", "--formula", "correct ~ 1 + (1|item)", "--nagq", "25"],
        ["phi", "rows.csv", *TER, "--draws", "99999", "--tune", "1", "--chains", "4", "--seed", "1"],
        ["plan", "rows.csv", *PLAN, "--vary", "item=6,12", "--simulations", "2500", "--workers", "2"],
        ["plan", "rows.csv", *PLAN, "--vary", "item=1000000", "--simulations", "10"],
        ["compare", "rows.csv", *TER, "--bootstrap", "5000", "--draws", "1000", "--chains", "2", "--seed", "1"],
    ]


def _case_id(argv) -> str:
    return " ".join(argv)[:80]


@pytest.mark.parametrize("argv", quick_cases(), ids=_case_id)
def test_a_hostile_input_ends_in_one_line_without_abort_or_hang(argv, processes, corpus_dir):
    code, out, err = replay(processes, argv, corpus_dir, QUICK_LIMIT)
    assert_survived(argv, code, out, err, QUICK_LIMIT)
    assert not (corpus_dir / "pwned").exists()


@pytest.mark.slow
@pytest.mark.parametrize("argv", quick_cases(values=(10**30, -1, "1e12", "nan", "", "0x10", "1_000", "٣")) +
                         running_cases(), ids=_case_id)
def test_hostile_inputs_and_the_tops_of_the_ranges(argv, processes, corpus_dir):
    code, out, err = replay(processes, argv, corpus_dir, RUNNING_LIMIT)
    assert_survived(argv, code, out, err, RUNNING_LIMIT)


def test_a_hang_and_an_abort_are_seen(processes):
    """The harness itself: a child that blocks or aborts is reported, not waited for or taken for a success."""
    context = processes
    sleeper = context.Process(target=sleep_forever)
    sleeper.start()
    sleeper.join(1)
    assert sleeper.is_alive()
    sleeper.kill()
    sleeper.join()
    aborter = context.Process(target=os.abort)
    aborter.start()
    aborter.join(60)
    assert aborter.exitcode == -6
    with pytest.raises(AssertionError, match="killed by signal 6"):
        assert_survived(["x"], -6, "", "", 1)
    with pytest.raises(AssertionError, match="did not finish within 1 s"):
        assert_survived(["x"], None, "", "", 1)
