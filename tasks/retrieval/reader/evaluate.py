"""The reader's evaluation (not a training loop): exact match and F1 of the best span over each
question's top-k passages (task.top_k_mode individual: span.py's `best_span` on each passage's
log-probabilities plus log p(z | q); joint: joint.py's, the argmax of the score its loss
normalises), the top-k answer recall of the passages read and DPR top-1/5/20 of the question
vectors, all fractions in [0, 1] (eval/metrics' scale; printed as percentages); and the
end-to-end run's retriever written as a two-tower checkpoint.

EM and F1 are SQuAD v1.1's (and DPR's): lower-case, punctuation and the articles a/an/the removed,
whitespace collapsed but kept, so "new york" is not "newyork" (eval/metrics/squad.py, the one
implementation). The answer scored is the span's own characters in the passage (the tokenizer's
offsets), as SQuAD readers report it, so wordpiece decoding ("1, 000", accents stripped) cannot
change a score; a tokenizer without offsets falls back to the decoded wordpieces.

`predict` runs at any layout: the reader rows go through `forward_outputs` (data-parallel shares,
gathered on every rank), so every rank returns the same metrics.
"""

from __future__ import annotations

from pathlib import Path

import torch

from megazoo.core.train.evaluation import forward_outputs
from megazoo.tasks.retrieval.inputs import pad_rows
from megazoo.tasks.retrieval.reader.model import READER


def read_rows(chunks, ctx, rows_per_question: list[list], pad_id: int, per_batch: int, hidden_size: int, dtype):
    """[(start, end) logits [k, L] per question]: the reader over every question's rows (collective)."""
    mbs = []
    for i in range(0, len(rows_per_question), per_batch):
        rows = [r.row for rs in rows_per_question[i:i + per_batch] for r in rs]
        mb = pad_rows(rows, pad_id, multiple=8)
        mb["labels"] = torch.full((len(rows),), READER)
        mbs.append({k: v.to(ctx.device) for k, v in mb.items()})
    outs = forward_outputs(chunks, ctx, mbs, lambda out, mb: (out.start.cpu(), out.end.cpu()), hidden_size, dtype)
    per_q = []
    for i, (start, end) in zip(range(0, len(rows_per_question), per_batch), outs):
        at = 0
        for rs in rows_per_question[i:i + per_batch]:
            per_q.append((start[at:at + len(rs)], end[at:at + len(rs)]))
            at += len(rs)
    return per_q


def predict(chunks, ctx, builder, retrieved, q: torch.Tensor, dtype) -> tuple[dict, list]:
    """(metrics, predictions) of the reader on `retrieved`'s questions with question vectors `q`."""
    from megazoo.tasks.retrieval.evaluate import has_answer, top_k_accuracy
    from megazoo.tasks.retrieval.reader import joint
    from megazoo.tasks.retrieval.reader.span import best_span, span_log_probs, text_mask

    s, ev = builder.settings, builder.evidence
    ranked = ev.search(q.numpy(), max(20, s.top_k))
    found = ranked[:, :s.top_k]
    prior = ev.prior(q, found)
    questions = retrieved.questions
    rows = [builder.rows.rows(x.question, x.answers, found[i]) for i, x in enumerate(questions)]
    logits = read_rows(chunks, ctx, rows, builder.pad_id, s.eval_batch, builder.hidden_size, dtype)
    em, f1, recall, preds = 0.0, 0.0, 0, []
    for i, (x, (start, end)) in enumerate(zip(questions, logits)):
        mask = text_mask(rows[i], start.shape[1])
        if s.top_k_mode == "joint":  # the argmax of the joint score, across the k passages
            z, a, b = joint.best_span(start, end, mask, prior[i], s.max_answer_tokens)
        else:
            z, a, b = best_span(*span_log_probs(start, end, mask), prior[i], s.max_answer_tokens)
        answer = answer_text(builder.rows.tok, ev.passages[int(found[i][z])].text, rows[i][z], a, b)
        hit, overlap = answer_scores(answer, x.answers)
        em, f1 = em + hit, f1 + overlap
        recall += any(has_answer(x.answers, ev.passages[int(j)].text) for j in found[i])
        preds.append({"question": x.question, "answers": x.answers, "prediction": answer, "em": bool(hit),
                      "f1": overlap, "ids": [int(ev.passages[int(j)].id) for j in found[i]]})
    n = max(1, len(questions))
    hit_lists = [[has_answer(x.answers, ev.passages[int(j)].text) for j in row] for x, row in zip(questions, ranked)]
    metrics = {"em": em / n, "f1": f1 / n, f"top{s.top_k}_recall": recall / n}  # fractions (eval/metrics' scale)
    metrics |= {f"retrieval_{k}": v for k, v in top_k_accuracy(hit_lists, (1, 5, 20)).items()}
    return metrics, preds


def answer_scores(prediction: str, answers: list[str]) -> tuple[float, float]:
    """(EM, F1) of one reader answer: SQuAD v1.1's, each the best over the gold answers (eval/metrics);
    (0, 0) for a question without gold answers."""
    from megazoo.eval.metrics import squad_question_scores

    return squad_question_scores(prediction, answers) if answers else (0.0, 0.0)


def answer_text(tok, passage: str, row, a: int, b: int) -> str:
    """Row positions a..b (inclusive) of reader row `row` as the passage's own characters: through the
    tokenizer's character offsets when it has them (a `tokenizers` backend) and its tokens of
    `passage` are the row's text tokens; else the decoded wordpieces."""
    backend = getattr(tok, "backend", None)
    inside = row.text_start <= a <= b < row.text_end
    if backend is not None and inside:
        enc = backend.encode(passage, add_special_tokens=False)
        if enc.ids[:row.text_end - row.text_start] == row.row.ids[row.text_start:row.text_end]:
            return passage[enc.offsets[a - row.text_start][0]:enc.offsets[b - row.text_start][1]]
    return tok.decode(row.row.ids[a:b + 1])


def save_retriever(query: torch.nn.Module, evidence, retriever, out: Path, write: bool) -> Path:
    """The trained query tower and the retriever's (fixed) context tower as a two-tower checkpoint
    that index, evaluate and `train.init_from` (task.shared_towers false) read, the tokenizer beside
    it. Collective (the query tower is gathered over tensor parallelism); `write` on one rank.
    OUT/retriever is this stage's own output in its run directory: a resumed run replaces it, through a
    scratch folder moved into place only when complete (core.fs.atomic_folder)."""
    import shutil

    from megazoo.core.checkpoint import save_full_model_state
    from megazoo.core.fs import atomic_folder
    from megazoo.zoo.embed import read_checkpoint
    from megazoo.zoo.hf.shard import gather_full_state

    state = {f"query.{k}": v for k, v in gather_full_state(query).items()}
    folder = out / "retriever"
    if not write:
        return folder
    _, cfg, _, tok_dir, _ = read_checkpoint(retriever)
    state |= {f"context.{k}": v for k, v in gather_full_state(evidence.enc.model).items()}
    task = {"name": "retrieval", "question_length": evidence.enc.question_length,
            "passage_length": evidence.enc.passage_length, "shared_towers": False}
    with atomic_folder(folder, overwrite=True) as tmp:
        save_full_model_state(tmp, state, {"arch": "bert", "model": cfg.to_dict(), "task": task})
        shutil.copytree(tok_dir, tmp / "tokenizer")
    return folder
