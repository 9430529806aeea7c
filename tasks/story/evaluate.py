"""The paper's automatic metrics on generated stories.

- repeat_4: share of the generated stories that hold at least one 4-gram twice (the paper's Repeat-4,
  after Guan et al. 2020; lower is better).
- distinct_4: distinct 4-grams / all 4-grams, counted over the whole set of generated stories (a
  4-gram in two stories is one distinct 4-gram; higher is better).
  Both count 4-grams of word tokens, as the paper's data is tokenised (Guan et al.'s ROC release:
  lowercased, "she did n't", "[male] 's", "park ."): `story_tokens` lowercases a story's generated
  sentences and splits each with NLTK's Treebank word tokenizer (`word_tokenize(...,
  preserve_line=True)`, which needs no downloaded data; text is first cut into sentences after
  . ! or ?, since without punkt only a line's last period is split off), a placeholder such as
  [MALE] staying one token. The 4-grams run on across sentence ends within a story.
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
PLACEHOLDER_TOKEN = re.compile(r"(\[[a-z]+\])")  # [male], [female], [neutral], [place] (after lowercasing)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def story_tokens(sentences: list[str]) -> list[str]:
    """The generated sentences of one story as Repeat-4/Distinct-4 see them: lowercased word tokens."""
    from nltk.tokenize import word_tokenize

    out: list[str] = []
    for sentence in sentences:
        for part in PLACEHOLDER_TOKEN.split(sentence.lower()):
            if PLACEHOLDER_TOKEN.fullmatch(part):
                out.append(part)
                continue
            for piece in SENTENCE_END.split(part.strip()):
                if piece:
                    out.extend(word_tokenize(piece, preserve_line=True))
    return out


def repeat_4(stories: list[list[str]]) -> float:
    return repeat_n([story_tokens(s) for s in stories], 4)


def distinct_4(stories: list[list[str]]) -> float:
    return distinct_n([story_tokens(s) for s in stories], 4)


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
