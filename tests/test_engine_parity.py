"""DuckDB (and Spark, slow) read what the memory reader reads, or refuse: file names, types, CSV rows, column names.

Each class of difference a hostile probe found has its own tests here; the
property test at the end draws small random frames (types, names, missing
cells, CSV/Parquet/JSON Lines) and asks every engine for the same analysis
or the same refusal.
"""

from __future__ import annotations

import decimal
import json
import math

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayesrepro.design import model_frame
from bayesrepro.errors import BayesreproError

FORMULA = "score ~ system + (1|item)"


def grid(items=8, seed=0, **columns) -> pd.DataFrame:
    """items × two systems × two runs with Gaussian scores, and any further columns given."""
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"item": np.repeat([f"i{k}" for k in range(items)], 4),
                          "system": np.tile(["A", "B"], 2 * items),
                          "score": np.round(rng.normal(size=4 * items), 4)})
    return frame.assign(**columns)


def write(frame: pd.DataFrame, path) -> str:
    """``frame`` as a CSV, Parquet or JSON Lines file (by the suffix of ``path``)."""
    suffix = str(path).rsplit(".", 1)[-1]
    if suffix == "csv":
        frame.to_csv(path, index=False)
    elif suffix == "parquet":
        pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), path)
    else:
        with open(path, "w") as lines:
            for record in frame.to_dict("records"):
                lines.write(json.dumps({k: _json_value(v) for k, v in record.items()}) + "\n")
    return str(path)


def _json_value(value):
    if isinstance(value, (float, np.floating)) and math.isnan(value):
        return None
    return value.item() if isinstance(value, np.generic) else value


def outcome(formula, path, engine, where=None, drop_missing=False, categorical=()):
    """What an engine makes of the data: the frame's statistics, or the refusal's message."""
    try:
        frame = model_frame(formula, str(path), where=where, engine=engine, drop_missing=drop_missing,
                            categorical=categorical, spark_master="local[1]")
    except BayesreproError as exc:
        return ("refused", str(exc))
    stats = frame.stats()
    return ("read", frame.n_obs, tuple(frame.fixed_names), tuple(tuple(g.levels) for g in frame.groups),
            frame.is_binary(), float(stats.yty), tuple(np.round(np.asarray(stats.xty, float), 8)), frame)


def assert_same(engine_outcome, memory_outcome, messages=True):
    assert engine_outcome[0] == memory_outcome[0], (engine_outcome[:2], memory_outcome[:2])
    if engine_outcome[0] == "refused":
        if messages:
            assert engine_outcome[1] == memory_outcome[1]
        return
    assert engine_outcome[1:5] == memory_outcome[1:5]
    assert engine_outcome[5] == pytest.approx(memory_outcome[5], rel=1e-10)
    assert engine_outcome[6] == pytest.approx(memory_outcome[6], rel=1e-8, abs=1e-8)


# --- a file name is a file name -----------------------------------------------------------------

def test_a_file_whose_name_looks_like_a_glob_is_read_as_written(tmp_path):
    write(grid(items=5), tmp_path / "data1.csv")
    write(grid(items=7), tmp_path / "data[1].csv")
    write(grid(items=6), tmp_path / "data*.csv")
    for name, rows in (("data[1].csv", 28), ("data*.csv", 24)):
        memory, duck = (outcome(FORMULA, tmp_path / name, engine) for engine in ("memory", "duckdb"))
        assert memory[1] == rows
        assert_same(duck, memory)
    # a pattern that names no file is a glob, for DuckDB: every match once (data1.csv and data*.csv)
    assert outcome(FORMULA, tmp_path / "data?.csv", "duckdb")[1] == 20 + 24


def test_a_directory_listing_is_not_globbed_again(tmp_path):
    write(grid(items=5), tmp_path / "x1.csv")
    write(grid(items=7), tmp_path / "x[1].csv")
    assert outcome(FORMULA, tmp_path, "duckdb")[1] == 48


def test_a_directory_named_tilde_is_no_home_directory(tmp_path, monkeypatch):
    (tmp_path / "~").mkdir()
    write(grid(items=6), tmp_path / "~" / "x.csv")
    monkeypatch.chdir(tmp_path)
    memory, duck = outcome(FORMULA, "~/x.csv", "memory"), outcome(FORMULA, "~/x.csv", "duckdb")
    assert memory[1] == 24
    assert_same(duck, memory)


def test_a_fifo_is_refused_before_it_is_read(tmp_path):
    import os

    os.mkfifo(tmp_path / "fifo.csv")
    assert outcome(FORMULA, tmp_path / "fifo.csv", "duckdb")[1].endswith("is not a regular file; name a file")


# --- types --------------------------------------------------------------------------------------

@pytest.mark.parametrize("ids", [
    ["2020-01-01", "2020-01-01T00:00:00", "2020-1-1", "01/02/2020", "x", "y"],
    ["6ba7b810-9dad-11d1-80b4-00c04fd430c8", "6BA7B810-9DAD-11D1-80B4-00C04FD430C8", "a", "b", "c", "d"],
    [18446744073709551617, 18446744073709551618, 18446744073709551619, 2**63, 5, 6],
])
def test_json_identifiers_keep_their_text_and_are_never_merged(tmp_path, ids):
    data = grid(items=6).assign(item=np.repeat(np.array(ids, dtype=object), 4))
    path = write(data, tmp_path / "ids.jsonl")
    memory, duck = outcome(FORMULA, path, "memory"), outcome(FORMULA, path, "duckdb")
    assert len(memory[3][0]) == 6
    assert_same(duck, memory)


@pytest.mark.parametrize("line, message", [
    ('{"item": "i1", "system": "A", "score": NaN}', "line 4 holds NaN, which is not JSON"),
    ('{"item": "i1", "system": "A", "score": 1, "g": -Infinity}', "line 4 holds -Infinity, which is not JSON"),
    ('{"item": {"a": 1}, "system": "A", "score": 1}', "holds lists or objects"),
    ('{"item": 7, "system": "A", "score": 1}', "mixes JSON types"),
    ('{"item": "i1", "item": "i2", "system": "A", "score": 1}', "has the key 'item' more than once"),
    ('[1, 2]', "line 4 is a JSON list, not an object"),
    ('{"item": ', "line 4 is not valid JSON"),
])
def test_json_lines_the_memory_reader_refuses_are_refused_by_duckdb(tmp_path, line, message):
    lines = [json.dumps(record) for record in grid(items=6).to_dict("records")]
    path = tmp_path / "refused.jsonl"
    path.write_text("\n".join(lines[:3] + [line] + lines[3:]) + "\n")
    memory = outcome(FORMULA, path, "memory")
    assert memory[0] == "refused" and message in memory[1]
    assert_same(outcome(FORMULA, path, "duckdb"), memory, messages=False)


@pytest.mark.parametrize("suffix", ["csv", "parquet", "jsonl"])
@pytest.mark.parametrize("where, kept", [("big == 9007199254740993", 16), ("big != 9007199254740993", 16),
                                         ("big > 9007199254740992", 16), ("big >= 9007199254740993", 16),
                                         ("big <= 9007199254740992", 16), ("big < 9007199254740993", 16),
                                         ("big in [9007199254740993, 1]", 16), ("big == 9007199254740992.0", 16),
                                         ("big not in [9007199254740992]", 16)])
def test_integers_beyond_2_to_the_53_compare_exactly(tmp_path, suffix, where, kept):
    big = np.where(np.arange(32) // 2 % 2 == 0, 2**53 + 1, 2**53)   # each value with both systems
    path = write(grid(big=big), tmp_path / f"big.{suffix}")
    memory = outcome(FORMULA, path, "memory", where=where)
    assert memory[1] == kept
    assert_same(outcome(FORMULA, path, "duckdb", where=where), memory)


def test_an_integer_no_double_holds_is_refused_in_a_condition(tmp_path):
    path = write(grid(n=np.arange(32)), tmp_path / "n.csv")
    for engine in ("memory", "duckdb"):
        result = outcome(FORMULA, path, engine, where="n < " + "9" * 400)
        assert result[0] == "refused" and "beyond the range of double precision" in result[1]


@pytest.mark.parametrize("column, values", [
    ("ts", pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(32), "D")),
    ("day", [pd.Timestamp("2020-01-01").date()] * 32),
    ("lst", [[1, 2]] * 32),
    ("obj", [{"a": 1}] * 32),
])
@pytest.mark.parametrize("where", ["{c} > 5", "{c} == '2020-01-02'", "isna({c})", "{c}"])
def test_conditions_on_dates_times_lists_and_objects_are_refused_alike(tmp_path, column, values, where):
    path = write(grid(**{column: values}), tmp_path / "types.parquet")
    memory = outcome(FORMULA, path, "memory", where=where.format(c=column))
    assert memory[0] == "refused" and "which a condition cannot read" in memory[1]
    assert_same(outcome(FORMULA, path, "duckdb", where=where.format(c=column)), memory)


def test_lists_are_no_levels_in_any_engine(tmp_path):
    path = write(grid(lst=[[k % 3] for k in range(32)]), tmp_path / "lists.parquet")
    memory = outcome("score ~ system + (1|lst)", path, "memory")
    assert memory[0] == "refused" and "holds lists or objects" in memory[1]
    assert_same(outcome("score ~ system + (1|lst)", path, "duckdb"), memory)


def test_a_parquet_decimal_is_a_number(tmp_path):
    rng = np.random.default_rng(2)
    amounts = [decimal.Decimal(f"{x:.2f}") for x in rng.normal(size=32)]
    path = write(grid(amount=amounts), tmp_path / "decimal.parquet")
    for formula, where in (("amount ~ system + (1|item)", None), (FORMULA, "amount > 0"),
                           ("score ~ amount + (1|item)", None)):
        memory = outcome(formula, path, "memory", where=where)
        assert memory[0] == "read"
        assert_same(outcome(formula, path, "duckdb", where=where), memory)


@pytest.mark.parametrize("suffix", ["parquet", "jsonl"])
@pytest.mark.parametrize("formula, where", [(FORMULA, "flag == True"), (FORMULA, "flag"), (FORMULA, "not flag"),
                                            ("score ~ system + (1|flag) + (1|item)", None),
                                            ("score ~ flag + (1|item)", None), ("flag ~ system + (1|item)", None),
                                            (FORMULA, "flag > False")])
def test_booleans_are_the_same_everywhere(tmp_path, suffix, formula, where):
    path = write(grid(flag=np.arange(32) % 3 == 0), tmp_path / f"flags.{suffix}")
    memory = outcome(formula, path, "memory", where=where)
    assert_same(outcome(formula, path, "duckdb", where=where), memory)
    if "(1|flag)" in formula:
        assert memory[3][0] == ("False", "True")


# --- CSV rows -----------------------------------------------------------------------------------

def test_doubled_quotes_inside_quotes_are_one_quote_and_a_quoted_empty_field_is_missing(tmp_path):
    data = grid()
    text = "item,system,score\n" + "".join(f'"{r.item}""q, r",{r.system},{r.score}\n' for r in data.itertuples())
    (tmp_path / "quoted.csv").write_text(text)
    memory = outcome(FORMULA, tmp_path / "quoted.csv", "memory")
    assert memory[3][0][0] == 'i0"q, r'
    assert_same(outcome(FORMULA, tmp_path / "quoted.csv", "duckdb"), memory)
    (tmp_path / "empty.csv").write_text(text.replace('"i3""q, r"', '""'))
    for where in ("isna(item)", "notna(item)"):
        memory = outcome(FORMULA, tmp_path / "empty.csv", "memory", where=where, drop_missing=True)
        assert memory[0] == "refused" if where == "isna(item)" else memory[1] == 28
        assert_same(outcome(FORMULA, tmp_path / "empty.csv", "duckdb", where=where, drop_missing=True), memory,
                    messages=False)   # the engines check what is left in another order


@pytest.mark.parametrize("change", [lambda line: line + ",extra", lambda line: line.rsplit(",", 1)[0],
                                    lambda line: line.replace(",", ',"x,y",', 1), lambda line: line + ',"a\nb"'])
def test_ragged_or_shifted_rows_are_refused_by_every_engine(tmp_path, change):
    lines = grid().to_csv(index=False).splitlines()
    lines[6] = change(lines[6])
    (tmp_path / "ragged.csv").write_text("\n".join(lines) + "\n")
    memory = outcome(FORMULA, tmp_path / "ragged.csv", "memory")
    assert memory[0] == "refused" and "data row 6 (row 1 is the first row below the header) has" in memory[1]
    assert_same(outcome(FORMULA, tmp_path / "ragged.csv", "duckdb"), memory)


@pytest.mark.parametrize("suffix", ["csv", "parquet"])
def test_a_repeated_column_name_is_refused_alike(tmp_path, suffix):
    data = grid()
    path = tmp_path / f"repeated.{suffix}"
    if suffix == "csv":
        path.write_text(data.to_csv(index=False).replace("item,system,score", "item,score,score"))
    else:
        pq.write_table(pa.Table.from_arrays([pa.array(data[c]) for c in data.columns], ["item", "score", "score"]),
                       path)
    memory = outcome("score ~ 1 + (1|item)", path, "memory")
    assert memory[0] == "refused" and "has the column 'score' more than once" in memory[1]
    assert_same(outcome("score ~ 1 + (1|item)", path, "duckdb"), memory)


# --- column names -------------------------------------------------------------------------------

@pytest.mark.parametrize("suffix", ["csv", "parquet", "jsonl"])
@pytest.mark.parametrize("where", [None, "`a\nb` == 'A'", "`x``y` == 'B'", "`sp ace` > 0", "`Item` == 'I3'"])
def test_names_the_memory_reader_accepts_mean_their_own_column_in_every_engine(tmp_path, suffix, where):
    data = grid()
    odd = data.assign(**{"": data["system"], "a\nb": data["system"], "x`y": data["system"],
                         "sp ace": np.arange(32) % 3, "Item": data["item"].str.upper(),
                         "Score": (data["score"] > 0).astype(int)})
    path = write(odd, tmp_path / f"names.{suffix}")
    for formula in (FORMULA, "Score ~ system + (1|Item)", "score ~ Score + (1|Item) + (1|item)"):
        memory = outcome(formula, path, "memory", where=where)
        assert_same(outcome(formula, path, "duckdb", where=where), memory)
        if formula.startswith("Score") and memory[0] == "read":
            assert memory[4]   # 0/1 detection reads the column the formula names


# --- the property: random small frames ------------------------------------------------------------

IDS = {"text": ["007", "7", "7.0", "+7", "a", "A", "x y", "é", "NA", "null", "True", "1e5"],
       "dates": [f"2020-01-0{k}" for k in range(1, 9)],
       "uuids": [f"6ba7b81{k}-9dad-11d1-80b4-00c04fd430c8" for k in range(4)]
       + [f"6BA7B81{k}-9DAD-11D1-80B4-00C04FD430C8" for k in range(4)],
       "big": [str(2**64 + k) for k in range(8)]}
NAMES = ["item", "Item", "score", "Score", "system", "System", "n", "", "a\nb", "x`y", "sp ace", "flag"]


@st.composite
def frames(draw):
    """A small frame with an item, a system and a score column, decoys (names differing only in case too),
    missing cells, and a file format; a condition and --drop-missing."""
    n_items = draw(st.integers(3, 8))
    rows = n_items * 4
    pool = draw(st.sampled_from(list(IDS)))
    ids = draw(st.lists(st.sampled_from(IDS[pool]), min_size=n_items, max_size=n_items, unique=True))
    fmt = draw(st.sampled_from(["csv", "parquet", "jsonl"]))
    if fmt == "jsonl" and pool == "big" and draw(st.booleans()):
        ids = [int(i) for i in ids]   # JSON numbers beyond 2^64
    system = draw(st.sampled_from([np.tile(["A", "B"], 2 * n_items), np.tile([1, 2], 2 * n_items),
                                   np.tile([False, True], 2 * n_items)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    score = draw(st.sampled_from([np.round(rng.normal(size=rows), 3), rng.integers(0, 2, rows).astype(float),
                                  rng.integers(-3, 4, rows).astype(float)]))
    score[draw(st.lists(st.integers(0, rows - 1), max_size=2))] = np.nan
    item, system_name, score_name = (draw(st.sampled_from(pair)) for pair in
                                     (("item", "Item"), ("system", "System"), ("score", "Score")))
    frame = pd.DataFrame({item: np.repeat(np.array(ids, dtype=object), 4), system_name: system, score_name: score})
    big = np.where(np.arange(rows) // 2 % 2 == 0, 2**53 + 1, draw(st.sampled_from([2**53, 5, -1])))
    for name in draw(st.lists(st.sampled_from([n for n in NAMES if n not in frame.columns]), max_size=4, unique=True)):
        frame[name] = draw(st.sampled_from([big, np.arange(rows) % 3 == 0, np.tile(["A", "B"], 2 * n_items),
                                            rng.integers(0, 2, rows).astype(float)]))
    where = draw(st.sampled_from([None, "n == 9007199254740993", "n > 9007199254740992", "{s} != 'A'",
                                  "isna({y}) or {y} > -1", "`a\nb` == 'A'", "flag", "{i} != '7'", "n in [5, -1]",
                                  "`x``y` == 'B'", "Score >= 0"]))
    if where:
        where = where.format(i=item, s=system_name, y=score_name)
    formula = f"{score_name} ~ {system_name} + (1|{item})"
    return frame, fmt, formula, where, draw(st.booleans())


PARITY_SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))


def check_engines(case, tmp_path_factory, engines):
    frame, fmt, formula, where, drop_missing = case
    path = write(frame, tmp_path_factory.mktemp("parity") / f"data.{fmt}")
    memory = outcome(formula, path, "memory", where=where, drop_missing=drop_missing)
    for engine in engines:
        assert_same(outcome(formula, path, engine, where=where, drop_missing=drop_missing), memory, messages=False)


@settings(max_examples=60, **PARITY_SETTINGS)
@given(case=frames())
def test_duckdb_gives_the_analysis_or_the_refusal_of_memory_on_random_frames(case, tmp_path_factory):
    check_engines(case, tmp_path_factory, ["duckdb"])


@settings(max_examples=12, **PARITY_SETTINGS)
@given(case=frames())
@pytest.mark.slow
def test_spark_gives_the_analysis_or_the_refusal_of_memory_on_random_frames(spark_session, case, tmp_path_factory):
    check_engines(case, tmp_path_factory, ["spark"])


# --- Spark (slow: a session starts) ---------------------------------------------------------------

@pytest.fixture(scope="module")
def spark_session():
    """One local Spark session for the module's Spark tests, started as --engine spark starts it."""
    pytest.importorskip("pyspark")
    from bayesrepro.design.producers.spark_source import _session

    session = _session("local[1]")
    yield session
    session.stop()


@pytest.mark.slow
def test_spark_reads_names_rows_and_types_as_memory_does(spark_session, tmp_path, monkeypatch):
    write(grid(items=5), tmp_path / "sp1.csv")
    cases = [(FORMULA, write(grid(items=7), tmp_path / "sp{1}.csv"), None),
             (FORMULA, write(grid(items=6), tmp_path / "data[1].csv"), None),
             (FORMULA, write(grid(big=np.where(np.arange(32) // 2 % 2 == 0, 2**53 + 1, 2**53)), tmp_path / "big.csv"),
              "big == 9007199254740993"),
             (FORMULA, write(grid(flag=np.arange(32) % 3 == 0), tmp_path / "flags.parquet"), "flag"),
             ("score ~ system + (1|flag) + (1|item)", str(tmp_path / "flags.parquet"), None),
             (FORMULA, write(grid(ts=(pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(32), "D"))
                                  .astype("datetime64[us]")), tmp_path / "ts.parquet"), "ts > 3"),
             (FORMULA, write(grid(amount=[decimal.Decimal(k) / 7 for k in range(32)]), tmp_path / "dec.parquet"),
              "amount > 2")]
    ids = ["2020-01-01", "2020-1-1", "6ba7b810-9dad-11d1-80b4-00c04fd430c8", "6BA7B810-9DAD-11D1-80B4-00C04FD430C8",
           "x", "y"]
    cases.append((FORMULA, write(grid(items=6).assign(item=np.repeat(ids, 4)), tmp_path / "ids.jsonl"), None))
    big_ids = [18446744073709551617, 18446744073709551618, 2**63, 5, 6, 7]
    cases.append((FORMULA, write(grid(items=6).assign(item=np.repeat(np.array(big_ids, dtype=object), 4)),
                                 tmp_path / "big_ids.jsonl"), None))
    data = grid()
    odd = data.assign(**{"": data["system"], "a\nb": data["system"], "x`y": data["system"],
                         "Score": (data["score"] > 0).astype(int)})
    for suffix in ("csv", "parquet", "jsonl"):
        path = write(odd, tmp_path / f"names.{suffix}")
        cases += [("Score ~ system + (1|item)", path, "`a\nb` == 'A'"), (FORMULA, path, "`x``y` == 'B'")]
    text = "item,system,score\n" + "".join(f'"{r.item}""q, r",{r.system},{r.score}\n' for r in data.itertuples())
    (tmp_path / "quoted.csv").write_text(text)
    cases.append((FORMULA, str(tmp_path / "quoted.csv"), None))
    (tmp_path / "empty.csv").write_text(text.replace('"i3""q, r"', '""'))   # a quoted empty field is missing
    cases += [(FORMULA, str(tmp_path / "empty.csv"), None), (FORMULA, str(tmp_path / "empty.csv"), "isna(item)")]
    for formula, path, where in cases:
        memory = outcome(formula, path, "memory", where=where)
        assert_same(outcome(formula, path, "spark", where=where), memory)
    # Spark reads no nanosecond timestamps (pandas before 3.0 writes them by default): one line naming the file
    nanos = write(grid(ts=(pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(32), "D")).astype("datetime64[ns]")),
                  tmp_path / "nanos.parquet")
    status, message = outcome(FORMULA, nanos, "spark")
    assert status == "refused" and message.startswith(f"Spark could not read '{nanos}'") and "\n" not in message
    (tmp_path / "~").mkdir()
    write(grid(items=6), tmp_path / "~" / "x.csv")
    monkeypatch.chdir(tmp_path)
    assert_same(outcome(FORMULA, "~/x.csv", "spark"), outcome(FORMULA, "~/x.csv", "memory"))


@pytest.mark.slow
@pytest.mark.parametrize("change", [lambda line: line + ",extra", lambda line: line.rsplit(",", 1)[0],
                                    lambda line: line.replace(",", ',"x,y",', 1)])
def test_spark_refuses_ragged_or_shifted_rows(spark_session, tmp_path, change):
    lines = grid().to_csv(index=False).splitlines()
    lines[6] = change(lines[6])
    (tmp_path / "ragged.csv").write_text("\n".join(lines) + "\n")
    result = outcome(FORMULA, tmp_path / "ragged.csv", "spark")
    assert result[0] == "refused" and "more or fewer fields than the header" in result[1]


@pytest.mark.slow
def test_a_command_through_spark_that_succeeds_writes_nothing_on_stderr(tmp_path):
    import subprocess
    import sys

    pytest.importorskip("pyspark")
    path = write(grid(items=10), tmp_path / "runs.csv")
    done = subprocess.run([sys.executable, "-m", "bayesrepro.cli", "vca", path, "--formula", FORMULA, "--engine",
                           "spark", "--spark-master", "local[1]", "--json"], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert json.loads(done.stdout)["n_obs"] == 40
