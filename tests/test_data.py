import numpy as np
import pandas as pd
import pytest

from bayesrepro.data import describe_design, read_table
from bayesrepro.errors import BayesreproError
from bayesrepro.design import build_model_frame


def small_frame():
    return pd.DataFrame(
        {
            "item": ["a", "a", "b", "b", "c", "c"],
            "system": ["x", "y", "x", "y", "x", "y"],
            "score": [0.1, 0.2, 0.3, 0.5, 0.2, 0.4],
        }
    )


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".tsv", ".parquet", ".jsonl"])
def test_read_table_reads_every_supported_format(tmp_path, suffix):
    frame = small_frame()
    path = tmp_path / f"scores{suffix}"
    if suffix == ".parquet":
        frame.to_parquet(path)
    elif suffix == ".jsonl":
        frame.to_json(path, orient="records", lines=True)
    else:
        frame.to_csv(path, index=False, sep="\t" if suffix == ".tsv" else ",")
    read = read_table(path)
    assert list(read.columns) == list(frame.columns)
    np.testing.assert_allclose(read["score"], frame["score"])


def test_where_filters_rows_and_bad_where_is_one_line():
    assert len(read_table(small_frame(), where="system == 'x'")) == 3
    with pytest.raises(BayesreproError, match="--where 'sytem == 1': 'sytem' is not a column of the data; did you mean system"):
        read_table(small_frame(), where="sytem == 1")
    with pytest.raises(BayesreproError, match="keeps no rows"):
        read_table(small_frame(), where="score > 5")


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(BayesreproError, match="does not exist"):
        read_table(tmp_path / "nope.csv")
    odd = tmp_path / "scores.xlsx"
    odd.write_text("x")
    with pytest.raises(BayesreproError, match="unknown type"):
        read_table(odd)


def test_misspelled_column_names_the_nearest_one():
    with pytest.raises(BayesreproError, match="'sytem' is not a column of the data; did you mean 'system'"):
        build_model_frame("score ~ sytem + (1|item)", small_frame())


def test_text_score_is_refused_with_the_offending_value():
    frame = small_frame().assign(score=["0.1", "0.2", "n/a", "0.5", "0.2", "0.4"])
    with pytest.raises(BayesreproError, match="score column 'score' is not numeric: the row with index label 2 holds 'n/a'"):
        build_model_frame("score ~ system + (1|item)", frame)


def test_missing_scores_fail_unless_dropping_is_asked_for():
    frame = small_frame().assign(score=[0.1, 0.2, np.nan, 0.5, 0.2, 0.4])
    with pytest.raises(BayesreproError, match=r"missing values in 'score' \(1\)"):
        build_model_frame("score ~ system + (1|item)", frame)
    model = build_model_frame("score ~ system + (1|item)", frame, drop_missing=True)
    assert model.n_obs == 5
    assert model.notes == ["dropped 1 of 6 rows with missing values in 'score' (1)"]


def test_infinite_scores_are_refused():
    frame = small_frame().assign(score=[0.1, np.inf, 0.3, 0.5, 0.2, 0.4])
    with pytest.raises(BayesreproError, match="infinite"):
        build_model_frame("score ~ system + (1|item)", frame)


def test_single_level_factors_are_refused():
    only_x = pd.concat([small_frame()] * 2).query("system == 'x'")
    with pytest.raises(BayesreproError, match="grouping factor 'system' has a single level"):
        build_model_frame("score ~ 1 + (1|item) + (1|system)", only_x)
    with pytest.raises(BayesreproError, match="fixed-effect factor 'system' has a single level"):
        build_model_frame("score ~ system + (1|item)", only_x)


def test_describe_design_tells_crossed_nested_and_balance(ter):
    design = describe_design(ter, ["sentence_id", "system", "replication"])
    assert design.levels == {"sentence_id": 1041, "system": 3, "replication": 3}
    assert design.relations[("sentence_id", "system")] == "fully crossed"
    assert not design.balanced  # Baseline has one replication, the others three
    nested = pd.DataFrame({"batch": list("aabbcc"), "cask": list("uvwxyz"), "score": range(6)})
    assert describe_design(nested, ["batch", "cask"]).relations[("batch", "cask")] == "cask nested in batch"


def test_read_table_drops_the_categories_no_kept_row_uses_and_keeps_the_others():
    frame = small_frame().assign(item=lambda f: pd.Categorical(f["item"], categories=["a", "b", "c", "d"]),
                                 system=lambda f: pd.Categorical(f["system"]))
    read = read_table(frame, where="system == 'x'")
    assert list(read["item"].cat.categories) == ["a", "b", "c"]      # 'd' was never used
    assert list(read["system"].cat.categories) == ["x"]
    full = read_table(frame.iloc[:4])
    assert list(full["item"].cat.categories) == ["a", "b"]
    assert list(full["system"].cat.categories) == ["x", "y"]
    assert frame["item"].cat.categories.size == 4                     # the caller's frame is left as it was
