"""Reading data files: identifiers stay the text in the file, every bad file is one line."""

import gzip
import json

import numpy as np
import pandas as pd
import pytest

from bayesrepro.data import check_score, read_table
from bayesrepro.levels import level_labels
from bayesrepro.datasets import DATASETS, load_dataset
from bayesrepro.errors import BayesreproError
from bayesrepro.frequentist.lmm import fit_lmm
from bayesrepro.readers import read_file
from bayesrepro.reliability import phi


def write(path, text: str | bytes):
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def zero_padded_ids(seed=0):
    """Items '007' and '7' (and so on) are different items with different true effects."""
    rng = np.random.default_rng(seed)
    ids = [f"{k:03d}" for k in range(1, 11)] + [str(k) for k in range(1, 11)]
    effects = dict(zip(ids, rng.normal(0, 1, len(ids))))
    rows = [(item, seed_, effects[item] + rng.normal(0, 0.3)) for item in ids for seed_ in range(3)]
    return pd.DataFrame(rows, columns=["item", "seed", "score"])


def test_ids_that_differ_as_text_stay_apart_and_phi_is_that_of_unambiguous_ids(tmp_path):
    frame = zero_padded_ids()
    path = tmp_path / "ids.csv"
    frame.to_csv(path, index=False)
    read = read_table(path)
    assert read["item"].nunique() == 20 and {"007", "7"} <= set(read["item"])
    formula = "score ~ 1 + (1|item) + (1|seed)"
    from_file = fit_lmm(formula, read)
    renamed = fit_lmm(formula, frame.assign(item="id" + frame["item"]))
    assert from_file.n_levels["item"] == 20
    assert phi(from_file.variances, "item") == pytest.approx(phi(renamed.variances, "item"), rel=1e-9)


@pytest.mark.parametrize("values, numeric", [
    (["1", "2", "3"], True),
    (["0.5", "-1e-3", ".25", "7."], True),
    (["007", "008"], False),            # zero-padded: identifiers
    (["7", "007"], False),              # would merge
    (["1", "1.0"], False),              # would merge
    (["1", "+1"], False),               # would merge
    (["0", "-0"], False),               # would merge
    (["1", "nan"], False),              # the word nan is text
    (["1", "inf"], False),
    ([" 7", "8"], False),               # spaces are part of the text
    (["0.0", "-0.0"], False),
])
def test_a_column_is_numeric_only_if_every_value_is_a_number_and_no_two_texts_give_the_same(tmp_path, values, numeric):
    path = write(tmp_path / "x.csv", "x\n" + "\n".join(values) + "\n")
    column = read_file(path)["x"]
    assert pd.api.types.is_numeric_dtype(column) == numeric
    if not numeric:
        assert list(column) == values  # the text as written


def test_only_an_empty_field_is_missing_in_text_and_na_words_are_levels(tmp_path):
    path = write(tmp_path / "x.csv", 'g,y\nNA,1\nnull,2\nNone,3\nnan,4\n,5\n"",6\n')
    frame = read_file(path)
    assert list(frame["g"].iloc[:4]) == ["NA", "null", "None", "nan"]
    assert frame["g"].isna().tolist() == [False] * 4 + [True, True]
    assert frame["y"].dtype == np.int64


def test_empty_field_is_a_missing_score_and_na_in_a_score_column_is_refused(tmp_path):
    frame = read_file(write(tmp_path / "s.csv", "item,score\na,1\nb,\nc,2.5\n"))
    assert frame["score"].isna().tolist() == [False, True, False]
    text = read_table(write(tmp_path / "t.csv", "item,score\na,1\nb,NA\nc,2.5\n"))
    # the row a user finds in the file: the second row of data (the third line)
    with pytest.raises(BayesreproError, match=r"score column 'score' is not numeric: data row 2 \(row 1 is the first "
                                              r"row of data\) holds 'NA'; a score must be a number and a missing score "
                                              "an empty field"):
        check_score(text, "score")


def test_numbers_written_two_ways_are_one_score(tmp_path):
    frame = read_file(write(tmp_path / "s.csv", "item,score\na,1\nb,1.0\nc,2\n"))
    assert not pd.api.types.is_numeric_dtype(frame["score"])   # as a column it stays text ...
    np.testing.assert_array_equal(check_score(frame, "score"), [1.0, 1.0, 2.0])  # ... as a score it is numbers


def test_categorical_keeps_the_text_of_a_numeric_looking_column(tmp_path):
    path = write(tmp_path / "x.csv", "lr,y\n1e-3,1\n0.0001,2\n1e-3,3\n")
    assert read_table(path)["lr"].dtype == np.float64
    kept = read_table(path, categorical=["lr"])["lr"]
    assert isinstance(kept.dtype, pd.CategoricalDtype) and list(kept) == ["1e-3", "0.0001", "1e-3"]


def test_level_labels_tell_numbers_apart_and_keep_missing():
    labels = level_labels(pd.Series([1.0, 2.5, np.nan, 1e-5, 3]))
    assert labels.isna().tolist() == [False, False, True, False, False]
    assert labels.dropna().tolist() == ["1", "2.5", "1e-05", "3"]
    with pytest.raises(BayesreproError, match="holds both text"):
        level_labels(pd.Series(["7", 7], name="item"))


@pytest.mark.parametrize("values", [
    pd.Series([3, -1, 40, 3, 7, -1]), pd.Series([1.0, 2.5, np.nan, 1e-5, 3, 2.5, -0.0, 0.0]),
    pd.Series([True, False, True]), pd.Series(["b", "a", None, "é", "Z", "ab", "a"], dtype="string"),
    pd.Series(["q10", "q2", "q1", "q2"], dtype="str"), pd.Series(np.array([9, 1, 9], dtype=np.uint8)),
    pd.Series(["y", "x", None, "y"], dtype=object), pd.Series([], dtype=float),
], ids=["int", "float", "bool", "string", "str", "uint8", "object", "empty"])
def test_a_level_factor_is_the_categorical_of_the_level_labels(values):
    """The factor built from the distinct values' labels has the codes and categories of the labels' own."""
    from bayesrepro.levels import level_factor

    expected, found = pd.Categorical(level_labels(values)), level_factor(values)
    np.testing.assert_array_equal(found.codes, expected.codes)
    assert found.dtype == expected.dtype and found.categories.equals(expected.categories)


@pytest.mark.parametrize("name, content, match", [
    ("dup.csv", "item,score,score\na,1,2\n", "has the column 'score' more than once"),
    ("empty.csv", "", "is empty"),
    ("blank.csv", "\n\n", "is empty"),
    ("header.csv", "item,score\n", "has a header but no rows"),
    ("ragged.csv", "item,score\na,1\nb,2,3\n", r"data row 2 \(row 1 is the first row below the header\) has 3 field\(s\) but the header has 2"),
    ("short.csv", "item,seed,score\na,1,2\nb,2\n", "has 2 field"),
    ("semicolon.csv", "item;score\na;1\nb;2\n", "look separated by ';'"),
    ("tabs.csv", "item\tscore\na\t1\n", "look separated by tab"),
    ("commas.tsv", "item,score\na,1\n", "look separated by ','"),
    ("latin1.csv", "item,score\n\xe9,1\n".encode("latin-1"), "is not UTF-8 text"),
    ("latin1_late.csv", ("item,score\n" + "a,1\n" * 30000 + "\xe9,1\n").encode("latin-1"), "not UTF-8 text"),
    ("nul.csv", b"item,score\na\x00,1\n", "NUL bytes"),
    ("binary.csv", bytes(range(256)) * 4, "NUL bytes"),
    ("gzipped.csv", gzip.compress(b"item,score\na,1\n", mtime=0), "is gzip-compressed"),
    ("plain.csv.gz", b"item,score\na,1\n", "not a valid gzip file"),
    ("dup.jsonl", '{"a": 1, "a": 2}\n', "key 'a' more than once"),
    ("list.jsonl", '{"a": 1}\n[1, 2]\n', "line 2 is a JSON list"),
    ("broken.jsonl", '{"a": 1}\n{"a": \n', "line 2 is not valid JSON"),
    ("nan.jsonl", '{"a": NaN}\n', "holds NaN, which is not JSON"),
    ("mixed.jsonl", '{"item": "007"}\n{"item": 7}\n', "column 'item' .* mixes JSON types"),
    ("nested.jsonl", '{"item": [1]}\n', "holds lists or objects"),
    ("nothing.jsonl", "\n\n", "has no rows"),
    ("bad.parquet", b"PAR1 not really", "could not read data file .* as Parquet"),
    ("data.xlsx", b"x", "has an unknown type"),
])
def test_every_bad_file_is_one_line(tmp_path, name, content, match):
    path = write(tmp_path / name, content)
    with pytest.raises(BayesreproError, match=match) as error:
        read_table(path)
    assert "\n" not in str(error.value)


def test_cut_and_corrupt_gzip_are_one_line(tmp_path):
    packed = gzip.compress(("item,score\n" + "".join(f"i{k},{k}\n" for k in range(20000))).encode())
    cut = write(tmp_path / "cut.csv.gz", packed[: len(packed) // 2])
    with pytest.raises(BayesreproError, match="truncated"):
        read_table(cut)
    corrupt = write(tmp_path / "corrupt.csv.gz", packed[:30] + b"\xff" * 40 + packed[70:])
    with pytest.raises(BayesreproError, match="could not read data file"):
        read_table(corrupt)
    packed_json = gzip.compress("".join(f'{{"a": {k}}}\n' for k in range(20000)).encode())
    cut_json = write(tmp_path / "cut.jsonl.gz", packed_json[: len(packed_json) // 2])
    with pytest.raises(BayesreproError, match="truncated"):
        read_table(cut_json)


def test_a_bom_and_quoted_newlines_are_read(tmp_path):
    frame = read_table(write(tmp_path / "bom.csv", b'\xef\xbb\xbfitem,score\n"a\nb",1\nc,2\n'))
    assert list(frame.columns) == ["item", "score"] and frame["item"].tolist() == ["a\nb", "c"]


def test_json_lines_keep_strings_and_numbers_apart(tmp_path):
    lines = [{"item": "007", "seed": 1, "score": 0.5, "ok": True},
             {"item": "7", "seed": 2, "score": 1, "ok": False},
             {"item": "NA", "seed": 3, "score": None}]
    path = write(tmp_path / "d.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
    frame = read_table(path)
    assert frame["item"].tolist() == ["007", "7", "NA"]
    assert frame["seed"].dtype == np.int64 and frame["score"].isna().tolist() == [False, False, True]
    assert frame["ok"].isna().tolist() == [False, False, True]
    big = write(tmp_path / "big.jsonl", '{"id": 9007199254740993}\n{"id": 9007199254740992}\n{"id": 1.5}\n')
    assert read_table(big)["id"].tolist() == ["9007199254740993", "9007199254740992", "1.5"]


def test_parquet_keeps_its_types_and_refuses_repeated_names(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"item": ["007", "7", None], "score": [1.0, 2.0, 3.0]}), path)
    frame = read_table(path)
    assert frame["item"].tolist()[:2] == ["007", "7"] and frame["item"].isna().tolist() == [False, False, True]
    pq.write_table(pa.Table.from_arrays([pa.array([1]), pa.array([2])], names=["a", "a"]), tmp_path / "dup.parquet")
    with pytest.raises(BayesreproError, match="column 'a' more than once"):
        read_table(tmp_path / "dup.parquet")
    pq.write_table(pa.table({"a": pa.array([], pa.int64())}), tmp_path / "empty.parquet")
    with pytest.raises(BayesreproError, match="has no rows"):
        read_table(tmp_path / "empty.parquet")


def test_a_dataframe_with_a_repeated_column_is_refused():
    frame = pd.DataFrame([[1, 2]], columns=["a", "a"])
    with pytest.raises(BayesreproError, match="column 'a' more than once"):
        read_table(frame)


@pytest.mark.parametrize("name", DATASETS)
def test_bundled_datasets_follow_the_same_rule(name, tmp_path):
    bundled = load_dataset(name)
    from bayesrepro.datasets import dataset_path

    text = read_file(dataset_path(name), text_columns=bundled.columns)
    assert list(bundled.columns) == list(text.columns)
    for column in bundled.columns:
        if isinstance(bundled[column].dtype, pd.CategoricalDtype):
            # identifiers: the text in the file, the levels sorted as text
            assert bundled[column].astype(object).tolist() == text[column].tolist()
            assert list(bundled[column].cat.categories) == sorted(bundled[column].cat.categories)
        else:
            np.testing.assert_array_equal(bundled[column], text[column].astype(float))


SURROGATE = "\ud800".encode("utf-8", "surrogatepass")   # the bytes of a lone surrogate, which UTF-8 forbids


def late_surrogate_csv(quoted: bool) -> bytes:
    """A CSV whose row 25,001 holds a lone surrogate, far past the start the reader checks first."""
    rows = [f"{k % 7},i{k % 5}".encode() for k in range(30000)]
    rows[25000] = b"2," + (b'"i0' + SURROGATE + b'"' if quoted else b"i0" + SURROGATE)
    return b"score,item\n" + b"\n".join(rows) + b"\n"


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("quoted", [False, True])
def test_a_lone_surrogate_deep_in_a_csv_is_named_by_its_row_under_every_engine(engine, quoted, tmp_path):
    import bayesrepro as br

    path = write(tmp_path / "late.csv", late_surrogate_csv(quoted))
    row = "line 25002" if engine == "memory" else r"data row 25001 \(row 1 is the first below the header\)"
    with pytest.raises(BayesreproError, match=rf"data file '.*late\.csv': {row} is not UTF-8 text \(.*lone "
                                              r"surrogate.*\); fix or remove that value, or save the file as UTF-8"):
        br.Model("score ~ 1 + (1|item)", str(path), engine=engine).fit()


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_lone_surrogate_escape_in_json_lines_is_named_by_its_line(engine, tmp_path):
    import bayesrepro as br

    lines = [json.dumps({"score": k % 7, "item": f"i{k % 5}"}) for k in range(300)]
    lines[250] = '{"score": 2, "item": "i0\\ud800"}'
    lines[10] = '{"score": 2, "item": "i0\\ud83d\\ude00"}'   # a whole pair: one character, read as such
    path = write(tmp_path / "late.jsonl", "\n".join(lines) + "\n")
    message = (r"line 251, field \"item\": holds a lone surrogate \(\\ud800\)" if engine == "memory" else
               r"line 251 is not UTF-8 text \(.*lone surrogate")
    with pytest.raises(BayesreproError, match=message):
        br.Model("score ~ 1 + (1|item)", str(path), engine=engine).fit()
    lines[250] = lines[251]
    write(tmp_path / "late.jsonl", "\n".join(lines) + "\n")
    assert br.Model("score ~ 1 + (1|item)", str(path), engine=engine).fit().to_dict()["n_obs"] == 300


def long_field_csv(size: int, row: int = 1500, quoted: bool = False) -> bytes:
    """A CSV whose data row ``row`` holds a field of ``size`` bytes in its column 'note'."""
    field = b'"' + b'x""y,\n' * (size // 5) + b'"' if quoted else b"x" * size
    lines = [b"score,item,note,other"] + [b"%d,i%d,%s,z" % (k % 7, k % 5, field if k + 1 == row else b"n")
                                           for k in range(2000)]
    return b"\n".join(lines) + b"\n"


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("quoted", [False, True])
def test_a_field_of_megabytes_is_read_by_every_engine(engine, quoted, tmp_path):
    import bayesrepro as br

    path = write(tmp_path / "long.csv", long_field_csv(3_000_000, quoted=quoted))
    fit = br.Model("score ~ 1 + (1|item)", str(path), engine=engine).fit().to_dict()
    assert fit["n_obs"] == 2000


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("quoted", [False, True])
def test_a_field_past_the_row_limit_is_named_by_row_column_and_size(engine, quoted, tmp_path, monkeypatch):
    import bayesrepro as br
    from bayesrepro import long_fields

    # the limits scaled down a hundredfold (64 MB rows, 256 MB lines as written): the same code paths
    monkeypatch.setattr(long_fields, "MAX_ROW_BYTES", 2**20)
    monkeypatch.setattr(long_fields, "MAX_LINE_BYTES", 4 * 2**20)
    path = write(tmp_path / "long.csv", long_field_csv(5_000_000, row=1234, quoted=quoted))
    size = "6,000,002" if quoted else "5,000,000"   # as written: its quotes, and "" for each quote in it
    with pytest.raises(BayesreproError, match=rf"data file '.*long\.csv': data row 1,234 \(row 1 is the first below "
                                              rf"the header\), column 'note', holds a field of {size} bytes as written, more "
                                              r"than the 1,048,576 a row may hold; .*drop that column") as error:
        br.Model("score ~ 1 + (1|item)", str(path), engine=engine).fit()
    assert "\n" not in str(error.value)


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["memory", "duckdb"])
def test_a_field_of_hundreds_of_megabytes_is_named_within_bounded_memory(engine, tmp_path):
    import resource

    import bayesrepro as br

    path = write(tmp_path / "long.csv", long_field_csv(300_000_000))
    with pytest.raises(BayesreproError, match=r"data row 1,500 .*column 'note', holds a field of 300,000,000 bytes"):
        br.Model("score ~ 1 + (1|item)", str(path), engine=engine).fit()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss < 4 * 2**20   # KB: under 4 GB
