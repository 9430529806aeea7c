"""Top-k retrieval accuracy as DPR computes it (and Megatron's tasks/orqa/unsupervised/qa_utils.py,
copied from DPR): a question counts as answered at k when one of its top-k passages contains an
answer. The containment check (`has_answer`): NFD-normalise, tokenise with DPR's SimpleTokenizer
(runs of letters/digits/marks, or any single other non-space character), lowercase, then look for
the answer's token sequence as a contiguous sub-sequence of the passage's tokens. `match="regex"`
(CuratedTREC) searches each answer as a case-insensitive regular expression instead. As in DPR the
passage's text is checked, not its title.
"""

from __future__ import annotations

import functools
import unicodedata
from typing import Sequence

import regex

KS = (1, 5, 20, 100)
MATCHES = ("string", "regex")
_TOKEN = regex.compile(r"([\p{L}\p{N}\p{M}]+)|([^\p{Z}\p{C}])", flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)


def normalize(text: str) -> str:
    return unicodedata.normalize("NFD", text)


def simple_tokens(text: str) -> list[str]:
    """DPR SimpleTokenizer's words, lowercased (its `words(uncased=True)`)."""
    return [m.group().lower() for m in _TOKEN.finditer(text)]


@functools.lru_cache(maxsize=65536)
def _answer_tokens(answer: str) -> tuple[str, ...]:
    return tuple(simple_tokens(normalize(answer)))


def _regex_match(text: str, pattern: str) -> bool:
    try:  # DPR: an answer that is not a valid pattern never matches
        compiled = regex.compile(pattern, flags=regex.IGNORECASE | regex.UNICODE | regex.MULTILINE)
    except Exception:
        return False
    return compiled.search(text) is not None


def has_answer(answers: Sequence[str], text: str, match: str = "string") -> bool:
    """True when `text` contains one of `answers` (see the module docstring)."""
    if match not in MATCHES:
        raise ValueError(f"unknown match {match!r}; choose one of {', '.join(MATCHES)}")
    text = normalize(text)
    if match == "regex":
        return any(_regex_match(text, normalize(a)) for a in answers)
    words = simple_tokens(text)
    for answer in answers:
        tokens = list(_answer_tokens(answer))
        n = len(tokens)
        for i in range(len(words) - n + 1):
            if words[i:i + n] == tokens:
                return True
    return False


def hits(answers: Sequence[str], ranked_texts: Sequence[str], match: str = "string") -> list[bool]:
    """has_answer for each ranked passage of one question."""
    return [has_answer(answers, t, match) for t in ranked_texts]


def top_k_accuracy(hit_lists: Sequence[Sequence[bool]], ks: Sequence[int] = KS) -> dict[str, float]:
    """{"top{k}": % of questions with a hit among their first k passages} (DPR reports percent)."""
    n = len(hit_lists)
    if n == 0:
        raise ValueError("top-k accuracy of no questions")
    out = {}
    for k in ks:
        answered = sum(1 for h in hit_lists if any(h[:k]))
        out[f"top{k}"] = 100.0 * answered / n
    return out


def parse_ks(text: str, most: int = 100_000) -> tuple[int, ...]:
    """'1,5,20,100' -> (1, 5, 20, 100); each k an integer in [1, most]."""
    usage = f"--top-k {text!r}: expected comma-separated positive integers up to {most} such as 1,5,20,100"
    try:
        ks = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(usage) from None
    if not ks or min(ks) < 1 or max(ks) > most:
        raise ValueError(usage)
    return ks
