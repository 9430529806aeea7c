"""ParlAI unigram F1 and knowledge F1 for knowledge-grounded dialogue (MSDP).

Follows ParlAI ``parlai/core/metrics.py`` (``normalize_answer``, ``F1Metric``) as used by
Megatron-LM ``tasks/msdp/metrics.py`` (Liu et al. 2022): text is lowercased, every character of
``!"#$%&()*+,-./:;<=>?@[]\\^`{|}~_'`` becomes a space, the articles a/an/the become spaces and
whitespace is collapsed; precision, recall and F1 come from the multiset overlap of the unigrams
of one response and one reference; the corpus scores are the means over pairs. A pair whose
reference is empty (or Wizard of Wikipedia's ``no_passages_used``) is skipped; an empty
response scores 0. Knowledge F1 (KF1) is the same F1 against the gold knowledge sentence.

``word_tokenized`` is the word tokenisation Megatron's MSDP applies to prompts and to the response
references (``" ".join(nltk.word_tokenize(text))``), run offline: ``word_tokenize(text,
preserve_line=True)`` skips the Punkt sentence splitter, whose model (punkt_tab) is a separate
download. The Treebank rules are the same; the difference is that only a text's last full stop is
split off, so inside a multi-sentence text "hot. Yes" stays "hot." "Yes" where the default gives
"hot" "." "Yes". After the normalisation above (punctuation becomes a space) the unigrams are the
same; what tokenisation changes in F1 is contractions ("don't" -> "do n't" -> "do n t", "cannot" ->
"can not").
"""
from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

_PUNCTUATION = re.compile(r"[!\"#$%&()*+,\-./:;<=>?@\[\]\\^`{|}~_']")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
NO_PASSAGE = "no_passages_used"


def word_tokens(text: str) -> list[str]:
    """nltk's Treebank word tokens of `text`, without the Punkt sentence model (see the docstring)."""
    from nltk.tokenize import word_tokenize

    return word_tokenize(text, preserve_line=True)


def word_tokenized(text: str) -> str:
    """`text` as Megatron's MSDP writes prompts and references: its word tokens joined by spaces."""
    return " ".join(word_tokens(text))


def parlai_normalize(text: str) -> str:
    """ParlAI ``normalize_answer``: lower, punctuation to spaces, drop articles, collapse spaces."""
    text = _PUNCTUATION.sub(" ", text.lower())
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def unigram_prf(response: str, reference: str) -> tuple[float, float, float] | None:
    """(precision, recall, f1) of one pair, or None when the reference is empty (skipped)."""
    reference = reference.strip()
    if reference in ("", NO_PASSAGE):
        return None
    if response.strip() == "":
        return 0.0, 0.0, 0.0
    pred = parlai_normalize(response).split()
    gold = parlai_normalize(reference).split()
    same = sum((Counter(gold) & Counter(pred)).values())
    if same == 0:
        return 0.0, 0.0, 0.0
    precision = same / len(pred)
    recall = same / len(gold)
    return precision, recall, 2 * precision * recall / (precision + recall)


def unigram_f1_scores(responses: Sequence[str], references: Sequence[str]) -> dict[str, float]:
    """Mean ``{"precision", "recall", "f1", "count"}`` over pairs with a non-empty reference."""
    if len(responses) != len(references):
        raise ValueError(f"{len(responses)} responses but {len(references)} references")
    scores = [s for s in (unigram_prf(g, a) for g, a in zip(responses, references)) if s is not None]
    if not scores:
        raise ValueError("every reference is empty; there is nothing to score")
    n = len(scores)
    return {
        "precision": sum(s[0] for s in scores) / n,
        "recall": sum(s[1] for s in scores) / n,
        "f1": sum(s[2] for s in scores) / n,
        "count": n,
    }


def knowledge_f1_scores(responses: Sequence[str], knowledge: Sequence[str]) -> dict[str, float]:
    """Knowledge F1 (KF1): unigram F1 of each response against its gold knowledge sentence."""
    return unigram_f1_scores(responses, knowledge)
