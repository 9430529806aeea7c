"""LM scoring: log-likelihood of a continuation, rolling log-likelihood of long texts, greedy
generation until a stop string. Batched and batch-invariant.

Tokenisation follows lm-eval's Hugging Face backend, so numbers are comparable with it: trailing
spaces of the context move to the continuation; the continuation's tokens are those of
encode(context + continuation) after the context's tokens; an empty context is the end-of-text
token; inputs are truncated on the left to the model's context length.
"""

from __future__ import annotations

from typing import Sequence

import torch
from tqdm.auto import tqdm

from megazoo.core.verbosity import shows_progress
from megazoo.eval.lm import LanguageModel


def split_request(lm: LanguageModel, context: str, continuation: str) -> tuple[list[int], list[int]]:
    spaces = len(context) - len(context.rstrip(" "))
    if spaces:
        context, continuation = context[:-spaces], context[-spaces:] + continuation
    if not context:
        return [lm.eot_id], lm.encode(continuation)
    whole = lm.encode(context + continuation)
    ctx = lm.encode(context)
    return ctx, whole[len(ctx):]


def loglikelihood_tokens(lm: LanguageModel, requests: Sequence[tuple[list[int], list[int]]], batch_size: int = 8,
                         progress: bool = False) -> list[tuple[float, bool]]:
    """For each (context ids, continuation ids): (sum of continuation log-probs, all greedy)."""
    inputs = []
    for ctx, cont in requests:
        if not cont:
            raise ValueError("a continuation must have at least one token")
        ids = (list(ctx) + list(cont))[-(lm.max_length + 1):][:-1]
        inputs.append((ids, list(cont)))
    order = sorted(range(len(inputs)), key=lambda i: -len(inputs[i][0]))  # longest first, as lm-eval
    results: list[tuple[float, bool] | None] = [None] * len(inputs)
    for start in tqdm(range(0, len(order), batch_size), disable=not shows_progress(progress), desc="loglikelihood"):
        idx = order[start:start + batch_size]
        width = max(len(inputs[i][0]) for i in idx)
        batch = torch.zeros(len(idx), width, dtype=torch.long)
        for row, i in enumerate(idx):
            ids = inputs[i][0]
            batch[row, : len(ids)] = torch.tensor(ids)
        logprobs = lm.logprobs(batch).cpu()
        for row, i in enumerate(idx):
            ids, cont = inputs[i]
            n = len(ids)
            lp = logprobs[row, n - len(cont): n]  # positions predicting the continuation
            target = torch.tensor(cont)
            total = lp.gather(-1, target[:, None]).sum().item()
            greedy = bool((lp.argmax(-1) == target).all())
            results[i] = (total, greedy)
    return results  # type: ignore[return-value]


def loglikelihood(lm: LanguageModel, requests: Sequence[tuple[str, str]], batch_size: int = 8,
                  progress: bool = False) -> list[tuple[float, bool]]:
    """(log P(continuation | context), is the continuation the greedy decode) per request."""
    return loglikelihood_tokens(lm, [split_request(lm, c, x) for c, x in requests], batch_size, progress)


def rolling_windows(tokens: list[int], eot_id: int, max_length: int) -> list[tuple[list[int], list[int]]]:
    """Disjoint windows that score every token of `tokens` once, each with as much preceding
    context as fits (the first token is predicted from the end-of-text token), as lm-eval does."""
    if not tokens:
        return []
    windows = []
    first = min(max_length, len(tokens))
    windows.append(([eot_id] + tokens[: first - 1], tokens[:first]))
    done = first
    while done < len(tokens):
        n = min(len(tokens) - done, max_length)
        end = done + n
        inp = tokens[max(0, end - max_length - 1): end - 1]
        windows.append((inp, tokens[done:end]))
        done = end
    # make the context disjoint from the scored part: context = inputs before the scored targets
    return [(inp[: len(inp) - (len(cont) - 1)], cont) for inp, cont in windows]


def loglikelihood_rolling(lm: LanguageModel, texts: Sequence[str], batch_size: int = 8,
                          progress: bool = False) -> list[float]:
    """Total log-likelihood of each text (every token scored once)."""
    per_text, flat = [], []
    for text in texts:
        windows = rolling_windows(lm.encode(text), lm.eot_id, lm.max_length)
        per_text.append(len(windows))
        flat.extend(windows)
    scores = loglikelihood_tokens(lm, flat, batch_size, progress)
    out, pos = [], 0
    for n in per_text:
        out.append(sum(s for s, _ in scores[pos: pos + n]))
        pos += n
    return out


@torch.no_grad()
def generate_until(lm: LanguageModel, requests: Sequence[tuple[str, dict]], progress: bool = False) -> list[str]:
    """Greedy continuation of each context until a stop string or max_gen_toks tokens.

    Each request is (context, {"until": [..], "max_gen_toks": N}). Models with a KV-cache
    generator use it (`lm.generate_greedy`); others recompute the prefix each step.
    """
    outputs = []
    for context, kwargs in tqdm(requests, disable=not shows_progress(progress), desc="generate"):
        until = kwargs.get("until") or []
        if isinstance(until, str):
            until = [until]
        max_new = int(kwargs.get("max_gen_toks", 256))
        ids = lm.encode(context) or [lm.eot_id]
        if hasattr(lm, "generate_greedy"):
            new = lm.generate_greedy(ids, max_new, until)
        else:
            new = []
            for _ in range(max_new):
                window = (ids + new)[-lm.max_length:]
                nxt = int(lm.logprobs(torch.tensor([window]))[0, -1].argmax())
                if nxt == lm.eot_id:
                    break
                new.append(nxt)
                if until and any(s in lm.decode(new) for s in until):
                    break
        text = lm.decode(new)
        for stop in until:
            if stop and stop in text:
                text = text[: text.index(stop)]
        outputs.append(text)
    return outputs
