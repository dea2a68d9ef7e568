import json

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


def test_crossed_codes_number_the_combinations_as_factorising_their_tuples_does():
    """The crossed grouping factor's integer keys give the codes and level order of pandas' factorisation of the
    rows' (code, code, ...) tuples, missing codes (-1) included."""
    import numpy as np

    from bayesrepro.design.fixed_and_groups import _crossed_codes

    rng = np.random.default_rng(3)
    for sizes in ([3, 5], [40, 1, 7], [2, 300, 4]):
        codes = [rng.integers(-1, size, 2000).astype(np.int16) for size in sizes]
        expected, combinations = pd.factorize(pd.MultiIndex.from_arrays(codes), sort=True)
        found, found_combinations = _crossed_codes(codes, sizes)
        np.testing.assert_array_equal(found, expected)
        assert found_combinations == [tuple(int(c) for c in combo) for combo in combinations]


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


# --- names that are legal in a CSV header but not plain identifiers -----------------------------------------

ODD_NAMES = ['x") TO \'out.csv\'; --', "a b", 'c"d', "it's", "g|h", "p(q)", "t~u", "DROP TABLE x; --", "é"]


def odd_frame(names):
    """Rows whose fixed factor, grouping factor, slope and score columns carry ``names`` (one each)."""
    import numpy as np

    rng = np.random.default_rng(4)
    rows = []
    for g in range(10):
        effect, slope = rng.normal(), rng.normal(0, 0.3)
        for system in ("A", "B"):
            for x in (0.0, 1.0, 2.0):
                rows.append((f"g{g}", system, x, effect + slope * x + 0.5 * (system == "B") + rng.normal(0, 0.2)))
    frame = pd.DataFrame(rows, columns=["group", "system", "x", "score"])
    return frame.rename(columns=dict(zip(["group", "system", "x", "score"], names)))


def quoted(name):
    return f"`{name}`"


@pytest.mark.parametrize("engine", ["memory", "duckdb"])
@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_column_names_in_backticks_fit_as_plain_ones_with_every_engine(name, engine, tmp_path, monkeypatch):
    import bayesrepro as br

    monkeypatch.chdir(tmp_path)
    plain = odd_frame(["group", "system", "x", "score"])
    expected = br.Model("score ~ system + (1|group)", plain, where="system != 'C'").fit().to_dict()
    names = [name, name + "2", name + "3", name + "4"]
    odd_frame(names).to_csv("odd.csv", index=False)
    g, system, _, score = map(quoted, names)
    model = br.Model(f"{score} ~ {system} + (1|{g})", "odd.csv", engine=engine, object=g,
                     where=f"{system} != 'C'")
    fit = model.fit().to_dict()
    assert fit["reml_criterion"] == pytest.approx(expected["reml_criterion"], rel=1e-9)
    assert [c["variance"] for c in fit["components"]] == pytest.approx(
        [c["variance"] for c in expected["components"]], rel=1e-6)
    assert fit["object"] == name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["odd.csv"]   # nothing written: no SQL ran from a name


@pytest.mark.parametrize("name", ODD_NAMES)
def test_odd_names_as_slopes_and_in_terms_rebuilt_as_text(name):
    import bayesrepro as br

    names = [name, name + "2", name + "3", name + "4"]
    g, system, x, score = map(quoted, names)
    plain = odd_frame(["group", "system", "x", "score"])
    expected = br.Model("score ~ C(system) + I(x * 2) + (1 + x|group)", plain).fit().to_dict()
    fit = br.Model(f"{score} ~ C({system}) + I({x} * 2) + (1 + {x}|{g})", odd_frame(names)).fit().to_dict()
    assert fit["reml_criterion"] == pytest.approx(expected["reml_criterion"], rel=1e-7)
    spec = parse_formula(f"{score} ~ {system}*{x} + (1 + {x}||{g})", slopes=True)
    # the parts rebuilt as text parse back to the same model
    again = parse_formula(spec.rewritten(), slopes=True)
    assert (again.response, again.fixed_variables, again.group_factors) == (
        spec.response, spec.fixed_variables, spec.group_factors) == (names[3], (names[1], names[2]), ((name,),))
    assert again.random_terms == spec.random_terms


def test_nested_operators_in_a_call_keep_their_parentheses():
    data = odd_frame(["group", "system", "x", "score"]).assign(z=lambda d: (d["x"] + 1) * 2)
    computed = build_model_frame("score ~ I((x + 1) * 2) + (1|group)", data)
    # (formulae names the column I(x + 1 * 2), but the term rebuilt as text keeps the parentheses)
    assert computed.spec.fixed_terms == ("I((x + 1) * 2)",)
    assert computed.X[:, 1].tolist() == data["z"].tolist()


@pytest.mark.parametrize("formula", ["y ~ 1 + (1|`a`b`)", "y ~ 1 + (1|`a``b`)", "y ~ `a + (1|g)", "`y` ~ `x``"])
def test_a_backtick_inside_a_backticked_name_is_named(formula):
    with pytest.raises(BayesreproError, match=r"has a backtick inside a backticked name .*rename that column"):
        parse_formula(formula)


@pytest.mark.parametrize("term, expected", [
    ("seed", r"repeats the term 'seed' 3000 times, too often to parse; a term counts once"),
    ("(1|item)", r"repeats the term '\(1\|item\)' 3000 times"),
    ("C(seed)", r"repeats the term 'C\(seed\)' 3000 times"),
])
def test_a_term_repeated_thousands_of_times_is_named(term, expected):
    with pytest.raises(BayesreproError, match=expected):
        parse_formula("score ~ 1 + " + " + ".join([term] * 3000) + " + (1|g)")
    # repeated a few hundred times it parses, and counts once
    assert parse_formula("score ~ 1 + " + " + ".join([term] * 300) + " + (1|g)").group_factors[-1] == ("g",)


def test_thousands_of_distinct_terms_are_refused_saying_so():
    with pytest.raises(BayesreproError, match=r"has 3002 terms or parentheses nested too deeply to parse"):
        parse_formula("score ~ 1 + " + " + ".join(f"x{k}" for k in range(3000)) + " + (1|item)")


@pytest.mark.parametrize("name", ['x") TO \'out.csv\'; --', "a b"])
def test_plan_takes_a_compared_factor_named_oddly(name, tmp_path, monkeypatch, capsys):
    from bayesrepro.cli import main

    monkeypatch.chdir(tmp_path)
    odd_frame([name, name + "2", "x", "score"]).to_csv("odd.csv", index=False)
    status = main(["plan", "odd.csv", "--formula", f"score ~ `{name}2` + (1|`{name}`)", "--contrast", f"{name}2=B-A",
                   "--vary", f"{name}=5,10", "--simulations", "0", "--json"])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert len(json.loads(out)["rows"]) == 2   # one row per number of levels tried
    # a term of the factor is not the factor: refused as before
    assert main(["plan", "odd.csv", "--formula", f"score ~ C(`{name}2`) + (1|`{name}`)", "--contrast",
                 f"{name}2=B-A", "--vary", f"{name}=5,10", "--simulations", "0"]) == 2
    assert "the fixed part must be the compared factor" in capsys.readouterr().err
