"""Morphological variants through WordNet's morphy: a word's base forms for every part of speech
("walked" -> walk, "ran" -> run, "children" -> child), so "walk" and "walking" match."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _wordnet():
    from megazoo.eval.metrics.wordnet import load_wordnet

    return load_wordnet()


@lru_cache(maxsize=65536)
def base_forms(word: str) -> frozenset[str]:
    """The word itself and its WordNet base forms (lowercased)."""
    w = word.lower()
    wn = _wordnet()
    forms = {w}
    for pos in ("n", "v", "a", "r"):
        base = wn.morphy(w, pos)
        if base:
            forms.add(base.lower())
    return frozenset(forms)


def same_word(a: str, b: str) -> bool:
    """True when a and b are the same word or inflections of one base form."""
    return bool(base_forms(a) & base_forms(b))
