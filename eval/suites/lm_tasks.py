"""Language-modelling tasks: LAMBADA (strict whole-word accuracy) and WikiText-103 (Megatron's
adjusted perplexity over sliding windows)."""

from __future__ import annotations

import math

from megazoo.eval.lm import LanguageModel
from megazoo.eval.metrics.perplexity import adjusted_perplexity, original_token_count, plan_windows
from megazoo.eval.readers import read_lambada, read_wikitext, wikitext_detokenize
from megazoo.eval.scoring import loglikelihood, loglikelihood_tokens


def evaluate_lambada(lm: LanguageModel, path, batch_size: int = 8, limit: int | None = None,
                     progress: bool = False) -> dict:
    """Strict LAMBADA (Megatron's --strict-lambada): correct only when every token of the last
    word is the greedy prediction. Also the perplexity of the target words."""
    docs = read_lambada(path)[:limit]
    requests = [(d.context, " " + d.target) for d in docs]
    scores = loglikelihood(lm, requests, batch_size, progress)
    n_tokens = sum(len(lm.encode(" " + d.target)) for d in docs)
    total_ll = sum(s for s, _ in scores)
    return {"acc": sum(g for _, g in scores) / max(1, len(docs)), "n": len(docs),
            "ppl": math.exp(-total_ll / max(1, n_tokens))}


def evaluate_wikitext(lm: LanguageModel, path, stride: int | None = None, batch_size: int = 8,
                      progress: bool = False) -> dict:
    """Megatron's WikiText-103 evaluation: the detokenised test file as one token stream scored in
    windows of the model's length advancing by `stride`; the adjusted perplexity renormalises the
    loss by the original word-level token count."""
    raw = open(path, encoding="utf-8").read()
    read_wikitext(path)  # validates the format (headings, non-empty) with file/line errors
    tokens = lm.encode(wikitext_detokenize(raw))
    windows = plan_windows(len(tokens), lm.max_length, stride)
    requests = [(tokens[w.begin: w.score_begin], tokens[w.score_begin: w.end]) for w in windows]
    total = -sum(s for s, _ in loglikelihood_tokens(lm, requests, batch_size, progress))
    return {**adjusted_perplexity(total, len(tokens), original_token_count(raw)), "tokens": len(tokens)}
