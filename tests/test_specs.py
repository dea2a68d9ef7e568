"""Named specs: the papers' published figures through the spec files, column templating, one-line errors."""

import pytest

from bayesrepro.datasets import load_dataset
from bayesrepro.errors import BayesreproError
from bayesrepro.design import build_model_frame
from bayesrepro.frequentist.glrt import glrt
from bayesrepro.frequentist.lmm import fit_lmm
from bayesrepro.reliability import vca_table
from bayesrepro.specs import list_specs, load_spec

PAPER_SPECS = {"system_comparison", "conditional_length", "grid_vca", "minimal_phi", "annotation",
               "meta_importance", "learning_rate_length"}


def test_every_paper_design_has_a_spec():
    assert PAPER_SPECS <= set(list_specs())


@pytest.mark.parametrize("name", sorted(PAPER_SPECS))
def test_spec_builds_both_engines_model_frame_on_its_dataset(name):
    spec = load_spec(name)
    data = spec.prepare(load_dataset("kreutzer_marking_partial" if spec.dataset == "kreutzer_marking_full" else spec.dataset))
    frame = build_model_frame(spec.formula, data)
    names = [g.name for g in frame.groups]
    assert spec.object is None or spec.object in names
    assert set(spec.facets) <= set(names)


def test_system_comparison_spec_gives_published_glrt(ter):
    # thesis Table 2.2: chi2 = 34.09, df = 2
    spec = load_spec("system_comparison")
    test = glrt(spec.h0, spec.formula, spec.prepare(ter))
    assert test.df == 2 and test.chi2 == pytest.approx(34.09, abs=0.005)


def test_conditional_spec_derives_length_classes_and_gives_published_glrt(ter):
    # published interaction test: chi2 = 32.43, df = 4
    spec = load_spec("conditional_length")
    data = spec.prepare(ter)
    assert "len" not in ter.columns and set(data["len"].astype(str)) == {"short", "typical", "very long"}
    test = glrt(spec.h0, spec.formula, data)
    assert test.df == 4 and test.chi2 == pytest.approx(32.43, abs=0.005)


def test_annotation_spec_gives_published_post_edit_components(annotation):
    # thesis Table 3.2 (Post Edit): sentence 60.4 %, sentence:rater 23.7 %, residual 13.4 %
    spec = load_spec("annotation")
    part = spec.prepare(annotation)
    fit = fit_lmm(spec.formula, part[part[spec.split] == "Post Edit"])
    percent = vca_table(fit.variances)["percent"]
    assert percent["sentence"] == pytest.approx(60.4, abs=0.05)
    assert percent["sentence:rater"] == pytest.approx(23.7, abs=0.05)
    assert percent["Residual"] == pytest.approx(13.4, abs=0.05)


def test_meta_importance_spec_gives_published_shares():
    # tutorial table: hidden_number 31.0 %, learning_rate 6.2 %, residual 61.2 %
    spec = load_spec("meta_importance")
    percent = vca_table(fit_lmm(spec.formula, spec.prepare(load_dataset("sofa_mlp_grid"))).variances)["percent"]
    assert percent["hidden_number"] == pytest.approx(31.0, abs=0.05)
    assert percent["learning_rate"] == pytest.approx(6.2, abs=0.05)
    assert percent["Residual"] == pytest.approx(61.2, abs=0.05)


def test_renamed_columns_give_the_same_answer(ter):
    renamed = ter.rename(columns={"ter": "bleu", "sentence_id": "segment", "system": "model"})
    spec = load_spec("system_comparison", score="bleu", item="segment", system="model")
    assert spec.formula == "bleu ~ model + (1|segment)"
    test = glrt(spec.h0, spec.formula, spec.prepare(renamed))
    assert test.chi2 == pytest.approx(34.09, abs=0.005)


def test_missing_column_is_one_line_naming_parameter_and_fix(ter):
    spec = load_spec("system_comparison", score="TER")
    with pytest.raises(BayesreproError) as error:
        spec.prepare(ter)
    message = str(error.value)
    assert "\n" not in message
    assert "'TER'" in message and "{score}" in message and "did you mean 'ter'" in message and "score=COLUMN" in message


def test_missing_source_of_a_derived_column_is_reported(ter):
    spec = load_spec("conditional_length", length="n_words")
    with pytest.raises(BayesreproError, match="'n_words' for \\{length\\}"):
        spec.prepare(ter)


def test_unknown_parameter_and_unknown_spec_are_refused():
    with pytest.raises(BayesreproError, match="no column parameter scor;"):
        load_spec("system_comparison", scor="x")
    with pytest.raises(BayesreproError, match="no spec named 'nope'.*system_comparison"):
        load_spec("nope")
    with pytest.raises(BayesreproError, match="cannot appear in a formula"):
        load_spec("system_comparison", score="my score")


def test_spec_file_by_path_and_undefined_template(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text('analysis = "reliability"\n[columns]\nscore = "y"\n[model]\nformula = "{score} ~ 1 + (1|{item})"\n')
    with pytest.raises(BayesreproError, match=r"uses \{item\}.*\[columns\] does not define it"):
        load_spec(path)
    path.write_text('analysis = "reliability"\n[columns]\nscore = "y"\nitem = "g"\n[model]\nformula = "{score} ~ 1 + (1|{item})"\n')
    assert load_spec(str(path)).formula == "y ~ 1 + (1|g)"


VALID = ('title = "t"\nanalysis = "comparison"\n[columns]\nscore = "score"\nitem = "item"\nsystem = "system"\n'
         '[model]\nh0 = "{score} ~ 1 + (1|{item})"\nh1 = "{score} ~ {system} + (1|{item})"\nfactor = "{system}"\n')


@pytest.mark.parametrize("text, message", [
    ('analysis = "comparison"\ncolumns = 5\n', "[columns] must be a table of PARAMETER = \"column\", not 5"),
    ('analysis = "comparison"\nmodel = 7\n', "[model] must be a table, not 7"),
    ('analysis = "comparison"\nderive = 5\n', "[[derive]] must be an array of tables, not 5"),
    ('analysis = "comparison"\nderive = [1]\n', "[[derive]] must be an array of tables, not 1"),
    ('analysis = "comparison"\ntitle = ["a"]\n', "title must be a text, not list"),
    ('analysis = 3\n', "analysis must be a text, not 3"),
    ('analysis = "comparison"\n[columns]\nscore = 5\n', "[columns] score must be a column name in quotes, not 5"),
    ('analysis = "comparison"\n[model]\nh0 = ["a"]\n', "[model] h0 must be a text, not list"),
    ('analysis = "comparison"\n[model]\nfacets = "seed"\n', "[model] facets must be a list of texts"),
    (VALID.replace('h0 = "{score}', 'h0 = "{score:>999999999999}'), "{score:>999999999999} in"),
    (VALID.replace('h0 = "{score}', 'h0 = "{score!r}'), "{score!r} in"),
    (VALID.replace('h0 = "{score}', 'h0 = "{score.__class__}'), "{score.__class__} in"),
    (VALID.replace('h0 = "{score}', 'h0 = "{score[0]}'), "{score[0]} in"),
    (VALID.replace('factor = "{system}"', 'factor = "{0}"'), "{0} in"),
    (VALID.replace('factor = "{system}"', 'factor = "{}"'), "{} in"),
    (VALID.replace('factor = "{system}"', 'factor = "{system"'), "is malformed"),
])
def test_a_malformed_spec_is_one_line_naming_the_key(text, message, tmp_path):
    path = tmp_path / "hostile.toml"
    path.write_text(text)
    with pytest.raises(BayesreproError) as refused:
        load_spec(path)
    assert message in str(refused.value) and "\n" not in str(refused.value)


def test_templates_fill_column_names_and_keep_literal_braces(tmp_path):
    path = tmp_path / "braces.toml"
    path.write_text(VALID.replace('title = "t"', 'title = "t"\ndescription = "d"'))
    assert load_spec(path).h0 == "score ~ 1 + (1|item)"
    with pytest.raises(BayesreproError, match="column parameter item must be a column name"):
        load_spec(path, item=5)


def test_a_hostile_spec_on_the_command_line_exits_2_before_reading_data(tmp_path, capsys, monkeypatch):
    import bayesrepro.report
    from bayesrepro.cli import main

    monkeypatch.setattr(bayesrepro.report, "write_report", lambda *a, **k: pytest.fail("the report was started"))
    path = tmp_path / "hostile.toml"
    path.write_text(VALID.replace('h0 = "{score}', 'h0 = "{score:>999999999999}'))
    assert main(["report", "kreutzer_ter", "--spec", str(path), "--out", str(tmp_path / "r.html")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("bayesrepro: error: spec 'hostile': {score:>999999999999}")
