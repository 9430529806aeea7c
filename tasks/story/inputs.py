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
the gold sentence, knowledge retrieved for them. A seeded share of the generator's pairs drops the
keywords (and with them the knowledge: the uncontrolled setting) and another share drops only the
knowledge, so that "none" is a setting the generator has seen.
"""

from __future__ import annotations

import random

from megazoo.tasks.story.keywords import format_keywords, story_keywords

STEPS = 4  # the first sentence is given, sentences 2-5 are written


def generator_prompt(context: list[str], knowledge: list[str], keywords: list[str]) -> str:
    know = " ".join(k.rstrip(".") + "." for k in knowledge) if knowledge else "none"
    return f"Story: {' '.join(context)}\nKnowledge: {know}\nKeywords: {format_keywords(keywords)}\nNext:"


def keyword_prompt(context: list[str]) -> str:
    return f"Story: {' '.join(context)}\nKeywords of the next sentence:"


def generator_pairs(stories, kb, n_knowledge: int = 2, n_keywords: int = 2, drop_keywords: float = 0.15,
                    drop_knowledge: float = 0.15, seed: int = 0) -> list[tuple[str, str]]:
    """(prompt, response) pairs of every step of every (delexicalised) story."""
    rng = random.Random(seed)
    out = []
    for story in stories:
        words = story_keywords(story.sentences, n_keywords)
        for t in range(1, len(story.sentences)):
            kw = words[t]
            know = kb.retrieve(kw, n_knowledge) if kb is not None else []
            r = rng.random()
            if r < drop_keywords:
                kw, know = [], []
            elif r < drop_keywords + drop_knowledge:
                know = []
            out.append((generator_prompt(story.sentences[:t], know, kw), " " + story.sentences[t]))
    return out


def keyword_pairs(stories, n_keywords: int = 2) -> list[tuple[str, str]]:
    out = []
    for story in stories:
        words = story_keywords(story.sentences, n_keywords)
        for t in range(1, len(story.sentences)):
            out.append((keyword_prompt(story.sentences[:t]), " " + format_keywords(words[t])))
    return out
