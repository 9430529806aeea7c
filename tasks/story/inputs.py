"""The prompts of the keyword predictor and the conditional generator, and their training pairs.

Generator (context + knowledge + keywords -> next sentence):
    Story: <sentences 1..t>
    Knowledge: <top knowledge sentences, each ending in "."> | none
    Keywords: <k1>, <k2> | none
    Next:                                    response: " <sentence t+1>"
Keyword predictor (context -> the next sentence's keywords):
    Story: <sentences 1..t>
    Keywords of the next sentence:           response: " <k1>, <k2>"
Training pairs come from delexicalised stories, four steps each (t = 1..4), keywords extracted from
the gold sentence (keywords.py: RAKE, the paper's, or YAKE!), knowledge retrieved for them. A seeded
share of the generator's pairs drops the keywords (and with them the knowledge: the uncontrolled
setting) and another share drops only the knowledge, so that "none" is a setting the generator has seen.

`swap_antonyms` (megazoo's addition, not the paper's): a seeded share of the pairs swaps each keyword
that has a WordNet antonym and stands as a word in the gold sentence for that antonym, in the
keywords and the sentence alike ("felt happy" -> "felt unhappy"). The generator then sees keywords
that go against the story so far and learns to follow the keywords rather than the story, which is
what the -ANT experiment asks of it. 0 keeps the paper's data.
"""

from __future__ import annotations

import random
import re

from megazoo.tasks.story.keywords import DEFAULT_EXTRACTOR, format_keywords, story_keywords

STEPS = 4  # the first sentence is given, sentences 2-5 are written


def generator_prompt(context: list[str], knowledge: list[str], keywords: list[str]) -> str:
    know = " ".join(k.rstrip(".") + "." for k in knowledge) if knowledge else "none"
    return f"Story: {' '.join(context)}\nKnowledge: {know}\nKeywords: {format_keywords(keywords)}\nNext:"


def keyword_prompt(context: list[str]) -> str:
    return f"Story: {' '.join(context)}\nKeywords of the next sentence:"


def swap_in_sentence(sentence: str, keywords: list[str], antonym) -> tuple[str, list[str]]:
    """The sentence and keywords with each keyword that has an antonym (antonym(word) -> str | None)
    and occurs as a whole word of the sentence replaced by it (its first occurrence; a capital kept)."""
    out_words = []
    for w in keywords:
        a = antonym(w)
        match = re.search(rf"\b{re.escape(w)}\b", sentence, flags=re.IGNORECASE) if a else None
        if match is None:
            out_words.append(w)
            continue
        new = a.replace("_", " ")
        if match.group(0)[:1].isupper():
            new = new[:1].upper() + new[1:]
        sentence = sentence[:match.start()] + new + sentence[match.end():]
        out_words.append(a.replace("_", " "))
    return sentence, out_words


def generator_pairs(stories, kb, n_knowledge: int = 2, n_keywords: int = 2, drop_keywords: float = 0.15,
                    drop_knowledge: float = 0.15, seed: int = 0, swap_antonyms: float = 0.0,
                    antonym=None, extractor: str = DEFAULT_EXTRACTOR) -> list[tuple[str, str]]:
    """(prompt, response) pairs of every step of every (delexicalised) story. `antonym` (word ->
    antonym or None; WordNet's by default) serves the `swap_antonyms` share; `extractor` (rake | yake)
    gives the gold sentences' keywords."""
    if swap_antonyms and antonym is None:
        from megazoo.tasks.story.wordnet_kb import antonym
    rng = random.Random(seed)
    out = []
    for story in stories:
        words = story_keywords(story.sentences, n_keywords, extractor)
        for t in range(1, len(story.sentences)):
            kw, target = words[t], story.sentences[t]
            r = rng.random()
            if drop_keywords + drop_knowledge <= r < drop_keywords + drop_knowledge + swap_antonyms:
                target, kw = swap_in_sentence(target, kw, antonym)
            know = kb.retrieve(kw, n_knowledge) if kb is not None else []
            if r < drop_keywords:
                kw, know = [], []
            elif r < drop_keywords + drop_knowledge:
                know = []
            out.append((generator_prompt(story.sentences[:t], know, kw), " " + target))
    return out


def keyword_pairs(stories, n_keywords: int = 2, extractor: str = DEFAULT_EXTRACTOR) -> list[tuple[str, str]]:
    out = []
    for story in stories:
        words = story_keywords(story.sentences, n_keywords, extractor)
        for t in range(1, len(story.sentences)):
            out.append((keyword_prompt(story.sentences[:t]), " " + format_keywords(words[t])))
    return out
