"""Keywords of a sentence (the paper extracts them from the gold sentences with RAKE): YAKE! (PyPI
`yake`, Campos et al. 2020, a maintained unsupervised single-document extractor with its own
stopword lists, offline), one-word keywords, lowercased, without name placeholders or function
words, most relevant first."""

from __future__ import annotations

import re
from functools import lru_cache

from megazoo.tasks.story.delex import FUNCTION_WORDS, PLACEHOLDER

MAX_KEYWORDS = 2
EXTRA_STOP = frozenset("""was were is are be been being had has have did do does got get went go could would should
can will just very really too also then still so because felt wanted luckily finally sadly unfortunately
planned hoped""".split())


@lru_cache(maxsize=4)
def _extractor(top: int):
    import yake

    return yake.KeywordExtractor(lan="en", n=1, top=top, dedupLim=0.9)


def extract_keywords(sentence: str, k: int = MAX_KEYWORDS) -> list[str]:
    """Up to `k` keywords of one sentence, most relevant first (YAKE!'s lower score first, ties in
    the sentence's order)."""
    text = PLACEHOLDER.sub(" ", sentence)
    order = {w: i for i, w in reversed(list(enumerate(re.findall(r"[a-z']+", text.lower()))))}
    out = []
    for word, _score in _extractor(k + 6).extract_keywords(text):
        w = word.lower()
        if (w in out or w in FUNCTION_WORDS or w in EXTRA_STOP or not w.isalpha() or len(w) < 3
                or w not in order):
            continue
        out.append(w)
    return out[:k]


def story_keywords(sentences: list[str], k: int = MAX_KEYWORDS) -> list[list[str]]:
    return [extract_keywords(s, k) for s in sentences]


def format_keywords(words: list[str]) -> str:
    return ", ".join(words) if words else "none"


def parse_keywords(text: str, k: int = 4) -> list[str]:
    """The keyword predictor's output `a, b` -> ["a", "b"] (lowercased, at most k, 'none' -> [])."""
    words = [w.strip().lower() for w in text.split("\n")[0].split(",")]
    words = [w for w in words if w and w != "none" and re.fullmatch(r"[a-z][a-z' -]*", w)]
    return list(dict.fromkeys(words))[:k]
