"""The full loop: sentences 2-5 of every story from its first sentence, one step at a time for all
stories together: keywords (given, predicted, or none) -> optional WordNet antonyms (-ANT) ->
knowledge retrieved for them -> ranked -> the generator's next sentence."""

from __future__ import annotations

from megazoo.tasks.story.inputs import STEPS, generator_prompt, keyword_prompt
from megazoo.tasks.story.keywords import parse_keywords
from megazoo.tasks.story.models import first_sentence
from megazoo.tasks.story.wordnet_kb import antonym


def swap_antonyms(words: list[str]) -> tuple[list[str], int]:
    """(keywords with each replaced by a WordNet antonym where one exists, how many were replaced)."""
    out, n = [], 0
    for w in words:
        a = antonym(w)
        out.append(a if a else w)
        n += a is not None
    return out, n


def write_stories(stories, generator, given=None, predictor=None, kb=None, ranker=None, antonyms: bool = False,
                  n_knowledge: int = 2, candidates: int = 8, n_keywords: int = 2) -> list[dict]:
    """One record per (delexicalised) story: id, first, keywords, knowledge, sentences (and, with
    antonyms, original_keywords)."""
    records = [{"id": s.id, "first": s.sentences[0], "keywords": [], "knowledge": [], "sentences": []}
               for s in stories]
    if antonyms:
        for r in records:
            r["original_keywords"] = []
    contexts = [[s.sentences[0]] for s in stories]
    for t in range(STEPS):
        if given is not None:
            words = [list(g[t]) for g in given]
        elif predictor is not None:
            words = [parse_keywords(x, n_keywords) for x in predictor.complete([keyword_prompt(c) for c in contexts])]
        else:
            words = [[] for _ in stories]
        prompts = []
        for r, c, w in zip(records, contexts, words):
            if antonyms:
                r["original_keywords"].append(w)
                w, _ = swap_antonyms(w)
            know = kb.retrieve(w, candidates) if kb is not None and w else []
            if ranker is not None:
                know = ranker.order(c, know)
            know = know[:n_knowledge]
            r["keywords"].append(w)
            r["knowledge"].append(know)
            prompts.append(generator_prompt(c, know, w))
        for r, c, text in zip(records, contexts, generator.complete(prompts)):
            sentence = first_sentence(text)
            r["sentences"].append(sentence)
            c.append(sentence)
    return records
