"""Data properties of test items, to condition comparisons on."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from .errors import BayesreproError

# Hagmann & Riezler's sentence-length classes (in words): short ≤ 15, typical 16–55, very long > 55.
LENGTH_EDGES = (15, 55)
LENGTH_LABELS = ("short", "typical", "very long")
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")


def length_class(lengths, edges=LENGTH_EDGES, labels=LENGTH_LABELS) -> pd.Categorical:
    """Bin lengths into ordered classes: (0, e1], (e1, e2], …, (e_last, ∞)."""
    values = pd.to_numeric(pd.Series(lengths), errors="coerce")
    if values.isna().any():
        raise BayesreproError("lengths must be numbers; found a missing or non-numeric value")
    if len(labels) != len(edges) + 1:
        raise BayesreproError(f"{len(edges)} edges make {len(edges) + 1} classes, but {len(labels)} labels were given")
    bins = [-np.inf, *edges, np.inf]
    return pd.cut(values, bins, labels=list(labels)).array


def words(text: str) -> list[str]:
    """Lower-cased word tokens: runs of letters/digits, keeping inner apostrophes (don't, l'homme)."""
    return _WORD.findall(str(text).lower())


def word_rarity(texts, reference=None, aggregate: str = "sum") -> np.ndarray:
    """Rarity of each text: negative log empirical probability of its words.

    p̂(w) = count(w) / total count over ``reference`` (default: the distinct
    ``texts`` themselves). ``aggregate="sum"`` gives −Σ log p̂(w) (Platanios et
    al. 2019's sentence rarity, which grows with length), ``"mean"`` the
    per-word average. A word absent from the reference counts as seen once.
    """
    if aggregate not in ("sum", "mean"):
        raise BayesreproError(f"rarity aggregate '{aggregate}' is unknown; use 'sum' or 'mean'")
    texts = [str(t) for t in texts]
    corpus = pd.unique(pd.Series(texts)) if reference is None else [str(t) for t in reference]
    counts: dict[str, int] = {}
    for text in corpus:
        for word in words(text):
            counts[word] = counts.get(word, 0) + 1
    total = sum(counts.values())
    if total == 0:
        raise BayesreproError("word rarity needs a reference corpus with at least one word")
    log_total = np.log(total)
    result = np.empty(len(texts))
    for k, text in enumerate(texts):
        tokens = words(text)
        if not tokens:
            raise BayesreproError(f"text {k} ({text!r}) has no words; rarity is undefined, remove or fix that row")
        surprisal = [log_total - np.log(counts.get(word, 1)) for word in tokens]
        result[k] = np.sum(surprisal) if aggregate == "sum" else np.mean(surprisal)
    return result


def readability(texts) -> np.ndarray:
    """Flesch–Kincaid grade level of each text (textstat's syllable counts)."""
    try:
        import textstat
    except ImportError:
        raise BayesreproError(
            "readability needs the package textstat; install it with: pip install textstat==0.7.3"
        ) from None
    result = np.empty(len(texts))
    for k, text in enumerate(texts):
        if not words(text):
            raise BayesreproError(f"text {k} ({str(text)!r}) has no words; readability is undefined, remove or fix that row")
        result[k] = float(textstat.flesch_kincaid_grade(str(text)))
    return result


TEXT_PROPERTIES = ("length", "length_class", "readability", "rarity")


def add_text_properties(frame: pd.DataFrame, text: str, properties=TEXT_PROPERTIES, prefix: str | None = None,
                        rarity_aggregate: str = "sum") -> pd.DataFrame:
    """A copy of ``frame`` with data properties of its raw-text column ``text`` added.

    Columns ``{prefix}_length`` (words), ``{prefix}_length_class`` (short ≤ 15
    < typical ≤ 55 < very long), ``{prefix}_readability`` (Flesch–Kincaid
    grade) and ``{prefix}_rarity`` (see ``word_rarity``; word probabilities
    from the distinct texts, so an item scored by many systems counts once).
    ``prefix`` defaults to the text column's name.
    """
    from .data import require_columns

    require_columns(frame, [text], "text column")
    unknown = set(properties) - set(TEXT_PROPERTIES)
    if unknown:
        raise BayesreproError(f"unknown text propert(ies) {', '.join(sorted(unknown))}; choose from {', '.join(TEXT_PROPERTIES)}")
    values = frame[text]
    if values.isna().any():
        raise BayesreproError(f"text column '{text}' has {int(values.isna().sum())} missing value(s); remove those rows")
    prefix = prefix or text
    distinct = pd.Index(pd.unique(values.astype(str)))
    position = distinct.get_indexer(values.astype(str))
    out = frame.copy()
    lengths = np.array([len(words(t)) for t in distinct])
    if "length" in properties:
        out[f"{prefix}_length"] = lengths[position]
    if "length_class" in properties:
        out[f"{prefix}_length_class"] = pd.Categorical(np.asarray(length_class(lengths))[position],
                                                       categories=list(LENGTH_LABELS), ordered=True)
    if "readability" in properties:
        out[f"{prefix}_readability"] = readability(list(distinct))[position]
    if "rarity" in properties:
        out[f"{prefix}_rarity"] = word_rarity(list(distinct), aggregate=rarity_aggregate)[position]
    return out
