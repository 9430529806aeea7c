"""The official SQuAD evaluation (evaluate-v1.1.py, evaluate-v2.0.py), as functions.

Both normalise an answer the same way (megazoo.eval.metrics.squad_normalize: lowercase, drop
string.punctuation, drop the words a/an/the, collapse whitespace); EM is equality of normalised
strings and F1 the bag-of-tokens F1; a question takes its best gold answer; totals are means x 100.
The versions differ at the edges, and this module keeps each difference:

- v1.1: every gold answer counts, even one that normalises to nothing; F1 is 0 when no token is
  shared (so two empty strings have EM 1 and F1 0).
- v2.0: gold answers that normalise to nothing are dropped; a question left with none (an
  impossible one) has the single gold answer ""; F1 with an empty side is 1 when both are empty,
  else 0. With no-answer probabilities, a question whose probability exceeds the null threshold
  is predicted unanswerable (score 1 when it is, 0 when it is not). HasAns_* and NoAns_* are the
  same means over the answerable and the unanswerable questions.

A question without a prediction is reported (`missing`) and scored 0, as evaluate-v1.1.py does
("Unanswered question ... will receive score 0"); evaluate-v2.0.py prints "Missing prediction"
and then fails on its HasAns split, so here it is scored 0 for v2.0 as well. Predictions for ids
that are not in the data are ignored, as both scripts do. The score stage is stricter: `check_ids`
refuses a predictions file with either (most often a file of another split, or an incomplete run).
"""

from __future__ import annotations

import os
from collections import Counter

from megazoo.eval.metrics.qa import squad_normalize
from megazoo.tasks.synthetic_qa.squad import SquadFormatError, _lined_json


def _f1(prediction: str, gold: str, v2: bool) -> float:
    pred, ref = squad_normalize(prediction).split(), squad_normalize(gold).split()
    if v2 and (not pred or not ref):
        return float(pred == ref)
    same = sum((Counter(pred) & Counter(ref)).values())
    if same == 0:
        return 0.0
    p, r = same / len(pred), same / len(ref)
    return 2 * p * r / (p + r)


def gold_answers(answers: list[str], v2: bool) -> list[str]:
    """The gold texts a question is scored against (v2.0: empty-normalising ones dropped, [""] if none)."""
    if not v2:
        return list(answers)
    kept = [a for a in answers if squad_normalize(a)]
    return kept or [""]


def question_scores(prediction: str, answers: list[str], v2: bool) -> tuple[float, float]:
    """(EM, F1) of one prediction in [0, 1], the best over the gold answers."""
    golds = gold_answers(answers, v2)
    if not golds:
        raise ValueError("a SQuAD v1.1 question needs at least one gold answer")
    pred = squad_normalize(prediction)
    return (max(float(pred == squad_normalize(g)) for g in golds), max(_f1(prediction, g, v2) for g in golds))


def score(questions: list, predictions: dict, v2: bool = False, na_probs: dict | None = None,
          na_threshold: float = 1.0) -> dict:
    """{"n", "metrics": {exact_match, f1[, HasAns_exact_match, HasAns_f1, NoAns_exact_match,
    NoAns_f1]}, "counts", "missing": [ids]} of `predictions` {id: text} on `questions`
    (squad.Question). na_probs {id: p(no answer)} and na_threshold are v2.0's null handling."""
    em, f1, missing = {}, {}, []
    for q in questions:
        if q.id not in predictions:
            missing.append(q.id)
            em[q.id] = f1[q.id] = 0.0
            continue
        if not isinstance(predictions[q.id], str):
            raise ValueError(f"the prediction for {q.id!r} must be a string, got {type(predictions[q.id]).__name__}")
        em[q.id], f1[q.id] = question_scores(predictions[q.id], q.answer_texts, v2)
        if v2 and na_probs is not None and na_probs.get(q.id, 0.0) > na_threshold:
            em[q.id] = f1[q.id] = float(not q.answers)
    n = len(questions)
    if not n:
        raise ValueError("no questions to score")
    metrics = {"exact_match": 100.0 * sum(em.values()) / n, "f1": 100.0 * sum(f1.values()) / n}
    counts = {"total": n}
    if v2:
        for name, ids in (("HasAns", [q.id for q in questions if q.answers]),
                          ("NoAns", [q.id for q in questions if not q.answers])):
            counts[f"{name}_total"] = len(ids)
            if ids:
                metrics[f"{name}_exact_match"] = 100.0 * sum(em[i] for i in ids) / len(ids)
                metrics[f"{name}_f1"] = 100.0 * sum(f1[i] for i in ids) / len(ids)
    return {"n": n, "metrics": metrics, "counts": counts, "missing": missing}


def read_predictions(path: str | os.PathLike) -> dict:
    """A predictions file as the official scripts read it: one JSON object {id: answer text}."""
    obj = _lined_json(path)
    if not isinstance(obj, dict):
        raise SquadFormatError(path, 1, "a predictions file is one JSON object {question id: answer text}")
    for k, v in obj.items():
        if not isinstance(v, str):
            raise SquadFormatError(path, 1, f"the prediction for {k!r} must be a string, got {type(v).__name__}")
    return dict(obj)


def check_ids(questions: list, predictions: dict, data, source, what: str = "predictions") -> None:
    """Refuse (ValueError, one line naming both files) `predictions` {id: ...} that are not for
    exactly the questions of `data`: ids the data lacks, or questions left without one."""
    ids = {q.id for q in questions}
    extra = [k for k in predictions if k not in ids]
    lacking = [q.id for q in questions if q.id not in predictions]
    if not extra and not lacking:
        return
    parts = []
    if extra:
        parts.append(f"{len(extra)} ids that {data} does not have (e.g. {extra[0]!r})")
    if lacking:
        parts.append(f"nothing for {len(lacking)} of its {len(ids)} questions (e.g. {lacking[0]!r})")
    raise ValueError(f"{source}: {what} for other questions than {data}: {' and '.join(parts)}; give the "
                     f"{what} of exactly this data file")
