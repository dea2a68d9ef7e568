"""Text properties checked against closed forms: word counts, negative log empirical probabilities, Flesch–Kincaid."""

import math
import sys

import numpy as np
import pandas as pd
import pytest

from bayesrepro.errors import BayesreproError
from bayesrepro.properties import add_text_properties, length_class, readability, word_rarity, words


def test_rarity_is_negative_log_empirical_probability():
    # corpus counts: a 2, b 1, c 1 of 4 words
    rarity = word_rarity(["a b", "a c"])
    assert rarity == pytest.approx([-math.log(2 / 4) - math.log(1 / 4)] * 2)
    assert word_rarity(["a b", "a c"], aggregate="mean") == pytest.approx([(math.log(2) + math.log(4)) / 2] * 2)


def test_rarity_against_a_reference_counts_unseen_words_once():
    rarity = word_rarity(["zebra a"], reference=["a a a b"])
    assert rarity[0] == pytest.approx(-math.log(1 / 4) - math.log(3 / 4))


def test_flesch_kincaid_matches_its_formula():
    pytest.importorskip("textstat")
    # 6 one-syllable words, 1 sentence: 0.39 * 6 + 11.8 * 1 - 15.59 = -1.45; textstat rounds to 1 decimal
    assert readability(["The cat sat on the mat."])[0] == pytest.approx(-1.45, abs=0.051)
    # 4 words, 6 syllables (e-le-phants, walk, slow-ly, home), 1 sentence
    expected = 0.39 * 4 + 11.8 * 6 / 4 - 15.59
    assert readability(["Elephants walk slowly home."])[0] == pytest.approx(expected, abs=0.051)


def test_missing_textstat_is_a_clear_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "textstat", None)
    with pytest.raises(BayesreproError, match="pip install textstat==0.7.3"):
        readability(["A sentence."])


def test_add_text_properties_counts_each_distinct_text_once():
    frame = pd.DataFrame({"src": ["a b", "a c", "a b", "a b"], "system": ["x", "x", "y", "z"]})
    out = add_text_properties(frame, "src", properties=("length", "length_class", "rarity"))
    assert list(out["src_length"]) == [2, 2, 2, 2]
    assert list(out["src_length_class"].astype(str)) == ["short"] * 4
    # probabilities from the distinct texts "a b", "a c" (not from the repeated rows)
    assert out["src_rarity"].to_numpy() == pytest.approx([math.log(8)] * 4)
    assert "src_rarity" not in frame.columns


def test_length_classes_follow_the_papers_edges():
    lengths = [15, 16, 55, 56]
    assert list(np.asarray(length_class(lengths))) == ["short", "typical", "typical", "very long"]
    assert len(words("one two three, four-five")) == 5


def test_bad_text_input_is_refused():
    with pytest.raises(BayesreproError, match="text column 'text' is not a column"):
        add_text_properties(pd.DataFrame({"src": ["a"]}), "text")
    with pytest.raises(BayesreproError, match="has no words"):
        word_rarity(["a b", "..."])
    with pytest.raises(BayesreproError, match="unknown text propert"):
        add_text_properties(pd.DataFrame({"src": ["a"]}), "src", properties=("colour",))
