"""--where: a whitelisted expression language, the same on pandas and in SQL."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bayesrepro.data import read_table
from bayesrepro.design.producers.grouped import quote_double
from bayesrepro.errors import BayesreproError
from bayesrepro.where import And, Column, Compare, Literal, children, column_kind, parse_where


def frame():
    return pd.DataFrame({
        "mode": ["Post Edit", "Marking", "Post Edit", None, "NA", "it's"],
        "n": [1.0, 2.0, np.nan, 4.0, 5.0, 0.0],
        "seed": [1, 2, 3, 1, 2, 3],
        "flag": [True, False, True, False, True, False],
        "my col": ["a", "b", "c", "d", "e", "f"],
        'we"ird`name': ["x", "y", "x", "y", "x", "y"],
    })


def mask(text, data=None):
    return parse_where(text).mask(frame() if data is None else data).tolist()


@pytest.mark.parametrize("text, expected", [
    ("mode == 'Post Edit'", [True, False, True, False, False, False]),
    ("mode != 'Post Edit'", [False, True, False, False, True, True]),           # missing: unknown, not kept
    ("mode != 'Post Edit' or isna(mode)", [False, True, False, True, True, True]),
    ("mode == 'NA'", [False, False, False, False, True, False]),               # a level named NA
    ("mode == \"it's\"", [False, False, False, False, False, True]),
    ("n > 1.5", [False, True, False, True, True, False]),
    ("not n > 1.5", [True, False, False, False, False, True]),                 # NaN stays unknown
    ("1 < n <= 4", [False, True, False, True, False, False]),
    ("n / 0 > 1", [False] * 6),                                                # division by zero: missing
    ("(n - 1) * 2 >= seed + 1", [False, False, False, True, True, False]),
    ("-n < -3", [False, False, False, True, True, False]),
    ("seed in [1, 3]", [True, False, True, True, False, True]),
    ("seed not in (1, 3)", [False, True, False, False, True, False]),
    ("mode in []", [False] * 6),
    ("flag", [True, False, True, False, True, False]),
    ("~flag & (seed == 2)", [False, True, False, False, False, False]),
    ("flag == True and not seed == 3", [True, False, False, False, True, False]),
    ("seed == 1 | seed == 2 & flag", [True, False, False, True, True, False]),  # pandas: | lowest, & above it
    ("seed == 1 & flag | seed == 3", [True, False, True, False, False, True]),
    ("not seed == 1 & flag", [False, False, True, False, True, False]),         # pandas: (not seed == 1) & flag
    ("(seed == 1) & flag == True", [True, False, False, False, False, False]),
    ("startswith(mode, 'Post')", [True, False, True, False, False, False]),
    ("endswith(mode, 'ing')", [False, True, False, False, False, False]),
    ("contains(mode, 'st E')", [True, False, True, False, False, False]),
    ("contains(mode, '.')", [False] * 6),                                       # a substring, not a pattern
    ("isna(n) or isna(mode)", [False, False, True, True, False, False]),
    ("notna(n) and `my col` > 'c'", [False, False, False, True, True, True]),
    ("`we\"ird`", None),                                                          # unterminated name: refused below
])
def test_conditions_select_rows(text, expected):
    if expected is None:
        return
    assert mask(text) == expected


def test_backticks_quote_names_with_spaces_and_quotes():
    assert mask("`my col` == 'b'") == [False, True, False, False, False, False]
    data = frame().rename(columns={'we"ird`name': 'we"ird name'})
    assert mask("`we\"ird name` == 'x'", data) == [True, False, True, False, True, False]
    assert mask("mode == '`n` > 1'") == [False] * 6   # a backtick inside a string is text


@pytest.mark.parametrize("text, match", [
    # code: attribute walks, subscripts, calls, @ references, lambdas, comprehensions
    ("mode.__class__.__init__.__globals__['os'].system('id')", "is not allowed|reads an attribute"),
    ("n.__class__", "reads an attribute"),
    ("mode[0] == 'P'", "is a subscript"),
    ("__import__('os').system('id')", "is not allowed; the only functions are startswith"),
    ("eval('1') == 1", "'eval\\(...\\)' is not allowed"),
    ("@os", "is not a valid condition"),
    ("n @ seed", "'@' references are not allowed"),
    ("(lambda: 1)() == 1", "is not allowed"),
    ("[x for x in n]", "is not allowed|allowed only after 'in'"),
    ("n == (yield)", "is not a valid condition|is not allowed"),
    ("n := 1", "is not a valid condition"),
    # not a condition of each row
    ("n", "must be true or false for each row, but column 'n' holds numbers"),
    ("mode", "column 'mode' holds texts"),
    ("n + 1", "this gives a number"),
    ("['a', 'b']", "allowed only after 'in'"),
    ("1 == 1", "does not read any column"),
    ("1", "does not read any column"),
    # types and names
    ("seed == '1'", "column 'seed' holds numbers but is compared with the text '1'; write seed == 1"),
    ("mode == 7", "column 'mode' holds texts but is compared with the number 7; write mode == '7'"),
    ("mode in ['a', 7]", "holds texts but is compared with the number 7"),
    ("mode + 1 > 2", "'\\+' needs numbers, but column 'mode' holds texts"),
    ("flag < True", "cannot be ordered"),
    ("startswith(n, 'x')", "startswith\\(\\) needs a text column"),
    ("startswith(mode)", "takes 2 argument"),
    ("contains(mode, other)", "must be a quoted text"),
    ("isna(n + 1)", "must be a column name"),
    ("mdoe == 'x'", "'mdoe' is not a column of the data; did you mean mode\\?"),
    ("zzz == 1", "'zzz' is not a column of the data \\(columns: mode, n, seed, flag, `my col`"),
    ("mode == None", "test for missing values with isna"),
    ("n is 1", "'is' is not a comparison"),
    ("mode in 'abc'", "'in' needs a list"),
    ("`open", "opening backtick without a closing one"),
    ("n == 1 and", "is not a valid condition"),
    ("", "needs a condition"),
    ("n == 1e999999 and seed == " + "9" * 5000, "too many digits"),
    ("not " * 200 + "n == 1", "nested too deeply"),
    ("(" * 1000 + "n == 1" + ")" * 1000, "not a valid condition: too many nested parentheses"),
    ("n == 1 " + "and n == 1 " * 3000, "characters long"),
])
def test_anything_else_is_refused_in_one_line(text, match):
    with pytest.raises(BayesreproError, match=match) as error:
        mask(text)
    assert "\n" not in str(error.value)


def test_a_condition_that_keeps_nothing_says_so():
    with pytest.raises(BayesreproError, match="keeps no rows of the 6"):
        read_table(frame(), where="seed > 10")


def test_the_tree_is_plain_data_to_walk():
    tree = parse_where("seed == 1 & n > 2").tree
    assert isinstance(tree, And) and all(isinstance(part, Compare) for part in tree.parts)
    assert tree.parts[0] == Compare("==", Column("seed"), Literal(1))
    assert [type(c).__name__ for c in children(tree.parts[1])] == ["Column", "Literal"]
    assert parse_where("`my col` == 'a' or isna(n)").columns == ["my col", "n"]


# --- the same conditions in DuckDB -------------------------------------------------------------

HOSTILE = pd.DataFrame({
    'a "quoted" name': ["it's", 'say "hi"', "back\\slash", None, "", "%_"],
    "x; DROP TABLE t; --": [1.5, -2.0, np.nan, 0.0, 3.0, 1e300],
    "select": [1, 2, 3, 4, 5, 6],
    "flag": [True, False, True, False, True, False],
    "naïve ü": ["ü", "u", "ü", None, "é", "e"],
})

SQL_CASES = [
    "`a \"quoted\" name` == \"it's\"",
    "`a \"quoted\" name` == 'say \"hi\"'",
    "`a \"quoted\" name` == 'back\\\\slash'",
    "`a \"quoted\" name` != ''",
    "`a \"quoted\" name` in ['%_', \"it's\"]",
    "startswith(`a \"quoted\" name`, \"it'\") or contains(`a \"quoted\" name`, '%')",
    "endswith(`a \"quoted\" name`, '\"hi\"')",
    "`x; DROP TABLE t; --` > 0",
    "`x; DROP TABLE t; --` * 1e10 > 1",
    "`x; DROP TABLE t; --` / (select - 4) > 0",
    "isna(`x; DROP TABLE t; --`) | select > 4",
    "not (`x; DROP TABLE t; --` <= 1.5) and flag",
    "-`x; DROP TABLE t; --` + select >= 2",
    "select not in (1, 2, 3)",
    "~flag",
    "`naïve ü` == 'ü'",
    "`naïve ü` < 'f'",
    "`naïve ü` in []",
    "1 < select < 5 & notna(`naïve ü`)",
]


def selected_by_duckdb(where, data: pd.DataFrame) -> list[bool]:
    """The condition rendered as SQL and run by DuckDB on the same rows; unknown counts as not selected."""
    import duckdb

    kinds = {name: column_kind(data[name], name) for name in data.columns}
    connection = duckdb.connect()
    connection.register("rows", data)
    sql = where.to_sql(quote_double, kinds)
    return [row[0] for row in connection.execute(f"SELECT COALESCE({sql}, FALSE) FROM rows").fetchall()]


@pytest.mark.parametrize("text", SQL_CASES)
def test_sql_rendering_selects_the_same_rows_in_duckdb(text):
    where = parse_where(text)
    assert selected_by_duckdb(where, HOSTILE) == where.mask(HOSTILE).tolist(), text


def test_sql_rendering_reads_numbers_stored_as_text(tmp_path):
    import duckdb

    path = tmp_path / "rows.csv"
    path.write_text("item,score\n007,1.5\n7,2.5\nNA,\n")
    where = parse_where("score > 2 or item == '007'")
    sql = where.to_sql(quote_double, {"item": "text", "score": "number"})
    rows = duckdb.connect().execute(
        f"SELECT item FROM read_csv('{path}', all_varchar = true, header = true) WHERE {sql}").fetchall()
    assert rows == [("007",), ("7",)]
    assert read_table(path, where=where.text)["item"].tolist() == ["007", "7"]


def test_sql_rendering_checks_types_and_names_like_the_evaluator():
    where = parse_where("item == 7")
    with pytest.raises(BayesreproError, match="write item == '7'"):
        where.to_sql(quote_double, {"item": "text"})
    with pytest.raises(BayesreproError, match="'item' is not a column"):
        where.to_sql(quote_double, {"other": "text"})


# --- generated conditions (property-based) ------------------------------------------------------------

HOSTILE_NAMES = {"n": 'a "quoted" num', "t": "it's text", "u": "select", "b": "flag; --"}
TEXT_VALUES = ["it's", 'say "hi"', "back\\slash", "", "%_", "ü", "a", None]


def hostile_frame(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 30
    numbers = rng.choice([-2.0, -0.5, 0.0, 0.0, 1.0, 1.5, 3.0, np.nan], n)
    return pd.DataFrame({
        HOSTILE_NAMES["n"]: numbers,
        HOSTILE_NAMES["t"]: rng.choice(np.array(TEXT_VALUES, dtype=object), n),
        HOSTILE_NAMES["u"]: rng.integers(-2, 3, n),
        HOSTILE_NAMES["b"]: rng.choice([True, False], n),
    })


def name(key: str) -> str:
    return "`" + HOSTILE_NAMES[key] + "`"


def number_expressions():
    leaf = st.sampled_from([name("n"), name("u")]) | st.sampled_from(["0", "1", "-1.5", "2", "1e300"])
    return st.recursive(leaf, lambda inner: st.tuples(inner, st.sampled_from(["+", "-", "*", "/"]), inner)
                        .map(lambda t: f"({t[0]} {t[1]} {t[2]})"), max_leaves=4)


def text_literals():
    return st.sampled_from([v for v in TEXT_VALUES if v is not None]).map(repr)


def conditions():
    comparison = st.tuples(number_expressions(), st.sampled_from(["==", "!=", "<", "<=", ">", ">="]),
                           number_expressions()).map(" ".join)
    text_comparison = st.tuples(st.just(name("t")), st.sampled_from(["==", "!=", "<", ">="]), text_literals()).map(" ".join)
    membership = st.tuples(st.just(name("t")), st.sampled_from(["in", "not in"]),
                           st.lists(text_literals(), max_size=3)).map(lambda t: f"{t[0]} {t[1]} [{', '.join(t[2])}]")
    tests = st.sampled_from(["startswith", "endswith", "contains"]).flatmap(
        lambda f: text_literals().map(lambda v: f"{f}({name('t')}, {v})"))
    missing = st.sampled_from(["isna", "notna"]).flatmap(
        lambda f: st.sampled_from(list(HOSTILE_NAMES)).map(lambda k: f"{f}({name(k)})"))
    leaf = comparison | text_comparison | membership | tests | missing | st.just(name("b"))
    return st.recursive(leaf, lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" and ", " or ", " & ", " | "]), inner).map(lambda t: f"({t[0]}{t[1]}{t[2]})"),
        inner.map(lambda c: f"(not ({c}))"), inner.map(lambda c: f"~({c})")), max_leaves=5)


@pytest.mark.parametrize("examples", [pytest.param(100), pytest.param(1000, marks=pytest.mark.slow)])
def test_generated_conditions_select_the_same_rows_in_pandas_and_duckdb(examples):
    @settings(max_examples=examples, deadline=None, derandomize=True, database=None,
              suppress_health_check=list(HealthCheck))
    @given(conditions().filter(lambda text: "`" in text), st.integers(0, 3))
    def run(text, seed):
        frame = hostile_frame(seed)
        where = parse_where(text)
        assert selected_by_duckdb(where, frame) == where.mask(frame).tolist(), text

    run()
