"""Roundtrip filtration (Puri et al. stage 3): the QA model answers each generated question and
the pair is kept when its answer matches the proposed answer: SQuAD exact match after
normalisation (`em`), or token F1 at least `threshold` (`f1`). The yield of every stage is
counted, with overgeneration's share: answers that keep at least one question, and how many of
them the first sample alone would have kept.
"""

from __future__ import annotations

from megazoo.tasks.synthetic_qa.score import question_scores

MATCHES = ("em", "f1")


def roundtrip(model, questions: list, match: str = "em", threshold: float = 0.5, batch: int | None = None) -> dict:
    """{"kept", "rejected": [Question], "counts": {...}}; each question gets extra["qa_answer"]."""
    if match not in MATCHES:
        raise ValueError(f"--match must be em or f1, got {match!r}")
    preds = model.answer(questions, batch=batch)
    kept, rejected = [], []
    by_answer: dict[str, list] = {}
    for q, p in zip(questions, preds):
        em, f1 = question_scores(p["text"], q.answer_texts, False)
        ok = em == 1.0 if match == "em" else f1 >= threshold
        q.extra = {**q.extra, "qa_answer": p["text"], "qa_f1": round(f1, 4)}
        (kept if ok else rejected).append(q)
        by_answer.setdefault(q.extra.get("answer_id", q.id), []).append((q.id, ok))
    first_only = sum(1 for rows in by_answer.values() if rows and rows[0][1] and rows[0][0].endswith("-q0"))
    counts = {"questions": len(questions), "kept": len(kept), "rejected": len(rejected),
              "kept_share": len(kept) / len(questions) if questions else 0.0,
              "answers": len(by_answer), "answers_kept": sum(1 for r in by_answer.values() if any(ok for _, ok in r)),
              "answers_kept_first_sample": first_only}
    return {"kept": kept, "rejected": rejected, "counts": counts}
