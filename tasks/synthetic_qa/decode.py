"""SQuAD features in and answers out, for the span head.

encode: squad.Question -> SQuAD features (zoo/heads/qa.py encode_qa: [CLS] question [SEP] window
[SEP], windows every doc_stride tokens, the max-context bookkeeping BERT's run_squad keeps).
decode: BERT's n-best (zoo/heads/qa.py decode_qa: top n_best starts x ends of every window, spans inside
the context, start at a max-context token, at most max_answer_length tokens, best score per text)
and, for SQuAD v2.0, the null answer: the smallest [CLS] start+end score over the question's
windows; the prediction is "" when it beats the best span by more than null_threshold.
"""

from __future__ import annotations

from megazoo.tasks.synthetic_qa.squad import Question
from megazoo.zoo.heads.qa import SpanExample, decode_qa, encode_qa


def _as_span(q: Question) -> SpanExample:
    """The span head's view of a question: its first answer is the one located (the training target)."""
    text, start = q.answers[0] if q.answers else (None, None)
    return SpanExample(q.question, q.context, start, text)


def encode(questions: list, tokenizer, max_seq_length: int, doc_stride: int, max_query_length: int):
    return encode_qa([_as_span(q) for q in questions], tokenizer, max_seq_length, doc_stride, max_query_length)


def decode(starts: list, ends: list, enc, questions: list, n_best: int = 20, max_answer_length: int = 30,
           null_threshold: float | None = None) -> list[dict]:
    """Per question {"text", "nbest": [{"text", "score"}], "null_score"}; null_threshold None: never ""."""
    ranked = decode_qa(starts, ends, enc, [_as_span(q) for q in questions], n_best, max_answer_length)
    null = [float("inf")] * len(questions)
    for s_log, e_log, (qi, _, _) in zip(starts, ends, enc.rows):
        null[qi] = min(null[qi], float(s_log[0] + e_log[0]))
    out = []
    for cands, ns in zip(ranked, null):
        text = cands[0]["text"] if cands else ""
        if null_threshold is not None and (not cands or ns - cands[0]["score"] > null_threshold):
            text = ""
        out.append({"text": text, "nbest": cands, "null_score": ns})
    return out


def answer_examples(squad_file) -> list:
    """The answer extractor's examples: every distinct (paragraph, answer) pair with the question
    left empty (the extractor sees the paragraph alone)."""
    out, seen = [], set()
    for q in squad_file.questions:
        for text, start in q.answers[:1]:
            key = (q.paragraph, text, start)
            if key in seen:
                continue
            seen.add(key)
            out.append(Question(f"{q.id}#a", "", q.context, [(text, start)], title=q.title, paragraph=q.paragraph,
                                line=q.line))
    return out


def answer_metrics(examples: list, predictions: list, top: int) -> dict:
    """answer_recall: share of gold answers equal (SQuAD-normalised) to one of the paragraph's top
    candidates; answer_f1: the mean best F1 of a gold answer against those candidates (x100)."""
    from megazoo.tasks.synthetic_qa.score import question_scores

    em = f1 = 0.0
    for ex, pred in zip(examples, predictions):
        cands = [c["text"] for c in pred["nbest"][:top]] or [""]
        scores = [question_scores(c, ex.answer_texts, False) for c in cands]
        em += max(s[0] for s in scores)
        f1 += max(s[1] for s in scores)
    n = max(len(examples), 1)
    return {"answer_recall": 100.0 * em / n, "answer_f1": 100.0 * f1 / n}
