"""Question-answering metrics: SQuAD exact match / F1 and BioASQ factoid accuracy / MRR.

SQuAD follows the official evaluation scripts (``evaluate-v1.1.py`` and ``evaluate-v2.0.py``):
answers are normalised by lowercasing, deleting punctuation (``string.punctuation``), deleting
the articles a/an/the and collapsing whitespace; EM is equality of the normalised strings, F1 is
the bag-of-tokens overlap F1; a question scores the maximum over its gold answers, and the corpus
scores are means over questions times 100.

BioASQ factoid follows the BioASQ Task B definitions as used by BioBERT/BioMegatron: strict
accuracy (the top-ranked candidate matches a gold synonym), lenient accuracy (any of the top 5
matches) and mean reciprocal rank of the first match within the top 5; matching is
case-insensitive equality after stripping surrounding whitespace.
"""
from __future__ import annotations

import re
import string
from collections import Counter
from typing import Sequence

from megazoo.eval.metrics._util import check_pairs

_PUNCTUATION = frozenset(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def squad_normalize(text: str) -> str:
    """The official SQuAD ``normalize_answer``: lower, drop punctuation and articles, fix spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _token_f1(prediction: str, gold: str, v2: bool) -> float:
    pred_tokens = squad_normalize(prediction).split()
    gold_tokens = squad_normalize(gold).split()
    if v2 and (not pred_tokens or not gold_tokens):
        # evaluate-v2.0.py: a no-answer gold (or an empty prediction) scores 1 only if both are empty.
        return float(pred_tokens == gold_tokens)
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def _golds(golds: Sequence[str] | str, v2: bool) -> list[str]:
    if isinstance(golds, str):
        golds = [golds]
    golds = list(golds)
    if not golds:
        if not v2:
            raise ValueError("a question has no gold answer (use squad_v2=True for unanswerable questions)")
        golds = [""]  # evaluate-v2.0.py: an unanswerable question's only gold answer is ''
    return golds


def squad_exact_match(prediction: str, golds: Sequence[str] | str, squad_v2: bool = False) -> float:
    """1.0 if the normalised prediction equals any normalised gold answer, else 0.0."""
    pred = squad_normalize(prediction)
    return float(any(pred == squad_normalize(g) for g in _golds(golds, squad_v2)))


def squad_f1(prediction: str, golds: Sequence[str] | str, squad_v2: bool = False) -> float:
    """Bag-of-tokens F1 of one prediction, the maximum over its gold answers (in [0, 1])."""
    return max(_token_f1(prediction, g, squad_v2) for g in _golds(golds, squad_v2))


def squad_scores(
    predictions: Sequence[str], references: Sequence[Sequence[str]], squad_v2: bool = False
) -> dict[str, float]:
    """Corpus SQuAD scores ``{"exact_match", "f1"}`` on the official 0-100 scale.

    ``references[i]`` lists the gold answer texts of question i. With ``squad_v2=True`` an empty
    list marks an unanswerable question (gold ``''``) and empty token lists follow v2.0's rule.
    """
    check_pairs(predictions, references)
    em = sum(squad_exact_match(p, g, squad_v2) for p, g in zip(predictions, references))
    f1 = sum(squad_f1(p, g, squad_v2) for p, g in zip(predictions, references))
    n = len(predictions)
    return {"exact_match": 100.0 * em / n, "f1": 100.0 * f1 / n}


def _flatten_synonyms(golds: Sequence[str] | Sequence[Sequence[str]] | str) -> list[str]:
    # BioASQ stores factoid ``exact_answer`` as a list of synonym lists; accept flat lists too.
    if isinstance(golds, str):
        return [golds]
    flat: list[str] = []
    for g in golds:
        flat.extend([g] if isinstance(g, str) else list(g))
    return flat


def _bioasq_match(candidate: str, golds: list[str]) -> bool:
    c = candidate.strip().lower()
    return any(c == g.strip().lower() for g in golds)


def bioasq_factoid_scores(
    predictions: Sequence[Sequence[str]],
    references: Sequence[Sequence[str] | Sequence[Sequence[str]]],
    top_k: int = 5,
) -> dict[str, float]:
    """BioASQ factoid ``{"strict_accuracy", "lenient_accuracy", "mrr"}`` in [0, 1].

    ``predictions[i]`` is the ranked candidate list of question i (only the first ``top_k``
    = 5 count), ``references[i]`` its gold synonyms (flat, or BioASQ's list of synonym lists).
    """
    check_pairs(predictions, references)
    strict = lenient = rr = 0.0
    for candidates, golds in zip(predictions, references):
        if isinstance(candidates, str):
            raise TypeError("each prediction must be a ranked list of candidate strings")
        flat = _flatten_synonyms(golds)
        for rank, cand in enumerate(list(candidates)[:top_k], start=1):
            if _bioasq_match(cand, flat):
                strict += rank == 1
                lenient += 1
                rr += 1.0 / rank
                break
    n = len(predictions)
    return {"strict_accuracy": strict / n, "lenient_accuracy": lenient / n, "mrr": rr / n}

