"""Joint top-k (`task.top_k_mode: joint`; Sachan et al. 2021's other end-to-end variant, megazoo's
reading of it: the paper's text was not at hand, so the formula below is ours). A question's k
passages are scored together: one normalisation over every candidate span of all k passages
(Clark & Gardner's shared normalisation), the passage's retrieval log-probability added to its
spans' scores so the gradient reaches the query tower:

    score(z, s, e) = log p(z | q) + start_z(s) + end_z(e)      s <= e < s + max_answer_tokens, text tokens
    log p(a | q)   = logsumexp_{(z, s, e) = a} score - logsumexp_{all (z, s, e)} score

start_z and end_z are the span head's raw logits on passage z (not normalised per passage, as
individual top-k's span.py does); log p(z | q) is loss.py's `retrieval_log_probs` (its per-question
log_softmax constant cancels, so the raw inner products q . z are what the passages compete with).
The answer's spans are every occurrence of an answer that is itself a candidate (at most
max_answer_tokens tokens); a question with none adds nothing and is not counted (`answerable`).
Prediction: the argmax of the same score over the k passages. Whole tensors: a candidate is
(row, start, length - 1), [rows, L, max_answer_tokens].
"""

from __future__ import annotations

import torch

from megazoo.tasks.retrieval.reader.span import NEG


def candidate_scores(start: torch.Tensor, end: torch.Tensor, mask: torch.Tensor,
                     max_tokens: int) -> tuple[torch.Tensor, torch.Tensor]:
    """([R, L, M] start(s) + end(s + d) of every row's spans (s, d), [R, L, M] True where the span is a
    candidate: both ends on the row's text tokens (so all between), inside the row); M = max_tokens.
    The scores of non-candidates are left for the caller to mask."""
    length = start.shape[1]
    ends = torch.arange(length, device=start.device).view(-1, 1) + torch.arange(max_tokens, device=start.device)
    inside = ends < length  # [L, M]
    ends = ends.clamp(max=length - 1)
    return start[:, :, None] + end[:, ends], mask[:, :, None] & mask[:, ends] & inside


def gold_candidates(spans: torch.Tensor, mask: torch.Tensor, max_tokens: int) -> torch.Tensor:
    """[R, S] True where gold span spans[r, j] (-1 padded) is a candidate span of its row."""
    s, e = spans[..., 0], spans[..., 1]
    sc, ec = s.clamp(min=0), e.clamp(min=0)
    return (s >= 0) & (e >= s) & (e - s < max_tokens) & mask.gather(1, sc) & mask.gather(1, ec)


def answerable(spans: torch.Tensor, mask: torch.Tensor, n: int, max_tokens: int) -> torch.Tensor:
    """[n] True for a question with a gold candidate span in any of its passages."""
    return gold_candidates(spans, mask, max_tokens).view(n, -1).any(-1)


def question_losses(start: torch.Tensor, end: torch.Tensor, mask: torch.Tensor, lp: torch.Tensor,
                    spans: torch.Tensor, max_tokens: int) -> torch.Tensor:
    """[n] -log p(a | q) under joint top-k (module docstring), 0 for a question without a gold candidate.
    start, end [n k, L] logits; mask [n k, L] text tokens; lp [n, k] log p(z | q); spans [n k, S, 2]."""
    n = lp.shape[0]
    cand, ok = candidate_scores(start, end, mask, max_tokens)
    total = torch.logsumexp((cand + lp.reshape(-1, 1, 1)).masked_fill(~ok, NEG).view(n, -1), -1)
    gold = gold_candidates(spans, mask, max_tokens)
    s, e = spans[..., 0].clamp(min=0), spans[..., 1].clamp(min=0)
    g = (start.gather(1, s) + end.gather(1, e) + lp.reshape(-1, 1)).masked_fill(~gold, NEG)
    answer = torch.logsumexp(g.view(n, -1), -1)
    has = gold.view(n, -1).any(-1)
    return torch.where(has, total - answer, torch.zeros_like(total))


def best_span(start: torch.Tensor, end: torch.Tensor, mask: torch.Tensor, lp: torch.Tensor,
              max_tokens: int) -> tuple[int, int, int]:
    """(passage, start, end) of one question's highest joint score over its k passages.
    start, end, mask [k, L]; lp [k]."""
    cand, ok = candidate_scores(start, end, mask, max_tokens)
    score = (cand + lp.view(-1, 1, 1)).masked_fill(~ok, float("-inf"))
    length, m = cand.shape[1], cand.shape[2]
    flat = int(score.reshape(-1).argmax())
    z, s, d = flat // (length * m), (flat // m) % length, flat % m
    return z, s, s + d
