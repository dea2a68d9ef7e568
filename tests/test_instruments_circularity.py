"""Circularity test on generated data with a known defining feature."""

import numpy as np
import pandas as pd
import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.instruments.circularity import circularity_test
from bayesrepro.instruments.liver_sofa import (FEATURES, fit_regression_tree, liver_sofa_score,
                                               make_liver_data)


def test_liver_sofa_cutoffs():
    bilirubin = [0.5, 1.19, 1.2, 1.99, 2.0, 5.99, 6.0, 11.99, 12.0, 30.0]
    assert list(liver_sofa_score(bilirubin)) == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]


def test_tree_learns_a_step_rule():
    x = np.linspace(0, 10, 400)[:, None]
    y = (x[:, 0] > 3.3).astype(float) + (x[:, 0] > 7.1)
    tree = fit_regression_tree(x, y, max_depth=3, min_leaf=5)
    assert np.array_equal(tree.predict(x), y)
    assert tree.predict([[3.2], [3.4], [7.2]]).tolist() == [0.0, 1.0, 2.0]


@pytest.fixture(scope="module")
def models():
    train, test = make_liver_data(600, seed=1), make_liver_data(500, seed=2)
    features = list(FEATURES)
    others = [f for f in features if f != "bilirubin"]
    with_rule = fit_regression_tree(train[features], train["sofa_liver"], max_depth=4)
    without = fit_regression_tree(train[others], train["sofa_liver"], max_depth=4)
    return test, with_rule.predict(test[features]), without.predict(test[others])


def test_model_given_the_defining_feature_is_flagged(models):
    test, with_rule, _ = models
    assert np.mean(np.round(with_rule) == test["sofa_liver"]) > 0.95  # it learned the rule
    result = circularity_test(test[list(FEATURES)], with_rule, defining=["bilirubin"], max_size=2)
    assert result.candidate == ("bilirubin",)
    assert result.candidate_d2 > 0.9 and result.nullified
    assert result.circular is True
    assert result.defining_d2 == result.candidate_d2


def test_model_without_the_defining_feature_is_not_flagged(models):
    test, _, without = models
    result = circularity_test(test[list(FEATURES)], without, defining=["bilirubin"], max_size=2)
    assert "bilirubin" not in result.candidate
    assert result.circular is False
    assert result.defining_d2 < result.candidate_d2


def test_no_verdict_without_defining_features(models):
    test, with_rule, _ = models
    result = circularity_test(test[["bilirubin", "age"]], with_rule)
    assert result.candidate == ("bilirubin",) and result.circular is None
    assert list(result.ranking["d2"]) == sorted(result.ranking["d2"], reverse=True)


def test_ties_go_to_the_least_complex_subset():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.uniform(size=(300, 3)), columns=["a", "b", "c"])
    predictions = np.sin(5 * frame["a"]) + 0.001 * frame["c"]  # c adds next to nothing
    result = circularity_test(frame, predictions, tie_tolerance=0.01)
    assert result.ranking["subset"].iloc[0] != ("a",)  # a bigger subset fits a hair better ...
    assert result.candidate == ("a",)                   # ... but is tied and more complex


@pytest.mark.parametrize("kwargs, match", [
    (dict(defining=["bili"]), "defining feature 'bili'"),
    (dict(max_size=7), "--max-size"),
    (dict(tie_tolerance=-0.1), "--tie-tolerance"),
])
def test_bad_options(kwargs, match):
    frame = make_liver_data(100, seed=0)[list(FEATURES)]
    with pytest.raises(BayesreproError, match=match):
        circularity_test(frame, 2 * frame["bilirubin"], **kwargs)


def test_bad_data():
    frame = make_liver_data(100, seed=0)[list(FEATURES)]
    with pytest.raises(BayesreproError, match="predictions are constant"):
        circularity_test(frame[["age"]], np.ones(100))
    with pytest.raises(BayesreproError, match="'sex' is not numeric"):
        circularity_test(frame.assign(sex="f"), frame["age"])
    with pytest.raises(BayesreproError, match="'flag' has 2 distinct values"):
        circularity_test(frame.assign(flag=np.arange(100) % 2), frame["age"] + 1)
    with pytest.raises(BayesreproError, match="99 predictions for 100"):
        circularity_test(frame, frame["age"][:99])


def test_predictions_reproduced_exactly_count_as_full_deviance_explained():
    rng = np.random.default_rng(2)
    frame = pd.DataFrame({"x": rng.uniform(size=200), "z": rng.uniform(size=200)})
    result = circularity_test(frame, 2.0 * frame["x"] + 1.0, defining=["x"])
    assert result.candidate == ("x",) and result.candidate_d2 == pytest.approx(1.0)
    assert result.circular is True
