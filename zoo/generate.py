"""Text generation for megazoo decoders (GPT/Llama) and T5: greedy or sampled (temperature,
top-k, top-p), repetition penalty, stop tokens and stop strings, a KV cache, batched prompts
with left padding. Tensor-parallel models work as they are: every tp rank holds the same gathered
logits and draws from an identically seeded generator, so all ranks pick the same tokens.
Pipeline-parallel decoders pass this rank's chunks (a list, as build_chunks makes them): each
token's hidden states travel through the virtual stages in order, every stage keeping its own KV
cache, and the last stage's logits are broadcast so that every rank picks the same tokens.

    new_tokens = generate(model, [[1, 2, 3], [4, 5]], max_new_tokens=20)            # greedy
    texts = generate_text(model, tokenizer, ["Hello"], max_new_tokens=20, do_sample=True, top_p=0.9)
"""

from __future__ import annotations

import torch

from megazoo.core.nn.attention import KVCache


def _pad_left(prompts, pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width), dtype=torch.long)
    for i, p in enumerate(prompts):
        if len(p):
            ids[i, width - len(p):] = torch.as_tensor(p, dtype=torch.long)
            mask[i, width - len(p):] = 1
    return ids, mask


def process_logits(logits: torch.Tensor, seen: torch.Tensor | None, temperature: float = 1.0, top_k: int = 0,
                   top_p: float = 1.0, repetition_penalty: float = 1.0) -> torch.Tensor:
    """[b, V] next-token logits -> filtered logits (-inf where a token may not be drawn).
    `seen` [b, V] bool marks tokens already in each sequence (for the repetition penalty)."""
    logits = logits.float()
    if repetition_penalty != 1.0 and seen is not None:
        penalised = torch.where(logits < 0, logits * repetition_penalty, logits / repetition_penalty)
        logits = torch.where(seen, penalised, logits)
    if temperature not in (0.0, 1.0):
        logits = logits / temperature
    if top_k and top_k < logits.shape[-1]:
        kth = torch.topk(logits, top_k, dim=-1).values[..., -1:]
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p < 1.0:
        sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
        cum = sorted_logits.softmax(-1).cumsum(-1)
        drop = cum - sorted_logits.softmax(-1) >= top_p  # tokens after the nucleus is complete
        drop[..., 0] = False
        logits = logits.masked_fill(drop.scatter(-1, order, drop), float("-inf"))
    return logits


class _StopStrings:
    def __init__(self, stop_strings, tokenizer):
        self.stops = [s for s in (stop_strings or []) if s]
        if self.stops and tokenizer is None:
            raise ValueError("stop_strings need a tokenizer (to decode the generated tokens)")
        self.tokenizer = tokenizer
        self.window = max((len(s) for s in self.stops), default=0) + 8  # tokens: each is >= 1 character

    def hit(self, tokens: list[int]) -> bool:
        if not self.stops:
            return False
        text = self.tokenizer.decode(tokens[-self.window:], skip_special_tokens=False)
        return any(s in text for s in self.stops)


def _step_fn(model, ids, mask, use_cache, decoder_start):
    """Prefill once and return step(new_tokens [b]) -> logits [b, V] of the next position."""
    is_t5 = hasattr(model, "encode") and hasattr(model, "decode")
    padded = bool((mask == 0).any())
    if is_t5:
        from megazoo.zoo.t5.model import T5Cache

        enc_mask = mask if padded else None
        enc = model.encode(ids, enc_mask)
        state = {"cache": T5Cache() if use_cache else None, "dec": torch.full((ids.shape[0], 1), decoder_start, dtype=torch.long)}

        def step(new):
            if new is not None:
                state["dec"] = torch.cat([state["dec"], new[:, None]], 1)
            inp = state["dec"][:, -1:] if use_cache else state["dec"]
            return model.decode(inp, enc, enc_mask, cache=state["cache"])[:, -1]

        return step
    chunks = list(model) if isinstance(model, (list, tuple)) else [model]
    ctx = getattr(chunks[0], "ctx", None)
    if ctx is not None and ctx.pp > 1:
        if ctx.sp:
            raise ValueError("generation needs sequence parallelism off (parallel.sp=false)")
        if len(chunks) != ctx.vpp:
            raise ValueError(f"pipeline generation needs this rank's {ctx.vpp} model chunk(s) (parallel.vpp), "
                             f"got {len(chunks)}")
    elif len(chunks) != 1:
        raise ValueError("a list of model chunks is for pipeline parallelism (pp > 1); pass the model itself")
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    caches = [KVCache() if use_cache else None for _ in chunks]
    state = {"ids": ids, "mask": mask, "pos": positions, "first": True}

    def step(new):
        if new is not None:
            last = state["pos"][:, -1:] + 1
            state["ids"] = torch.cat([state["ids"], new[:, None]], 1)
            state["mask"] = torch.cat([state["mask"], torch.ones_like(new[:, None])], 1)
            state["pos"] = torch.cat([state["pos"], last], 1)
        if use_cache and not state["first"]:
            inp, pos = state["ids"][:, -1:], state["pos"][:, -1:]
        else:
            inp, pos = state["ids"], state["pos"]
        state["first"] = False
        attn = state["mask"] if padded else None
        if ctx is None or ctx.pp == 1:
            return chunks[0](inp, position_ids=pos, attention_mask=attn, cache=caches[0], logits_to_keep=1)[:, -1]
        return _through_stages(chunks, ctx, inp, pos, attn, caches)

    return step


def _through_stages(chunks, ctx, inp, pos, attn, caches) -> torch.Tensor:
    """One decoding step through every virtual stage (chunk c of pp rank r is stage c * pp + r);
    returns the last stage's next-token logits [b, V] on every rank of the pipeline."""
    from megazoo.core.parallel.pipeline import broadcast_from_last_stage
    from megazoo.core.parallel.pipeline.p2p import exchange

    pp, me = ctx.pp, ctx.pp_rank
    stages = pp * len(chunks)
    b, s = inp.shape
    cfg = chunks[0].cfg
    dtype = next(chunks[0].parameters()).dtype
    hidden, logits = None, None
    for vs in range(stages):
        if vs % pp != me:
            continue
        c = vs // pp
        if vs > 0:
            (hidden,), _ = exchange([], [((s, b, cfg.hidden_size), dtype, (vs - 1) % pp, ("act", vs))], ctx)
        out = chunks[c](inp if vs == 0 else None, hidden_states=hidden, position_ids=pos, attention_mask=attn,
                        cache=caches[c], logits_to_keep=1 if vs == stages - 1 else 0)
        if vs == stages - 1:
            logits = out[:, -1].float()
        else:
            exchange([(out.to(dtype), (vs + 1) % pp, ("act", vs + 1))], [], ctx)
    if logits is None:
        logits = torch.zeros(b, cfg.vocab_size, dtype=torch.float32, device=inp.device)
    return broadcast_from_last_stage(logits, ctx)


@torch.inference_mode()
def generate(model, prompts, max_new_tokens: int = 20, *, do_sample: bool = False, temperature: float = 1.0,
             top_k: int = 0, top_p: float = 1.0, repetition_penalty: float = 1.0, eos_token_id=None,
             pad_token_id: int | None = None, stop_strings: list[str] | None = None, tokenizer=None, seed: int = 0,
             use_cache: bool = True, attention_mask: torch.Tensor | None = None,
             decoder_start_token_id: int | None = None, min_new_tokens: int = 0) -> list[list[int]]:
    """Generate up to max_new_tokens for each prompt; returns the new tokens per prompt (an
    end token or the token completing a stop string included, nothing after it).

    prompts: a list of token-id lists (any lengths; left-padded here) or a [b, s] tensor, left-padded
    when `attention_mask` (1 = token) is given. Greedy unless do_sample (temperature 0 is greedy too).
    eos_token_id: an int or a list of ints; min_new_tokens: end tokens are not drawn before that
    many new tokens (as transformers). Works for GPTModel (GPT/Llama, sp off; with pp > 1 pass this
    rank's list of chunks, and call it on every rank of the pipeline) and T5Model."""
    chunks = list(model) if isinstance(model, (list, tuple)) else [model]
    cfg = chunks[0].cfg
    eos = set([eos_token_id] if isinstance(eos_token_id, int) else (eos_token_id or []))
    if pad_token_id is None:
        pad_token_id = getattr(cfg, "pad_token_id", None) or (min(eos) if eos else 0)
    if torch.is_tensor(prompts):
        ids = prompts.long()
        mask = attention_mask.long() if attention_mask is not None else torch.ones_like(ids)
    else:
        if isinstance(prompts[0], int):
            prompts = [prompts]
        ids, mask = _pad_left(prompts, pad_token_id)
    device = next(chunks[0].parameters()).device
    ids, mask = ids.to(device), mask.to(device)
    start = decoder_start_token_id if decoder_start_token_id is not None else getattr(cfg, "decoder_start_token_id", 0)
    for m in chunks:
        m.eval()
    step = _step_fn(model, ids, mask, use_cache, start)
    b, vocab = ids.shape[0], cfg.vocab_size
    seen = None
    if repetition_penalty != 1.0:
        seen = torch.zeros(b, vocab, dtype=torch.bool, device=device)
        if not hasattr(model, "encode"):  # decoders penalise the prompt too, as HF does
            seen.scatter_(1, ids.clamp(max=vocab - 1), mask.bool())
    stops = _StopStrings(stop_strings, tokenizer)
    gen = torch.Generator(device=device).manual_seed(seed)
    out = [[] for _ in range(b)]
    done = torch.zeros(b, dtype=torch.bool, device=device)
    new = None
    for i in range(max_new_tokens):
        logits = step(new)
        if i < min_new_tokens and eos:
            logits = logits.clone()
            logits[:, [t for t in eos if t < logits.shape[-1]]] = float("-inf")
        greedy = not do_sample or temperature == 0.0
        if greedy and repetition_penalty == 1.0:
            new = logits.argmax(-1)
        else:
            filtered = process_logits(logits, seen, 1.0 if greedy else temperature, 0 if greedy else top_k,
                                      1.0 if greedy else top_p, repetition_penalty)
            new = filtered.argmax(-1) if greedy else torch.multinomial(filtered.softmax(-1), 1, generator=gen)[:, 0]
        new = torch.where(done, torch.full_like(new, pad_token_id), new)
        if seen is not None:
            seen[torch.arange(b, device=device), new] = True
        for i, t in enumerate(new.tolist()):
            if done[i]:
                continue
            out[i].append(t)
            if t in eos or stops.hit(out[i]):
                done[i] = True
        if bool(done.all()):
            break
    return out


def generate_text(model, tokenizer, texts: list[str], max_new_tokens: int = 20, **kw) -> list[str]:
    """Encode `texts` with the tokenizer, generate, decode the new tokens."""
    prompts = [tokenizer(t)["input_ids"] for t in texts]
    kw.setdefault("eos_token_id", tokenizer.eos_token_id)
    if kw.get("pad_token_id") is None and tokenizer.pad_token_id is not None:
        kw["pad_token_id"] = tokenizer.pad_token_id
    out = generate(model, prompts, max_new_tokens, tokenizer=tokenizer, **kw)
    return [tokenizer.decode(o, skip_special_tokens=True) for o in out]
