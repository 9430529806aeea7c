"""The reader's objective on a micro-batch: the answer's marginal likelihood over each question's k
passages and over every occurrence of an answer in them (span.py's formula, on whole tensors),
"individual top-k"; `task.top_k_mode: joint` hands the micro-batch to joint.py (one normalisation
over every candidate span of the k passages).

    log p(a | q) = logsumexp_z [ log p(z | q) + logsumexp_{(s, e) = a in z} (log p_start(s) + log p_end(e)) ]

log p(z | q) is the micro-batch's `prior` (fixed retrieval) or, end to end, the log_softmax over
the k passages of the query tower's vector against the passages' fixed context vectors (`ctx`), so
the gradient reaches the query tower. A question whose passages hold no answer adds nothing; a
passage without one adds exp(-1e4) = 0 (a finite stand-in for -inf, so no gradient is NaN).
"""

from __future__ import annotations

import torch

from megazoo.tasks.retrieval.reader import joint
from megazoo.tasks.retrieval.reader.span import NEG, span_log_probs


def text_mask(text: torch.Tensor, length: int) -> torch.Tensor:
    """[R, L] True on each row's text tokens, from [R, 2] (first, one past the last)."""
    pos = torch.arange(length, device=text.device).view(1, -1)
    return (pos >= text[:, :1]) & (pos < text[:, 1:])


def spans_log_likelihood(ls: torch.Tensor, le: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
    """[R] log sum over the gold spans [R, S, 2] (-1: none) of p_start p_end; NEG for a row without one."""
    valid = spans[..., 0] >= 0
    s, e = spans[..., 0].clamp(min=0), spans[..., 1].clamp(min=0)
    v = (ls.gather(1, s) + le.gather(1, e)).masked_fill(~valid, NEG)
    return torch.logsumexp(v, 1)


def retrieval_log_probs(mb: dict, query: torch.Tensor | None) -> torch.Tensor:
    """[n, k] log p(z | q): the query vectors against the passages' context vectors, or the fixed prior."""
    if query is None:
        return mb["prior"].float()
    return torch.log_softmax(torch.einsum("nh,nkh->nk", query, mb["ctx"].float()), -1)


def question_losses(out, mb: dict, mode: str = "individual", max_answer_tokens: int = 0) -> torch.Tensor:
    """[n] -log p(a | q) of each question of the micro-batch, 0 where no passage holds an answer;
    `mode` individual (here) or joint (joint.py; a gold span must fit in max_answer_tokens)."""
    mask = text_mask(mb["text"], out.start.shape[1])
    lp = retrieval_log_probs(mb, out.query)
    if mode == "joint":
        return joint.question_losses(out.start, out.end, mask, lp, mb["spans"], max_answer_tokens)
    ls, le = span_log_probs(out.start, out.end, mask)
    n, k = lp.shape
    ll = spans_log_likelihood(ls, le, mb["spans"]).view(n, k)
    per_question = -torch.logsumexp(lp + ll, -1)
    return torch.where(mb["answerable"].bool(), per_question, torch.zeros_like(per_question))
