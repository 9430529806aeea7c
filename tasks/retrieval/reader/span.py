"""An extractive BERT reader over retrieved passages, trained by marginal likelihood (Sachan et al.
2021, "individual top-k"; REALM's and EMDR's marginalisation).

Each of a question's top-k passages z is read separately as `[CLS] question [SEP] title [SEP] text
[SEP]` (token types 0, then 1); a span head gives start and end logits over the passage's text
tokens. The answer's likelihood is marginalised over the passages and over every occurrence of an
answer in them:

    log p(a | q) = logsumexp_z [ log p(z | q) + log sum_{(s, e) = a in z} p_start(s | q, z) p_end(e | q, z) ]
    log p(z | q) = log_softmax_z(q . z)              the retriever's inner products over the k passages

A passage without the answer contributes nothing; a question with the answer in none of its
passages has no loss. On fixed retrieval `log p(z | q)` is a constant; end-to-end it is the query
encoder's, so the reader's passage posterior trains the retriever. Prediction: the span with the
highest `log p(z | q) + start + end` over all passages (at most `max_answer_tokens` tokens).
The predicted answer is scored by evaluate.py with SQuAD/DPR exact match and F1 (eval/metrics).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from megazoo.tasks.retrieval.inputs import Row

NEG = -1e4


@dataclass
class ReaderRow:
    row: Row
    text_start: int  # first text token in the row
    text_end: int  # one past the last text token
    spans: list[tuple[int, int]]  # gold (start, end), inclusive, row positions


def find_spans(text: list[int], answers: list[list[int]], offset: int) -> list[tuple[int, int]]:
    """Every occurrence of an answer's tokens in `text`, as inclusive row positions (text + offset)."""
    out = []
    for a in answers:
        n = len(a)
        if not n:
            continue
        for i in range(len(text) - n + 1):
            if text[i:i + n] == a:
                out.append((offset + i, offset + i + n - 1))
    return sorted(set(out))


def reader_row(question: list[int], title: list[int], text: list[int], answers: list[list[int]], cls: int,
               sep: int, max_len: int, question_length: int = 32) -> ReaderRow:
    """The reader's input for one (question, passage) pair; the text is cut to fit `max_len`."""
    question = question[:question_length - 2]
    title = title[:16]
    head = [cls, *question, sep, *title, sep]
    text = text[:max(0, max_len - len(head) - 1)]
    ids = head + text + [sep]
    types = [0] * (len(question) + 2) + [1] * (len(title) + len(text) + 2)
    start = len(head)
    return ReaderRow(Row(ids, types), start, start + len(text), find_spans(text, answers, start))


class SpanReader(nn.Module):
    """A BERT encoder (megazoo BertModel returning hidden states [b, s, h]) and a start/end head."""

    def __init__(self, encoder: nn.Module, hidden_size: int):
        super().__init__()
        self.encoder = encoder
        self.span = nn.Linear(hidden_size, 2)
        nn.init.normal_(self.span.weight, std=0.02)
        nn.init.zeros_(self.span.bias)

    def forward(self, input_ids, attention_mask, token_type_ids) -> tuple[torch.Tensor, torch.Tensor]:
        mask = attention_mask if not bool(attention_mask.all()) else None
        hidden = self.encoder(input_ids, attention_mask=mask, token_type_ids=token_type_ids).hidden
        logits = self.span(hidden.float())
        return logits[..., 0], logits[..., 1]


def text_mask(rows: list[ReaderRow], length: int) -> torch.Tensor:
    """[k, L] True on each row's text tokens (the only positions a span may use)."""
    m = torch.zeros((len(rows), length), dtype=torch.bool)
    for i, r in enumerate(rows):
        m[i, r.text_start:r.text_end] = True
    return m


def span_log_probs(start: torch.Tensor, end: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """log_softmax of start and end logits over each passage's text tokens."""
    return (F.log_softmax(start.masked_fill(~mask, NEG), -1), F.log_softmax(end.masked_fill(~mask, NEG), -1))


def answer_log_likelihood(ls: torch.Tensor, le: torch.Tensor, rows: list[ReaderRow]) -> torch.Tensor:
    """[k] log p(a | q, z): logsumexp over the gold spans of each passage (-inf without one)."""
    out = []
    for i, r in enumerate(rows):
        if not r.spans:
            out.append(ls.new_tensor(float("-inf")))
            continue
        s = torch.tensor([a for a, _ in r.spans], device=ls.device)
        e = torch.tensor([b for _, b in r.spans], device=ls.device)
        out.append(torch.logsumexp(ls[i, s] + le[i, e], 0))
    return torch.stack(out)


def marginal_loss(retrieval_log_probs: torch.Tensor, reader_ll: torch.Tensor) -> torch.Tensor | None:
    """-log sum_z p(z | q) p(a | q, z); None when no passage holds the answer."""
    if not bool(torch.isfinite(reader_ll).any()):
        return None
    return -torch.logsumexp(retrieval_log_probs + reader_ll, 0)


def best_span(ls: torch.Tensor, le: torch.Tensor, retrieval_log_probs: torch.Tensor,
              max_tokens: int) -> tuple[int, int, int]:
    """(passage, start, end) with the highest log p(z | q) + log p_start + log p_end, end - start < max_tokens."""
    k, L = ls.shape
    scores = ls.unsqueeze(2) + le.unsqueeze(1)  # [k, s, e]
    i = torch.arange(L)
    ok = (i.view(1, -1) >= i.view(-1, 1)) & (i.view(1, -1) - i.view(-1, 1) < max_tokens)
    scores = scores.masked_fill(~ok.to(scores.device), float("-inf")) + retrieval_log_probs.view(k, 1, 1)
    flat = int(scores.reshape(-1).argmax())
    return flat // (L * L), (flat // L) % L, flat % L

