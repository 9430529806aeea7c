"""A ConceptNet-format knowledge base built offline from WordNet 3.0 (Debian's wordnet-base through
nltk's reader), and WordNet antonyms for the -ANT experiment.

For each word of a vocabulary (its base form's first senses): Synonym (other lemmas of the sense),
Antonym (lemma.antonyms()), IsA (hypernyms of the first noun sense), HasA (its part meronyms) and
PartOf (its part holonyms), with multi-word lemmas as phrases ("baked goods"). The triples are written
as ConceptNet 5 CSV, so a real ConceptNet dump works in its place unchanged.
"""

from __future__ import annotations

from functools import lru_cache

from megazoo.tasks.story.knowledge import Triple
from megazoo.tasks.story.morph import _wordnet, base_forms

PER_RELATION = 2


def _name(lemma) -> str:
    return lemma.name().replace("_", " ").lower()


def _senses(word: str, limit: int = 2):
    wn = _wordnet()
    out = []
    for base in sorted(base_forms(word), key=lambda b: (b != word, b)):
        for s in wn.synsets(base)[:limit]:
            if s not in out:
                out.append(s)
    return out


def word_triples(word: str) -> list[Triple]:
    """The WordNet assertions of one word (deterministic order)."""
    w = word.lower()
    out: list[Triple] = []

    def add(rel: str, tails) -> None:
        kept = [t for t in dict.fromkeys(tails) if t and t != w][:PER_RELATION]
        out.extend(Triple(w, rel, t) for t in kept)

    senses = _senses(w)
    add("Synonym", [_name(lemma) for s in senses for lemma in s.lemmas()])
    add("Antonym", [_name(a) for s in senses for lemma in s.lemmas() if lemma.name().lower() in base_forms(w)
                    for a in lemma.antonyms()])
    nouns = [s for s in senses if s.pos() == "n"]
    if nouns:
        first = nouns[0]
        add("IsA", [_name(h.lemmas()[0]) for h in first.hypernyms()])
        add("HasA", [_name(m.lemmas()[0]) for m in first.part_meronyms()])
        add("PartOf", [_name(m.lemmas()[0]) for m in first.part_holonyms()])
    return out


def build_wordnet_kb(vocabulary) -> list[Triple]:
    out: list[Triple] = []
    for w in sorted(set(x.lower() for x in vocabulary)):
        out += word_triples(w)
    return out


@lru_cache(maxsize=65536)
def antonym(word: str) -> str | None:
    """A WordNet antonym of the word (of a sense whose lemma is the word or its base form), or None."""
    bases = base_forms(word)
    wn = _wordnet()
    for base in sorted(bases, key=lambda b: (b != word.lower(), b)):
        for s in wn.synsets(base):
            for lemma in s.lemmas():
                if lemma.name().lower() == base and lemma.antonyms():
                    return _name(lemma.antonyms()[0])
    return None
