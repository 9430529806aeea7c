"""SQuAD exact match and F1, as the official ``evaluate-v1.1.py`` and ``evaluate-v2.0.py`` score them.

Both normalise an answer the same way: lowercase, delete ``string.punctuation``, replace the
words a/an/the by a space, collapse whitespace. EM is equality of normalised strings, F1 the
bag-of-tokens F1; a question takes its best gold answer; the corpus scores are means over
questions (fractions here; the scripts print them times 100). The versions differ at the edges:

- v1.1: every gold answer counts, even one that normalises to nothing; F1 is 0 when no token is
  shared (so two empty strings have EM 1 and F1 0). A question needs a gold answer.
- v2.0: gold answers that normalise to nothing are dropped, and a question left with none (an
  unanswerable one) has the single gold answer ``""``; F1 with an empty side is 1 when both are
  empty, else 0. With no-answer probabilities, a question whose probability exceeds the threshold
  is predicted unanswerable (score 1 when it is, 0 when it is not); ``has_ans_*`` and ``no_ans_*``
  are the same means over the questions with and without gold answers (the script's HasAns_*/NoAns_*).

A question without a prediction (``None``) scores 0, as evaluate-v1.1.py says ("Unanswered question
... will receive score 0").
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
    """The official ``normalize_answer``: lower, drop punctuation, articles to spaces, fix spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def squad_gold_answers(golds: Sequence[str] | str, squad_v2: bool = False) -> list[str]:
    """The gold texts a question is scored against (v2.0: empty-normalising ones dropped, ``[""]`` if none)."""
    golds = [golds] if isinstance(golds, str) else list(golds)
    if squad_v2:
        return [g for g in golds if squad_normalize(g)] or [""]
    if not golds:
        raise ValueError("a SQuAD v1.1 question needs at least one gold answer (use squad_v2=True for "
                         "unanswerable questions)")
    return golds


def _token_f1(prediction: str, gold: str, squad_v2: bool) -> float:
    pred_tokens = squad_normalize(prediction).split()
    gold_tokens = squad_normalize(gold).split()
    if squad_v2 and (not pred_tokens or not gold_tokens):
        return float(pred_tokens == gold_tokens)  # evaluate-v2.0.py: no-answer F1 is 1 only if both are empty
    same = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def squad_exact_match(prediction: str, golds: Sequence[str] | str, squad_v2: bool = False,
                      ignore_spaces: bool = False) -> float:
    """1.0 if the normalised prediction equals a normalised gold answer, else 0.0.

    ``ignore_spaces`` also deletes the spaces of both sides (a reader whose wordpiece decoding
    writes "1, 000" for "1,000" could compare that way); the official scripts and DPR keep them, and
    so do megazoo's scorers: the retrieval reader scores its span's own text in the passage instead
    (tasks/retrieval/reader/evaluate.py), so "new york" never equals "newyork".
    """
    def norm(text: str) -> str:
        text = squad_normalize(text)
        return text.replace(" ", "") if ignore_spaces else text

    pred = norm(prediction)
    return float(any(pred == norm(g) for g in squad_gold_answers(golds, squad_v2)))


def squad_f1(prediction: str, golds: Sequence[str] | str, squad_v2: bool = False) -> float:
    """Bag-of-tokens F1 of one prediction, the maximum over its gold answers (in [0, 1])."""
    return max(_token_f1(prediction, g, squad_v2) for g in squad_gold_answers(golds, squad_v2))


def squad_question_scores(prediction: str, golds: Sequence[str] | str, squad_v2: bool = False) -> tuple[float, float]:
    """(EM, F1) of one prediction, each the best over the gold answers."""
    return squad_exact_match(prediction, golds, squad_v2), squad_f1(prediction, golds, squad_v2)


def _means(em: list[float], f1: list[float], keep: list[int], prefix: str) -> dict[str, float]:
    if not keep:
        return {}
    return {f"{prefix}exact_match": sum(em[i] for i in keep) / len(keep),
            f"{prefix}f1": sum(f1[i] for i in keep) / len(keep)}


def squad_scores(
    predictions: Sequence[str | None],
    references: Sequence[Sequence[str]],
    squad_v2: bool = False,
    no_answer_probs: Sequence[float] | None = None,
    no_answer_threshold: float = 1.0,
) -> dict[str, float]:
    """Corpus ``{"exact_match", "f1"}`` in [0, 1]; with ``squad_v2`` also ``has_ans_*``/``no_ans_*``.

    ``references[i]`` lists the gold answer texts of question i (an empty list: unanswerable, v2.0);
    ``predictions[i]`` is its answer text, or None when it has none (scored 0).
    ``no_answer_probs[i]`` > ``no_answer_threshold`` predicts "no answer" (v2.0's null handling).
    """
    check_pairs(predictions, references)
    if no_answer_probs is not None and len(no_answer_probs) != len(predictions):
        raise ValueError(f"{len(no_answer_probs)} no-answer probabilities for {len(predictions)} questions")
    em: list[float] = []
    f1: list[float] = []
    for i, (pred, golds) in enumerate(zip(predictions, references)):
        e, f = (0.0, 0.0) if pred is None else squad_question_scores(pred, golds, squad_v2)
        if squad_v2 and no_answer_probs is not None and no_answer_probs[i] > no_answer_threshold:
            e = f = float(not golds)
        em.append(e)
        f1.append(f)
    out = _means(em, f1, list(range(len(em))), "")
    if squad_v2:
        out |= _means(em, f1, [i for i, g in enumerate(references) if g], "has_ans_")
        out |= _means(em, f1, [i for i, g in enumerate(references) if not g], "no_ans_")
    return out
