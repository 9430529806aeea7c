"""DPR top-k retrieval accuracy and its answer-matching rule.

Follows DPR's ``has_answer`` and ``calculate_matches`` (``dpr/data/qa_validation.py``, Karpukhin et
al. 2020; copied into Megatron-LM ``tasks/orqa/unsupervised/qa_utils.py``):

- ``string`` mode: the passage and each answer are NFD-normalised, split with DPR's
  ``SimpleTokenizer`` (runs of letters/digits/marks ``[\\p{L}\\p{N}\\p{M}]+``, or any other single
  character that is neither separator nor control ``[^\\p{Z}\\p{C}]``), lowercased; the passage
  has the answer if the answer's tokens occur contiguously in the passage's tokens. An answer
  with no tokens at all matches every passage, as in DPR.
- ``regex`` mode (CuratedTREC): each NFD-normalised answer is a pattern of the ``regex`` package
  (as DPR imports it, so ``\\p{L}`` and the like compile), searched with IGNORECASE | UNICODE |
  MULTILINE in the NFD-normalised passage; an answer that does not compile never matches.

Top-k accuracy is the fraction of questions for which any of the first k retrieved passages has
an answer, under the keys ``top1``, ``top5``, ... As in DPR, the passage text alone is checked.
"""
from __future__ import annotations

import functools
import unicodedata
from typing import Iterable, Sequence

import regex

MATCHES = ("string", "regex")
_FLAGS = regex.IGNORECASE | regex.UNICODE | regex.MULTILINE
_TOKEN = regex.compile(r"([\p{L}\p{N}\p{M}]+)|([^\p{Z}\p{C}])", flags=_FLAGS)


def simple_tokenize(text: str) -> list[str]:
    """DPR ``SimpleTokenizer`` words of ``text`` as given, lowercased (its ``words(uncased=True)``)."""
    return [m.group().lower() for m in _TOKEN.finditer(text)]


def dpr_tokenize(text: str) -> list[str]:
    """The tokens ``has_answer`` compares: ``simple_tokenize`` of NFD-normalised ``text``."""
    return simple_tokenize(unicodedata.normalize("NFD", text))


@functools.lru_cache(maxsize=65536)
def _answer_tokens(answer: str) -> tuple[str, ...]:
    # the same answers are checked against every retrieved passage: tokenise each once
    return tuple(dpr_tokenize(answer))


def _regex_match(text: str, pattern: str) -> bool:
    try:  # DPR: an answer that is not a valid pattern never matches
        compiled = regex.compile(pattern, flags=_FLAGS)
    except Exception:
        return False
    return compiled.search(text) is not None


def has_answer(answers: Iterable[str], text: str, match: str = "string") -> bool:
    """True if ``text`` contains any of ``answers`` under DPR's ``string`` or ``regex`` rule."""
    if match not in MATCHES:
        raise ValueError(f"unknown match mode {match!r}; use one of {', '.join(MATCHES)}")
    if match == "regex":
        text = unicodedata.normalize("NFD", text)
        return any(_regex_match(text, unicodedata.normalize("NFD", a)) for a in answers)
    words = dpr_tokenize(text)
    for answer in answers:
        target = list(_answer_tokens(answer))
        n = len(target)
        if any(words[i : i + n] == target for i in range(len(words) - n + 1)):
            return True
    return False


def top_k_accuracy(hits: Sequence[Sequence[bool]], ks: Sequence[int] = (1, 5, 20, 100)) -> dict[str, float]:
    """``{"top<k>": fraction of questions with a hit among their first k passages}``, in [0, 1].

    ``hits[i][j]`` says whether the j-th ranked passage of question i has an answer.
    """
    if not hits:
        raise ValueError("no questions to score")
    if any(k < 1 for k in ks):
        raise ValueError(f"every k must be at least 1, got {list(ks)}")
    return {f"top{k}": sum(any(h[:k]) for h in hits) / len(hits) for k in ks}


def retrieval_top_k_accuracy(
    answers: Sequence[Sequence[str]],
    passages: Sequence[Sequence[str]],
    ks: Sequence[int] = (1, 5, 20, 100),
    match: str = "string",
) -> dict[str, float]:
    """Top-k accuracy from each question's gold ``answers`` and its ranked passage texts."""
    if len(answers) != len(passages):
        raise ValueError(f"{len(answers)} answer lists but {len(passages)} passage lists")
    hits = [[has_answer(a, text, match) for text in ranked] for a, ranked in zip(answers, passages)]
    return top_k_accuracy(hits, ks)
