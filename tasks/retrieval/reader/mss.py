"""Masked salient spans (REALM; Sachan et al. 2021 initialise it from ICT): a sentence with one of
its salient spans (salient.py: a named entity, a date or a number) masked is the query, the span is
the answer the reader must find in the retrieved blocks.

    mss_examples(passages, tokenizer_mask="[MASK]", seed=0)
    -> [Question("[MASK] landed on the Moon on 20 July 1969 .", ["Apollo 11"]), ...]

The sentences come from the given passages (the training questions' positive passages: training
documents only). The span's sentence stays in its passage in the collection (REALM drops that
trivial candidate; on a collection of a few hundred passages little else holds the span).
"""

from __future__ import annotations

import numpy as np

from megazoo.tasks.retrieval.data import Question
from megazoo.tasks.retrieval.evaluate import simple_tokens
from megazoo.tasks.retrieval.reader.salient import salient_spans


def mss_examples(texts: list[str], mask: str = "[MASK]", seed: int = 0, per_passage: int = 2,
                 min_words: int = 6) -> list[Question]:
    """Up to `per_passage` masked sentences of each text (one random span each; spans of 1-4 words
    of at least 3 characters, in a sentence of `min_words` words or more)."""
    from megazoo.core.data.text import split_sentences

    rng = np.random.RandomState(seed)
    out = []
    for text in texts:
        sentences = [s for s in split_sentences(text) if len(s.split()) >= min_words]
        made = 0
        for i in rng.permutation(len(sentences)):
            s = sentences[int(i)]
            spans = [sp for sp in salient_spans(s) if 1 <= len(simple_tokens(sp.text)) <= 4 and len(sp.text) >= 3]
            if not spans:
                continue
            sp = spans[int(rng.randint(len(spans)))]
            out.append(Question(s[:sp.start] + mask + s[sp.end:], [sp.text]))
            made += 1
            if made == per_passage:
                break
    return out
