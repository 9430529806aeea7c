"""The official SQuAD evaluation (evaluate-v1.1.py, evaluate-v2.0.py) of a predictions file {id: text}.

The metric is megazoo.eval.metrics.squad_scores (squad.py: the normalisation, EM and F1 and every
difference between v1.1 and v2.0, no-answer probabilities and the has_ans_*/no_ans_* means, as
fractions in [0, 1]); this module pairs a predictions file with the questions of a SQuAD file.

A question without a prediction is reported (`missing`) and scored 0, as evaluate-v1.1.py does
("Unanswered question ... will receive score 0"); evaluate-v2.0.py prints "Missing prediction"
and then fails on its HasAns split, so here it is scored 0 for v2.0 as well. Predictions for ids
that are not in the data are ignored, as both scripts do. The score stage is stricter: `check_ids`
refuses a predictions file with either (most often a file of another split, or an incomplete run).
"""

from __future__ import annotations

import os

from megazoo.eval.metrics import squad_question_scores, squad_scores
from megazoo.tasks.synthetic_qa.squad import SquadFormatError, _lined_json


def question_scores(prediction: str, answers: list[str], v2: bool) -> tuple[float, float]:
    """(EM, F1) of one prediction in [0, 1], the best over the gold answers."""
    return squad_question_scores(prediction, answers, v2)


def score(questions: list, predictions: dict, v2: bool = False, na_probs: dict | None = None,
          na_threshold: float = 1.0) -> dict:
    """{"n", "metrics": {exact_match, f1[, has_ans_exact_match, has_ans_f1, no_ans_exact_match,
    no_ans_f1]}, "counts", "missing": [ids]} of `predictions` {id: text} on `questions`
    (squad.Question), metrics in [0, 1]. na_probs {id: p(no answer)} and na_threshold are v2.0's
    null handling."""
    if not questions:
        raise ValueError("no questions to score")
    for q in questions:
        if q.id in predictions and not isinstance(predictions[q.id], str):
            raise ValueError(f"the prediction for {q.id!r} must be a string, got {type(predictions[q.id]).__name__}")
    missing = [q.id for q in questions if q.id not in predictions]
    probs = [na_probs.get(q.id, 0.0) for q in questions] if v2 and na_probs is not None else None
    metrics = squad_scores([predictions.get(q.id) for q in questions], [q.answer_texts for q in questions], v2,
                           probs, na_threshold)
    counts = {"total": len(questions)}
    if v2:
        counts["has_ans_total"] = sum(1 for q in questions if q.answers)
        counts["no_ans_total"] = len(questions) - counts["has_ans_total"]
    return {"n": len(questions), "metrics": metrics, "counts": counts, "missing": missing}


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
