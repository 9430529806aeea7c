"""Rank function of the SmolLM2 TP=2 test: load the full megazoo checkpoint, keep this rank's
slice, return logits and greedy continuations (and a sampled one, to compare across ranks)."""

from __future__ import annotations

import torch


def smollm2_tp2(checkpoint: str, prompts: list[list[int]], eos: int) -> dict:
    from megazoo.core.parallel.context import ParallelConfig, ParallelContext
    from megazoo.zoo.generate import generate
    from megazoo.zoo.hf import build_model, config_from_dict, load_full_state
    from megazoo.zoo.io import load_model

    ctx = ParallelContext.build(ParallelConfig(tp=2))
    arch, cfg, state = load_model(checkpoint)
    cfg = config_from_dict(arch, cfg)
    model = load_full_state(build_model(arch, cfg, ctx), state, ctx).eval()
    del state
    with torch.no_grad():
        logits = [model(torch.tensor([p])) for p in prompts]
    return {"logits": logits, "greedy": generate(model, prompts, 20, eos_token_id=eos),
            "sampled": generate(model, prompts, 8, do_sample=True, top_p=0.9, temperature=0.8, seed=5)}
