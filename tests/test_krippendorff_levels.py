"""Krippendorff's alpha at the four levels of measurement, against the `krippendorff` package and the paper."""

import argparse
import doctest
import json
import sys

import krippendorff
import numpy as np
import pandas as pd
import pytest

from bayesrepro.cli import agreement as agreement_command
from bayesrepro.errors import BayesreproError
from bayesrepro.instruments.agreement import LEVELS, agreement, krippendorff_alpha

nan = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C (four observers, twelve
# units, missing values). The paper reports alpha = 0.743 (nominal), 0.815 (ordinal), 0.849 (interval) and
# 0.797 (ratio); krippendorff 0.9.0 gives 0.7434, 0.8154, 0.8491 and 0.7974 on the same table.
PAPER_C = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
                    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
                    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
                    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]])
PUBLISHED_C = {"nominal": 0.743, "ordinal": 0.815, "interval": 0.849, "ratio": 0.797}


def long_form(coders_by_units: np.ndarray) -> pd.DataFrame:
    """One row per value given; the unit and coder as text, as a user's file would hold them."""
    coders, units = np.nonzero(~pd.isna(coders_by_units))
    return pd.DataFrame({"unit": [f"u{u}" for u in units], "coder": [f"c{c}" for c in coders],
                         "value": coders_by_units[coders, units]})


def random_reliability_data(seed: int, level: str) -> np.ndarray:
    """Coders x units, a third of the cells missing; small integer codes or positive reals."""
    rng = np.random.default_rng(seed)
    n_coders, n_units = rng.integers(2, 7), rng.integers(5, 60)
    truth = rng.integers(0, 6, n_units)
    if level in ("nominal", "ordinal"):
        values = np.where(rng.random((n_coders, n_units)) < 0.6, truth, rng.integers(0, 6, (n_coders, n_units)))
    else:
        values = truth + rng.gamma(2.0, 0.5, (n_coders, n_units))
    return np.where(rng.random((n_coders, n_units)) < 0.33, nan, values.astype(float))


@pytest.mark.parametrize("level", LEVELS)
def test_the_papers_example_at_every_level(level):
    ours = krippendorff_alpha(long_form(PAPER_C), unit="unit", coder="coder", value="value", level=level)
    assert round(ours, 3) == PUBLISHED_C[level]
    assert ours == pytest.approx(krippendorff.alpha(reliability_data=PAPER_C, level_of_measurement=level),
                                 rel=0, abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
@pytest.mark.parametrize("seed", range(8))
def test_random_data_with_missing_values_agree_with_the_package(level, seed):
    data = random_reliability_data(seed, level)
    reference = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    long = krippendorff_alpha(long_form(data), unit="unit", coder="coder", value="value", level=level)
    wide = krippendorff_alpha(data.T, level=level)
    assert long == pytest.approx(reference, rel=0, abs=1e-12)
    assert wide == pytest.approx(reference, rel=0, abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_expected_disagreement_summed_in_blocks_is_the_same(level, monkeypatch):
    data = random_reliability_data(11, level)
    whole = krippendorff_alpha(data.T, level=level)
    monkeypatch.setattr(sys.modules["bayesrepro.instruments.agreement"], "_BLOCK", 3)   # a few rows of the distance matrix at a time
    assert krippendorff_alpha(data.T, level=level) == pytest.approx(whole, rel=0, abs=1e-13)


def test_text_values_at_the_nominal_level_are_labels():
    codes = np.array([[1, 2, 1, 3, nan, 2], [1, 2, 2, 3, 1, nan], [nan, 2, 1, 3, 1, 2]])
    labels = {1: "low", 2: "mid", 3: "high"}
    text = long_form(codes).assign(value=lambda f: f["value"].map(labels))
    assert krippendorff_alpha(text, unit="unit", coder="coder", value="value", level="nominal") == pytest.approx(
        krippendorff.alpha(reliability_data=codes, level_of_measurement="nominal"), rel=0, abs=1e-12)
    for level in ("ordinal", "interval", "ratio"):
        with pytest.raises(BayesreproError, match=f"value column 'value' is not numeric: .* the {level} level "
                                                  "needs numbers"):
            krippendorff_alpha(text, unit="unit", coder="coder", value="value", level=level)


def test_ordinal_alpha_depends_on_the_ranks_not_the_spacing():
    stretched = np.where(PAPER_C == 5, 50.0, PAPER_C)
    assert krippendorff_alpha(stretched.T, level="ordinal") == pytest.approx(
        krippendorff_alpha(PAPER_C.T, level="ordinal"), rel=0, abs=1e-12)
    assert krippendorff_alpha(stretched.T, level="interval") != pytest.approx(
        krippendorff_alpha(PAPER_C.T, level="interval"), abs=1e-3)


def test_a_unit_of_several_columns_and_units_with_one_value():
    frame = long_form(PAPER_C)
    frame[["part", "number"]] = frame["unit"].str.extract(r"(u)(\d+)")
    alone = pd.DataFrame({"unit": ["u99", "u98"], "coder": ["c0", "c1"], "value": [7.0, 9.0],
                          "part": ["u", "u"], "number": ["99", "98"]})
    both = krippendorff_alpha(pd.concat([frame, alone]), unit=["part", "number"], coder="coder", value="value",
                              level="ratio")
    assert both == pytest.approx(krippendorff.alpha(reliability_data=PAPER_C, level_of_measurement="ratio"),
                                 rel=0, abs=1e-12)


@pytest.mark.parametrize("call, match", [
    (lambda f: krippendorff_alpha(f, unit="unit", coder="coder", value="value", level="cardinal"),
     "level must be one of nominal, ordinal, interval, ratio, not 'cardinal'"),
    (lambda f: krippendorff_alpha(f, unit="unit", coder="rater", value="value"),
     "coder column 'rater' is not a column of the data"),
    (lambda f: krippendorff_alpha(f, unit="unit", coder="coder", value="score"),
     "value column 'score' is not a column of the data"),
    (lambda f: krippendorff_alpha(f, unit="unit", coder="coder"), r"needs value=: the column"),
    (lambda f: krippendorff_alpha(f[f["coder"] == "c1"], unit="unit", coder="coder", value="value"),
     "coder column 'coder' has 1 coder"),
    (lambda f: krippendorff_alpha(f.drop_duplicates("unit"), unit="unit", coder="coder", value="value"),
     "no unit has values from two or more coders"),
    (lambda f: krippendorff_alpha(f.assign(value=f["value"] - 3), unit="unit", coder="coder", value="value",
                                  level="ratio"), "value column 'value' holds -2.0, but the ratio level needs values of at least 0"),
    (lambda f: krippendorff_alpha(pd.concat([f, f.head(1)]), unit="unit", coder="coder", value="value"),
     r"coder 'c0' rated the unit \(unit 'u0'\) 2 times"),
    (lambda f: krippendorff_alpha(PAPER_C.T, unit="unit"), "unit= name"),
    (lambda f: krippendorff_alpha(f.assign(coder=f["coder"].where(f.index > 0)), unit="unit", coder="coder",
                                  value="value"), "coder column 'coder' has 1 missing value"),
    (lambda f: krippendorff_alpha([["a", "b"], ["a", "a"]], level="ordinal"),
     "the ratings hold text, but the ordinal level needs numbers"),
])
def test_bad_input_is_one_line_naming_the_argument(call, match):
    with pytest.raises(BayesreproError, match=match) as error:
        call(long_form(PAPER_C))
    assert "\n" not in str(error.value)


def test_kappa_and_pi_are_given_at_the_nominal_and_interval_levels_only():
    two = long_form(PAPER_C[1:3])
    nominal = agreement(two, "unit", "coder", "value", "nominal")
    ordinal = agreement(two, "unit", "coder", "value", "ordinal")
    assert nominal.cohen_kappa is not None and ordinal.cohen_kappa is None and ordinal.scott_pi is None
    assert "not ordinal" in ordinal.note
    assert ordinal.krippendorff_alpha == pytest.approx(
        krippendorff.alpha(reliability_data=PAPER_C[1:3], level_of_measurement="ordinal"), rel=0, abs=1e-12)


@pytest.mark.parametrize("level", LEVELS)
def test_the_command_reports_alpha_at_the_chosen_level(level, tmp_path, capsys):
    path = tmp_path / "ratings.csv"
    long_form(PAPER_C).to_csv(path, index=False)
    parser = argparse.ArgumentParser(prog="bayesrepro")
    agreement_command.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["agreement", str(path), "--item", "unit", "--rater", "coder", "--score", "value",
                              "--level", level, "--json"])
    assert args.func(args) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["level"] == level
    assert out["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=PAPER_C, level_of_measurement=level), rel=0, abs=1e-12)


def test_the_documented_example_runs():
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner()
    for test in finder.find(krippendorff_alpha, "krippendorff_alpha", globs={"krippendorff_alpha": krippendorff_alpha}):
        runner.run(test)
    assert runner.summarize(verbose=False) == doctest.TestResults(failed=0, attempted=3)
