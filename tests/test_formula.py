import pandas as pd
import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.design import build_model_frame, parse_formula


def test_parse_expands_nesting_and_keeps_interaction_groupings():
    spec = parse_formula("y ~ system*len + (1|item) + (1|a/b) + (1|c:d)")
    assert spec.response == "y"
    assert spec.fixed_terms == ("system", "len", "system:len")
    assert spec.group_names == ("item", "a", "a:b", "c:d")


def test_random_slopes_are_refused_clearly():
    with pytest.raises(BayesreproError, match=r"random slope '\(1 \+ x\|g\)'.*not supported"):
        parse_formula("y ~ x + (x|g)")


def test_unparseable_formula_is_one_line():
    with pytest.raises(BayesreproError, match="could not parse formula"):
        parse_formula("y ~ (x")
    with pytest.raises(BayesreproError, match="needs the form"):
        parse_formula("y x")


def test_a_formula_without_any_fixed_part_is_refused_in_one_line():
    data = pd.DataFrame({"g": list("aabbcc"), "y": [1.0, 1.2, 2.0, 2.1, 3.0, 2.9]})
    with pytest.raises(BayesreproError, match="no fixed part.*'1 \\+'"):
        build_model_frame("y ~ 0 + (1|g)", data)


def test_interaction_grouping_has_one_level_per_observed_combination(annotation):
    frame = build_model_frame("score ~ 1 + (1|sentence:rater)", annotation)
    (group,) = frame.groups
    assert group.n_levels == annotation.groupby(["sentence", "rater"], observed=True).ngroups == 50


def test_aliased_fixed_columns_are_dropped_with_a_note(ter):
    data = ter.assign(double_length=2.0 * ter["src_length"])
    frame = build_model_frame("ter ~ src_length + double_length + (1|sentence_id)", data)
    assert frame.fixed_names == ["Intercept", "src_length"]
    assert frame.notes == ["fixed-effect design is rank deficient: dropped double_length"]


def test_confounded_grouping_factors_are_reported():
    data = pd.DataFrame({"a": list("xxyyzz") * 2, "b": list("ppqqrr") * 2, "item": list("uvuvuv") * 2, "y": range(12)})
    frame = build_model_frame("y ~ 1 + (1|item) + (1|a) + (1|b)", data)
    assert any("'a' and 'b' are confounded" in note for note in frame.notes)


def test_reference_grid_rows_use_the_fit_coding(ter):
    frame = build_model_frame("ter ~ system + (1|sentence_id)", ter)
    rows = frame.design_rows(pd.DataFrame({"system": ["Baseline", "PostEdit"]}))
    assert rows.tolist() == [[1.0, 0.0, 0.0], [1.0, 0.0, 1.0]]
