"""Perplexity, Megatron's WikiText-103 "adjusted" perplexity and the sliding-window plan.

Follows Megatron-LM ``tasks/zeroshot_gpt`` (Shoeybi et al. 2019):

- the original token count of a WikiText file is ``len(text.strip().split(" "))`` on the raw
  word-level text (before detokenisation);
- the text is detokenised and BPE-tokenised into N tokens; windows of ``seq_length`` inputs
  advance by ``stride`` (``--overlapping-eval``, default ``seq_length``); the first window
  scores all its targets, every later window only its last ``stride`` targets, so each of the
  N - 1 targets is scored once, with at least ``seq_length - stride`` tokens of context;
- with L the summed NLL (nats) of those targets: ppl = exp(L / (N - 1)) and the reported
  adjusted ppl = exp(L / (N_orig - 1)), i.e. the same loss renormalised per original word;
  both exponents are capped at 20 as in Megatron.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

MAX_LOG_PPL = 20.0  # Megatron caps the exponent: exp(min(20, loss))


def perplexity(total_nll: float, num_tokens: int) -> float:
    """exp(total_nll / num_tokens): perplexity from a summed negative log-likelihood in nats."""
    if num_tokens <= 0:
        raise ValueError(f"num_tokens must be positive, got {num_tokens}")
    return math.exp(total_nll / num_tokens)


def original_token_count(raw_text: str) -> int:
    """Megatron's word-level token count of a raw WikiText file: ``len(text.strip().split(" "))``."""
    return len(raw_text.strip().split(" "))


def adjusted_perplexity(
    total_nll: float, num_tokenized_tokens: int, num_original_tokens: int
) -> dict[str, float]:
    """Megatron's WikiText numbers ``{"avg_loss", "ppl", "adjusted_ppl", "token_ratio"}``.

    ``total_nll`` sums the NLL of all ``num_tokenized_tokens - 1`` targets of the tokenised text;
    ``num_original_tokens`` comes from ``original_token_count`` of the raw file.
    """
    if num_tokenized_tokens < 2 or num_original_tokens < 2:
        raise ValueError("adjusted perplexity needs at least 2 tokenized and 2 original tokens")
    avg_loss = total_nll / (num_tokenized_tokens - 1)
    token_ratio = (num_tokenized_tokens - 1) / (num_original_tokens - 1)
    return {
        "avg_loss": avg_loss,
        "ppl": math.exp(min(MAX_LOG_PPL, avg_loss)),
        "adjusted_ppl": math.exp(min(MAX_LOG_PPL, avg_loss * token_ratio)),
        "token_ratio": token_ratio,
    }


@dataclass(frozen=True)
class Window:
    """One evaluation window over a token sequence ``tokens``.

    Feed ``tokens[begin:end - 1]`` to the model; its outputs predict ``tokens[begin + 1:end]``.
    Score only the targets ``tokens[score_begin:end]`` (their logits are at input positions
    ``score_begin - begin - 1`` ... ``end - begin - 2``); earlier targets are context only.
    """

    begin: int
    end: int
    score_begin: int

    @property
    def num_inputs(self) -> int:
        return self.end - 1 - self.begin

    @property
    def num_scored(self) -> int:
        return self.end - self.score_begin


def plan_windows(num_tokens: int, seq_length: int, stride: int | None = None) -> list[Window]:
    """Megatron's sliding windows over ``num_tokens`` tokens (see the module docstring).

    Window i starts at ``i * stride`` and spans up to ``seq_length + 1`` tokens; together the
    windows score every target 1 .. num_tokens - 1 exactly once. Unlike Megatron's dataset, no
    trailing window that would score nothing is produced.
    """
    if seq_length < 1:
        raise ValueError(f"seq_length must be positive, got {seq_length}")
    stride = seq_length if stride is None else stride
    if not 1 <= stride <= seq_length:
        raise ValueError(f"stride must be between 1 and seq_length={seq_length}, got {stride}")
    windows: list[Window] = []
    if num_tokens < 2:
        return windows
    begin, score_begin = 0, 1
    while score_begin < num_tokens:
        end = min(begin + seq_length + 1, num_tokens)
        windows.append(Window(begin, end, score_begin))
        score_begin = end
        begin += stride
    return windows
