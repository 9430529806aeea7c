"""SQuAD features in and ranked answers out, for the span head (BERT's run_squad, SQuAD v1.1).

encode_qa: `[CLS] question [SEP] window [SEP]`: the question cut to max_query_length tokens, the
context cut into windows of the remaining length that start every doc_stride tokens. Training
targets are the answer's first and last token inside a window, or [CLS] (position 0) for a window
that does not hold the whole answer. decode_qa: the n-best spans over a question's windows.

Shared by every span-QA task (BioASQ, SQuAD v1.1/v2.0): a question is anything with SpanExample's
attributes.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from megazoo.zoo.heads.encoded import Encoded, check_tokenizer, finish_rows


@dataclass(frozen=True)
class SpanExample:
    """What the span head's inputs need of a question. encode_qa and decode_qa read only these
    attributes, so a task may pass its own reader records when they have them."""

    question: str
    context: str
    answer_start: int | None = None  # the located answer's character offset; None: no answer located
    answer_text: str | None = None  # that answer's text


def _offsets(tokenizer, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    backend = getattr(tokenizer, "backend", None)
    if backend is None:
        raise ValueError(f"QA needs a tokenizer with character offsets (a Hugging Face one); got {tokenizer.name}")
    enc = backend.encode(text, add_special_tokens=False)
    return enc.ids, enc.offsets


def encode_qa(questions: list[SpanExample], tokenizer, max_seq_length: int, doc_stride: int,
              max_query_length: int) -> Encoded:
    """SQuAD features of every question (several windows for a long context)."""
    check_tokenizer(tokenizer, "QA")
    ids, types, starts, ends, rows = [], [], [], [], []
    contexts: dict[str, tuple] = {}
    for qi, q in enumerate(questions):
        if q.context not in contexts:
            contexts[q.context] = _offsets(tokenizer, q.context)
        doc_ids, doc_offsets = contexts[q.context]
        query = tokenizer.encode(q.question)[:max_query_length]
        room = max_seq_length - len(query) - 3
        if room < 1:
            raise ValueError(f"max_seq_length={max_seq_length} leaves no room for the context after a "
                             f"{len(query)}-token question; raise it or lower max_query_length")
        answer = None
        if q.answer_start is not None:
            a0, a1 = q.answer_start, q.answer_start + len(q.answer_text)
            inside = [t for t, (s, e) in enumerate(doc_offsets) if s < a1 and e > a0]
            answer = (inside[0], inside[-1]) if inside else None
        spans = []
        begin = 0
        while True:
            spans.append((begin, min(room, len(doc_ids) - begin)))
            if begin + room >= len(doc_ids):
                break
            begin += min(doc_stride, room)
        for w, (begin, n) in enumerate(spans):
            offset = len(query) + 2  # [CLS] query [SEP]
            row = [tokenizer.cls, *query, tokenizer.sep, *doc_ids[begin:begin + n], tokenizer.sep]
            mapping, best = {}, set()
            for k in range(n):
                p = begin + k
                mapping[offset + k] = doc_offsets[p]
                if _max_context(spans, w, p):
                    best.add(offset + k)
            s_pos = e_pos = 0
            if answer and begin <= answer[0] and answer[1] < begin + n:
                s_pos, e_pos = answer[0] - begin + offset, answer[1] - begin + offset
            ids.append(row)
            types.append([0] * offset + [1] * (n + 1))
            starts.append(s_pos)
            ends.append(e_pos)
            rows.append((qi, mapping, best))
    length = max((len(r) for r in ids), default=1)
    targets = {"start_positions": torch.tensor(starts, dtype=torch.long),
               "end_positions": torch.tensor(ends, dtype=torch.long)}
    return finish_rows(ids, types, targets, tokenizer, length, rows=rows)


def _max_context(spans: list[tuple[int, int]], w: int, p: int) -> bool:
    """Whether window w gives token p its most context (BERT's _check_is_max_context)."""
    best, best_score = None, None
    for i, (begin, n) in enumerate(spans):
        if not begin <= p < begin + n:
            continue
        score = min(p - begin, begin + n - 1 - p) + 0.01 * n
        if best_score is None or score > best_score:
            best, best_score = i, score
    return best == w


def decode_qa(start_logits: list[torch.Tensor], end_logits: list[torch.Tensor], enc: Encoded,
              questions: list[SpanExample], n_best: int = 20, max_answer_length: int = 30) -> list[list[dict]]:
    """Per question its ranked answers [{"text", "score"}] (n-best over all its windows, one
    entry per distinct text, best score kept; BERT's write_predictions without the null answer)."""
    found: list[dict[str, float]] = [{} for _ in questions]
    for s_log, e_log, (qi, mapping, best) in zip(start_logits, end_logits, enc.rows):
        s_top = torch.topk(s_log, min(n_best, s_log.numel())).indices.tolist()
        e_top = torch.topk(e_log, min(n_best, e_log.numel())).indices.tolist()
        context = questions[qi].context
        for s in s_top:
            if s not in mapping or s not in best:
                continue
            for e in e_top:
                if e not in mapping or e < s or e - s + 1 > max_answer_length:
                    continue
                text = context[mapping[s][0]:mapping[e][1]]
                score = float(s_log[s] + e_log[e])
                if text and score > found[qi].get(text, float("-inf")):
                    found[qi][text] = score
    ranked = []
    for cands in found:
        order = sorted(cands.items(), key=lambda kv: -kv[1])[:n_best]
        ranked.append([{"text": t, "score": sc} for t, sc in order])
    return ranked
