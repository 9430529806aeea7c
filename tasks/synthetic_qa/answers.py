"""Answer generation: the extractor's top candidate spans of each paragraph (Puri et al. stage 1).

The extractor (kind answers) reads `[CLS] [SEP] paragraph [SEP]` and scores every span; the
n-best texts are located in the paragraph, spans overlapping a better one are skipped (so the
candidates are different answers, not one answer with or without a word), and the top `top`
are written as SQuAD questions with the question left empty, {"id": "pN-aK", "score"}.
"""

from __future__ import annotations

from megazoo.tasks.synthetic_qa.squad import Question


def locate(context: str, text: str, taken: list) -> int | None:
    """The first occurrence of `text` in `context` that overlaps no taken (start, end) span."""
    start = context.find(text)
    while start >= 0:
        end = start + len(text)
        if not any(start < e and s < end for s, e in taken):
            return start
        start = context.find(text, start + 1)
    return None


def propose(model, paragraphs: list, top: int, batch: int | None = None) -> list:
    """Candidate answers (squad.Question with an empty question) of `paragraphs` [(title, context)]."""
    probes = [Question(f"p{i}", "", context, paragraph=i) for i, (_, context) in enumerate(paragraphs)]
    out = []
    for probe, pred in zip(probes, model.answer(probes, batch=batch)):
        taken = []
        for cand in pred["nbest"]:
            if len(taken) == top:
                break
            text = cand["text"].strip()
            start = locate(probe.context, text, taken) if text else None
            if start is None:
                continue
            taken.append((start, start + len(text)))
            out.append(Question(f"p{probe.paragraph}-a{len(taken) - 1}", "", probe.context, [(text, start)],
                                paragraph=probe.paragraph, extra={"score": round(cand["score"], 4)}))
    return out
