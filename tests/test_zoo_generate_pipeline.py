"""Generation across pipeline stages: pp=2, tp=2 x pp=2 and pp=2 with two virtual stages per rank
produce exactly the tokens of the single-process model (greedy and seeded sampling, batched and
left-padded, with and without the KV cache), on every rank."""

from __future__ import annotations

import pytest
import torch

from megazoo.core.parallel.launch import spawn
from megazoo.zoo.generate import generate
from megazoo.zoo.gpt import GPTModel
from megazoo.zoo.gpt.config import gpt2_layout, llama_layout

PROMPTS = [[5, 17, 42, 99, 7, 3, 150], [11, 12], [200, 201, 202, 203]]
LAYOUTS = {"pp2": dict(pp=2), "tp2xpp2": dict(tp=2, pp=2), "pp2-vpp2": dict(pp=2, vpp=2)}


def configs():
    common = dict(num_layers=4, hidden_size=64, num_heads=4, vocab_size=300, seq_length=64)
    return {"gpt2": gpt2_layout(**common), "llama": llama_layout(num_kv_heads=2, ffn_hidden_size=96, **common)}


def runs(model) -> dict:
    return {"greedy": generate(model, PROMPTS, 8),
            "greedy_no_cache": generate(model, PROMPTS, 8, use_cache=False),
            "sampled": generate(model, PROMPTS, 8, do_sample=True, temperature=0.9, top_k=50, top_p=0.95,
                                repetition_penalty=1.2, seed=3),
            "eos": generate(model, PROMPTS, 8, eos_token_id=list(range(0, 300, 3)))}


def pipeline_ranks() -> dict:
    from megazoo.core.parallel.context import ParallelConfig, ParallelContext
    from megazoo.core.parallel.pipeline import build_chunks

    out = {}
    for name, cfg in configs().items():
        for layout, degrees in LAYOUTS.items():
            ctx = ParallelContext.build(ParallelConfig(**degrees))
            chunks = build_chunks(lambda **kw: GPTModel(cfg, ctx, **kw).initialize(0), cfg.num_layers, ctx)
            out[(name, layout)] = runs(chunks)
    return out


def test_pipeline_generation_equals_one_process():
    want = {name: runs(GPTModel(cfg).initialize(0)) for name, cfg in configs().items()}
    assert want["gpt2"]["greedy"] != want["llama"]["greedy"]
    assert any(len(t) < 8 for t in want["gpt2"]["eos"])  # an end token really stopped a sequence
    results = spawn(pipeline_ranks, 4, timeout=300)
    for rank, per_rank in enumerate(results):
        for (name, layout), got in per_rank.items():
            assert got == want[name], f"{name} {layout} rank {rank}"


def test_pipeline_generation_needs_the_ranks_chunks():
    with pytest.raises(ValueError, match="list of model chunks is for pipeline parallelism"):
        generate([GPTModel(configs()["gpt2"]).initialize(0)] * 2, PROMPTS, 2)
