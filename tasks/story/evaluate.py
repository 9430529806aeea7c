"""The paper's automatic metrics on generated stories.

- repeat_4: share of stories whose generated sentences (joined, lowercased, split on whitespace)
  hold some 4-gram twice (Guan et al. 2020's Repeat-4; lower is better).
- distinct_4: distinct 4-grams / all 4-grams over every story's generated sentences, tokenised the
  same way (higher is better).
- control_rate: of the (generated sentence, given keyword) pairs, the share whose sentence contains
  the keyword or a morphological variant of it (WordNet base forms: walk ~ walked ~ walking; a
  multi-word keyword needs each of its words); with one keyword a sentence this is the share of
  sentences that follow their keyword.
- ppl: exp(mean negative log-likelihood per token) of the gold sentences 2-5 under the generator,
  each given the sentences before it (ppl.py).
"""

from __future__ import annotations

import re

from megazoo.eval.metrics.generation import distinct_n, repeat_n
from megazoo.tasks.story.morph import same_word

WORDS = re.compile(r"[a-z]+(?:'[a-z]+)?")


def story_text(sentences: list[str]) -> str:
    """The generated sentences of one story as Repeat-4/Distinct-4 see them: joined and lowercased."""
    return " ".join(sentences).lower()


def repeat_4(stories: list[list[str]]) -> float:
    return repeat_n([story_text(s) for s in stories], 4)


def distinct_4(stories: list[list[str]]) -> float:
    return distinct_n([story_text(s) for s in stories], 4)


def contains(sentence: str, keyword: str) -> bool:
    """True when every word of `keyword` occurs in the sentence as itself or a variant."""
    words = WORDS.findall(sentence.lower())
    parts = WORDS.findall(keyword.lower())
    return bool(parts) and all(any(same_word(p, w) for w in words) for p in parts)


def control_counts(sentences: list[list[str]], keywords: list[list[list[str]]]) -> tuple[int, int]:
    """(pairs whose keyword appears, pairs) over stories: sentences[i][t] against keywords[i][t]."""
    hit = total = 0
    for story, story_kw in zip(sentences, keywords):
        for sentence, kws in zip(story, story_kw):
            for k in kws:
                total += 1
                hit += contains(sentence, k)
    return hit, total


def control_rate(sentences: list[list[str]], keywords: list[list[list[str]]]) -> float:
    hit, total = control_counts(sentences, keywords)
    return hit / total if total else 0.0
