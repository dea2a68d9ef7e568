"""Agreement coefficients against published worked examples and hand computations."""

import numpy as np
import pandas as pd
import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.instruments.agreement import agreement, cohen_kappa, krippendorff_alpha, scott_pi

nan = np.nan

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example A:
# binary data, two observers, ten units; published alpha = 0.095.
KRIPPENDORFF_A = np.array([[0, 1, 0, 0, 0, 0, 0, 0, 1, 0],
                           [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]]).T

# The same paper, example C: four observers, twelve units, missing values;
# published nominal alpha = 0.743 and interval alpha = 0.849.
KRIPPENDORFF_C = np.array([[1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
                           [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
                           [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
                           [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan]]).T

# Wikipedia, "Krippendorff's alpha", computational example: three coders,
# fifteen units; published nominal alpha = 0.691 and interval alpha = 0.811.
WIKIPEDIA = np.array([[nan, nan, nan, nan, nan, 3, 4, 1, 2, 1, 1, 3, 3, nan, 3],
                      [1, nan, 2, 1, 3, 3, 4, 3, nan, nan, nan, nan, nan, nan, nan],
                      [nan, nan, 2, 1, 3, 4, 4, nan, 2, 1, 1, 3, 3, nan, 4]]).T


def test_krippendorff_binary_two_observers_example():
    alpha = krippendorff_alpha(KRIPPENDORFF_A, level="nominal")
    assert round(alpha, 3) == 0.095
    # coincidences: o_01 = 4, n_0 = 14, n_1 = 6, n = 20
    assert alpha == pytest.approx(1 - 19 * 4 / (14 * 6))


def test_krippendorff_missing_data_examples():
    assert round(krippendorff_alpha(KRIPPENDORFF_C, level="nominal"), 3) == 0.743
    assert round(krippendorff_alpha(KRIPPENDORFF_C, level="interval"), 3) == 0.849
    assert round(krippendorff_alpha(WIKIPEDIA, level="nominal"), 3) == 0.691
    assert round(krippendorff_alpha(WIKIPEDIA, level="interval"), 3) == 0.811


def test_high_agreement_with_skewed_values_gives_negative_alpha():
    # Eight units, the raters agree on six (all 0) and split on two:
    # o_01 = 2, n_0 = 14, n_1 = 2, n = 16, so alpha = 1 - 15 * 2 / (14 * 2) = -1/14.
    ratings = np.array([[0, 0, 0, 0, 0, 0, 1, 0],
                        [0, 0, 0, 0, 0, 0, 0, 1]]).T
    assert krippendorff_alpha(ratings, level="nominal") == pytest.approx(-1 / 14)


@pytest.mark.parametrize("units, published, digits, compositions", [
    (10, 0.095, 3, {(5, 1, 4), (1, 5, 4)}),
    (8, -0.07, 2, {(6, 0, 2), (0, 6, 2)}),
])
def test_the_thesis_examples_fix_the_composition_of_a_binary_two_rater_table(units, published, digits, compositions):
    """The thesis quotes alpha = 0.095 for a ten-unit and -0.07 for an eight-unit two-rater
    table. For binary ratings alpha depends only on how many units are (0,0), (1,1) and
    split: over every such composition (splits in either direction), exactly one, up to
    swapping the values, rounds to the published figure, so these tables reproduce the
    thesis's whatever the order of its units."""
    found = set()
    for zeros in range(units + 1):
        for ones in range(units + 1 - zeros):
            for split_01 in range(units + 1 - zeros - ones):
                split_10 = units - zeros - ones - split_01
                rows = [(0, 0)] * zeros + [(1, 1)] * ones + [(0, 1)] * split_01 + [(1, 0)] * split_10
                if zeros == units or ones == units:
                    continue  # one value only: alpha undefined
                if round(krippendorff_alpha(np.array(rows), level="nominal"), digits) == published:
                    found.add((zeros, ones, split_01 + split_10))
    assert found == compositions


def test_cohen_kappa_and_scott_pi_on_a_two_by_two_table():
    # 50 units: both yes 20, a yes / b no 5, a no / b yes 10, both no 15.
    # p_o = 0.7; kappa: p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5 -> 0.4 (the Wikipedia example);
    # pi: pooled yes = 0.55, p_e = 0.55^2 + 0.45^2 = 0.505 -> 0.195 / 0.495.
    a = [1] * 25 + [0] * 25
    b = [1] * 20 + [0] * 5 + [1] * 10 + [0] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert scott_pi(a, b) == pytest.approx(0.195 / 0.495)


def test_interval_kappa_is_quadratically_weighted():
    # D_o = (0 + 1 + 0) / 3; D_e = mean of (a_i - b_j)^2 over the 9 pairs = 15 / 9.
    assert cohen_kappa([1, 2, 3], [1, 3, 3], "interval") == pytest.approx(1 - (1 / 3) / (15 / 9))


def test_alpha_is_pi_with_the_small_sample_correction():
    # two raters, no missing values, n = 2N pairable values: 1 - alpha = (1 - pi) (n - 1) / n
    rng = np.random.default_rng(4)
    a = rng.integers(0, 4, 30)
    b = np.where(rng.random(30) < 0.6, a, rng.integers(0, 4, 30))
    for level in ("nominal", "interval"):
        alpha = krippendorff_alpha(np.column_stack([a, b]), level=level)
        pi = scott_pi(a, b, level)
        assert 1 - alpha == pytest.approx((1 - pi) * 59 / 60)


def test_units_with_one_rating_do_not_count():
    extra = np.vstack([KRIPPENDORFF_A, [[1, nan]], [[nan, 0]]])
    assert krippendorff_alpha(extra, level="nominal") == pytest.approx(krippendorff_alpha(KRIPPENDORFF_A, level="nominal"))


def long_frame(table):
    units, raters = np.nonzero(~np.isnan(table.astype(float)))
    return pd.DataFrame({"unit": units, "coder": [f"c{r}" for r in raters],
                         "value": table.astype(float)[units, raters]})


def test_long_data_front_end():
    two = agreement(long_frame(KRIPPENDORFF_A), "unit", "coder", "value")
    assert two.krippendorff_alpha == pytest.approx(krippendorff_alpha(KRIPPENDORFF_A, level="nominal"))
    assert two.cohen_kappa == pytest.approx(cohen_kappa(KRIPPENDORFF_A[:, 0], KRIPPENDORFF_A[:, 1]))
    assert two.scott_pi == pytest.approx(scott_pi(KRIPPENDORFF_A[:, 0], KRIPPENDORFF_A[:, 1]))
    assert (two.n_items, two.n_raters) == (10, 2)
    four = agreement(long_frame(KRIPPENDORFF_C), "unit", "coder", "value", level="interval")
    assert round(four.krippendorff_alpha, 3) == 0.849
    assert four.cohen_kappa is None and four.scott_pi is None and "exactly 2 raters" in four.note


def test_long_data_with_units_made_of_several_columns(annotation):
    marking = annotation[annotation["mode"] == "Marking"]
    with pytest.raises(BayesreproError, match=r"rater '\d+' rated the unit \(sentence '\d+'\) 3 times"):
        agreement(marking, "sentence", "rater", "score", "interval")   # the three occasions are not told apart
    by_occasion = agreement(marking, ["sentence", "occasion"], "rater", "score", "interval")
    assert (by_occasion.n_items, by_occasion.n_raters) == (15, 10)
    wide = marking.pivot_table(index=["sentence", "occasion"], columns="rater", values="score",
                               observed=True)
    assert by_occasion.krippendorff_alpha == pytest.approx(krippendorff_alpha(wide.to_numpy(), level="interval"))


@pytest.mark.parametrize("change, level, match", [
    (lambda f: f.assign(value=f["value"].astype(str).replace("1.0", "yes")), "interval",
     "score column 'value' is not numeric: .* holds 'yes'; the interval level needs numbers"),
    (lambda f: f[f["coder"] == "c0"], "nominal", "at least 2"),
    (lambda f: f.rename(columns={"coder": "who"}), "nominal", "rater column 'coder'"),
    (lambda f: f.assign(value=1.0), "nominal", "undefined"),
])
def test_bad_input_is_one_line_error(change, level, match):
    frame = change(long_frame(KRIPPENDORFF_A))
    with pytest.raises(BayesreproError, match=match):
        agreement(frame, "unit", "coder", "value", level)


def test_unknown_level_is_refused():
    with pytest.raises(BayesreproError, match="level must be one of nominal, ordinal, interval, ratio, not 'cardinal'"):
        krippendorff_alpha(KRIPPENDORFF_A, level="cardinal")
