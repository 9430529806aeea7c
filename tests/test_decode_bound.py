"""Decoding against its bound (issue 42, point 4): the rule that keeps weights in bf16 for decoding
where bf16 products are faster, bf16 decoding's greedy tokens against fp32's on a tiny model, the
packed bf16 products against F.linear, and the byte counts of bench/bench_generate.py's bound."""

import pytest
import torch
import torch.nn.functional as F

from megazoo.core.nn import decode_linear as dl
from megazoo.core.parallel.context import ParallelContext
from megazoo.zoo.generate import generate
from megazoo.zoo.gpt import TINY, GPTModel
from tests.bench_module import load_bench

PROMPTS = [[5, 6, 7, 8, 9], [11, 12], [20, 21, 22], [40]]


@pytest.fixture(scope="module")
def bench():
    return load_bench("bench_generate")


def _models(tie: bool = False, train_steps: int = 0):
    """A tiny Llama in fp32 (trained `train_steps` on counting: token t is followed by t + 1) and
    the same weights in bf16."""
    cfg = TINY["llama-tiny"](tie_embeddings=tie)
    fp32 = GPTModel(cfg, ParallelContext.single()).initialize(3)
    if train_steps:
        opt = torch.optim.Adam(fp32.parameters(), lr=1e-2)
        gen = torch.Generator().manual_seed(0)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # tiny products: more threads only wait on each other on a busy machine
        try:
            for _ in range(train_steps):
                ids = torch.randint(0, cfg.vocab_size - 17, (8, 1), generator=gen) + torch.arange(17)
                loss = fp32(ids[:, :-1], labels=ids[:, 1:]).mean()
                opt.zero_grad()
                loss.backward()
                opt.step()
        finally:
            torch.set_num_threads(threads)
    fp32.eval()
    bf16 = GPTModel(cfg, ParallelContext.single(), dtype=torch.bfloat16).eval()
    with torch.no_grad():
        for p, q in zip(bf16.parameters(), fp32.parameters()):
            p.copy_(q)
    return fp32, bf16


@pytest.mark.parametrize("probe, want", [("faster", torch.bfloat16), ("slower", torch.float32),
                                         ("0.3,0.6", torch.bfloat16), ("0.325,0.168", torch.float32)])
def test_rule_picks_bf16_weights_where_bf16_is_faster(monkeypatch, probe, want):
    monkeypatch.setenv("MEGAZOO_BF16_PROBE", probe)  # the probe's result injected
    assert dl.decode_dtype(torch.device("cpu")) == want


def test_bf16_decoding_keeps_fp32_greedy_tokens(monkeypatch):
    """Greedy tokens of the bf16 weights equal fp32's over 6 tokens at batch 1 and 4, through the
    packed bf16 products, for a model whose next token is clear (trained to count). Where fp32's
    best two logits lie closer than bf16's rounding of them (~1e-2 relative: an untrained model's
    near-uniform logits), bf16 may pick the other: the tokens are equal only up to that tolerance."""
    monkeypatch.delenv("MEGAZOO_DECODE_PRODUCTS", raising=False)
    fp32, bf16 = _models(train_steps=60)
    assert generate(fp32, [PROMPTS[0]], 6) == [[10, 11, 12, 13, 14, 15]], "the model learned to count"
    for batch in ([PROMPTS[0]], PROMPTS):
        assert generate(bf16, batch, 6) == generate(fp32, batch, 6)
    copy = dl._COPIES.get(bf16.head)
    assert copy is not None and copy[1].dtype == torch.bfloat16, "bf16 decoding took the packed products"


@pytest.mark.parametrize("rows", [1, 4])
def test_packed_bf16_products_equal_f_linear(rows):
    _, bf16 = _models()
    layer, down = bf16.layers["0"].attn.qkv, bf16.layers["0"].mlp.fc2
    x = torch.randn(1, rows, layer.in_features, generator=torch.Generator().manual_seed(0)).bfloat16()
    h = torch.randn(1, rows, down.in_features, generator=torch.Generator().manual_seed(1)).bfloat16()
    with torch.no_grad():
        torch.testing.assert_close(dl.column_linear(layer, x), F.linear(x, layer.weight), rtol=2e-2, atol=2e-2)
        torch.testing.assert_close(dl.row_linear(down, h), F.linear(h, down.weight), rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("tie", [True, False])
def test_weight_bytes_count_every_weight_once(bench, tie):
    fp32, bf16 = _models(tie)
    table = fp32.embed.weight
    every = sum({p.data_ptr(): p.numel() for p in fp32.parameters()}.values())
    # a tied table is the head, read whole; an untied one is read one row per sequence
    want = every if tie else every - table.numel() + 3 * table.shape[1]
    assert bench.weight_bytes(fp32, 3) == 4 * want
    assert bench.weight_bytes(bf16, 3) == 2 * want


def test_bound_adds_the_kv_cache_at_the_mean_context(bench):
    fp32, _ = _models(tie=True)
    cfg = fp32.cfg
    assert bench.kv_bytes(cfg, 4, 10.0, 4) == 2 * cfg.num_layers * 4 * cfg.num_kv_heads * cfg.kv_channels * 10 * 4
    weights = bench.weight_bytes(fp32, 1)
    # two prompts alone (widths 5 and 2) then both in one batch (width 5), 8 new tokens: 7 steps each
    alone = bench.bound_seconds(fp32, [[PROMPTS[0]], [PROMPTS[1]]], 8, 1e9)
    assert alone == pytest.approx(7 * (2 * weights + bench.kv_bytes(cfg, 1, 9, 4) + bench.kv_bytes(cfg, 1, 6, 4)) / 1e9)
    both = bench.bound_seconds(fp32, [PROMPTS[:2]], 8, 1e9)
    assert both == pytest.approx(7 * (bench.weight_bytes(fp32, 2) + bench.kv_bytes(cfg, 2, 9, 4)) / 1e9)


def test_read_bandwidth_reads_past_the_last_level_cache(bench, monkeypatch):
    monkeypatch.setattr(bench, "MIN_READ_BYTES", 0)
    monkeypatch.setattr(bench, "llc_bytes", lambda: 2**20)
    buffer = bench.read_buffer()
    assert buffer.numel() * 4 == 8 * 2**20
    assert min(bench.read_bandwidth(buffer, repeats=2)) > 0  # per wall and per CPU second


def test_same_prefix_counts_tokens_before_the_first_difference(bench):
    assert bench.same_prefix([[1, 2, 3], [4, 5]], [[1, 2, 9], [4, 5]]) == (4, 5)


def test_ceiling_replays_one_decode_step_products(bench):
    """The ceiling line's products are one batch-1 decode step's: every layer's packed products
    (q/k/v, attention output, gate and up in one, down) and the head's, once each (not the prefill's
    last-position head product), and replaying them gives the outputs decoding got."""
    fp32, _ = _models(tie=True)
    calls = bench.step_products(fp32, PROMPTS[0], pad=0)
    assert len(calls) == 4 * fp32.cfg.num_layers + 1
    assert all(x.shape[:-1] == (1, 1) for x, _, _ in calls)  # one token of one sequence
    assert len({id(w) for _, w, _ in calls}) == len(calls)  # every packed weight read once
    head = fp32.head.get_weight()
    assert calls[-1][1].numel() == head.numel()
    x = calls[-1][0]
    with torch.no_grad():
        torch.testing.assert_close(torch.ops.mkldnn._linear_pointwise(x, calls[-1][1], None, "none", [], ""),
                                   F.linear(x, head), rtol=1e-5, atol=1e-5)
    wall, cpu = bench.products_time(calls, repeats=2)
    assert 0 < wall < 10 and 0 <= cpu < 10
