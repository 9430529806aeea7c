"""Model inputs of the three tasks, as BioBERT / BioMegatron build them.

NER: `[CLS] w1 w2 ... [SEP]`, each word tokenised on its own; the word's label sits on its first
sub-token and the other sub-tokens get -100 (ignored in the loss, never predicted); a sentence
longer than max_seq_length loses its last words (they are predicted O).

RE: `[CLS] sentence [SEP]` with the entity masks as written (@CHEMICAL$, @GENE$); the label is
classified from the pooled [CLS].

QA: SQuAD features, `[CLS] question [SEP] window [SEP]`: the question cut to max_query_length
tokens, the context cut into windows of the remaining length that start every doc_stride
tokens. Training targets are the answer's first and last token inside a window, or [CLS]
(position 0) for a window that does not hold the whole answer (BERT's run_squad, SQuAD v1.1).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from megazoo.tasks.biomed.data import CHEMPROT_LABELS, NerSentence, QAQuestion, Relation

IGNORE = -100


def check_tokenizer(tokenizer, task: str) -> None:
    for name in ("cls", "sep", "pad"):
        if getattr(tokenizer, name, None) is None:
            raise ValueError(f"tokenizer {getattr(tokenizer, 'name', tokenizer)!r} has no {name} token; {task} needs a "
                             f"BERT WordPiece tokenizer ([CLS] [SEP] [PAD])")


@dataclass
class Encoded:
    """Padded rows: input_ids, token_type_ids, attention_mask [N, L]; targets per kind; and what
    decoding needs (NER: the first sub-token of each kept word; QA: per row the question index,
    the token -> character offsets of the window and which tokens are max-context)."""

    input_ids: torch.Tensor
    token_type_ids: torch.Tensor
    attention_mask: torch.Tensor
    targets: dict
    words: list = field(default_factory=list)  # NER: per row the positions of each kept word's first sub-token
    rows: list = field(default_factory=list)  # QA: per row (question index, {token: (char start, char end)}, max-context set)

    def __len__(self) -> int:
        return self.input_ids.shape[0]

    def sample(self, i: int) -> dict:
        out = {"input_ids": self.input_ids[i], "token_type_ids": self.token_type_ids[i],
               "attention_mask": self.attention_mask[i]}
        out.update({k: v[i] for k, v in self.targets.items()})
        return out


def _pad(rows: list[list[int]], length: int, value: int) -> torch.Tensor:
    return torch.tensor([r + [value] * (length - len(r)) for r in rows], dtype=torch.long)


def _finish(ids, types, targets, tokenizer, length: int, **extra) -> Encoded:
    length = max(length, 1)
    mask = [[1] * len(r) for r in ids]
    return Encoded(_pad(ids, length, tokenizer.pad), _pad(types, length, 0), _pad(mask, length, 0), targets, **extra)


# NER ------------------------------------------------------------------------------------------
def encode_ner(sentences: list[NerSentence], tokenizer, labels: list[str], max_seq_length: int) -> Encoded:
    """Rows of `[CLS] sub-tokens [SEP]`, labels on first sub-tokens (ids into `labels`)."""
    check_tokenizer(tokenizer, "NER")
    index = {lab: i for i, lab in enumerate(labels)}
    vocab_words = sorted({w for s in sentences for w in s.tokens})
    pieces = dict(zip(vocab_words, tokenizer.encode_batch(vocab_words))) if vocab_words else {}
    ids, types, tags, words = [], [], [], []
    for s in sentences:
        row, tag, firsts = [tokenizer.cls], [IGNORE], []
        for word, label in zip(s.tokens, s.labels):
            sub = pieces[word] or [tokenizer.unk if tokenizer.unk is not None else tokenizer.pad]
            if len(row) + len(sub) > max_seq_length - 1:
                break
            if label not in index:
                raise ValueError(f"line {s.line}: label {label!r} is not one of task.labels {labels}")
            firsts.append(len(row))
            row += sub
            tag += [index[label]] + [IGNORE] * (len(sub) - 1)
        row.append(tokenizer.sep)
        tag.append(IGNORE)
        ids.append(row)
        types.append([0] * len(row))
        tags.append(tag)
        words.append(firsts)
    length = max((len(r) for r in ids), default=1)
    return _finish(ids, types, {"labels": _pad(tags, length, IGNORE)}, tokenizer, length, words=words)


def decode_ner(logits_rows: list[torch.Tensor], enc: Encoded, sentences: list[NerSentence],
               labels: list[str]) -> list[list[str]]:
    """Per sentence one predicted label per word: argmax at its first sub-token, O for cut words."""
    out = []
    for logits, firsts, s in zip(logits_rows, enc.words, sentences):
        pred = [labels[int(i)] for i in logits[firsts].argmax(-1)] if firsts else []
        out.append(pred + ["O"] * (len(s.tokens) - len(pred)))
    return out


# RE -------------------------------------------------------------------------------------------
def encode_re(relations: list[Relation], tokenizer, max_seq_length: int) -> Encoded:
    check_tokenizer(tokenizer, "relation extraction")
    texts = tokenizer.encode_batch([r.sentence for r in relations]) if relations else []
    ids = [[tokenizer.cls, *t[: max_seq_length - 2], tokenizer.sep] for t in texts]
    labels = torch.tensor([CHEMPROT_LABELS.index(r.label) for r in relations], dtype=torch.long)
    length = max((len(r) for r in ids), default=1)
    return _finish(ids, [[0] * len(r) for r in ids], {"labels": labels}, tokenizer, length)


# QA -------------------------------------------------------------------------------------------
def _offsets(tokenizer, text: str) -> tuple[list[int], list[tuple[int, int]]]:
    backend = getattr(tokenizer, "backend", None)
    if backend is None:
        raise ValueError(f"QA needs a tokenizer with character offsets (a Hugging Face one); got {tokenizer.name}")
    enc = backend.encode(text, add_special_tokens=False)
    return enc.ids, enc.offsets


def encode_qa(questions: list[QAQuestion], tokenizer, max_seq_length: int, doc_stride: int,
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
    return _finish(ids, types, targets, tokenizer, length, rows=rows)


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
              questions: list[QAQuestion], n_best: int = 20, max_answer_length: int = 30) -> list[list[dict]]:
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
