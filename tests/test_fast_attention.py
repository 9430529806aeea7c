"""The fast attention path (megazoo.core.nn.fast_attention) equals SDPA, alone and inside the
tensor/sequence-parallel model at tp 1, 2 and 4, and the per-device rule picks its kernel."""

import pytest
import torch
import torch.nn.functional as F

from megazoo.core.nn import fast_attention as fa
from megazoo.core.parallel import device
from megazoo.core.parallel.context import ParallelContext
from megazoo.core.parallel.launch import spawn
from tests.parity import run_model, tp_cases

TOL = 1e-5  # the model parity tests' tolerance


def _qkv(dtype, heads=8, kv=8, s=24, t=24, b=2, d=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, heads, s, d, generator=g, dtype=torch.float64)
    k, v = (torch.randn(b, kv, t, d, generator=g, dtype=torch.float64) for _ in range(2))
    return [x.to(dtype).requires_grad_() for x in (q, k, v)]


@pytest.mark.parametrize("block_rows", [128, 4])  # one block; causal queries in blocks of 4-5 rows (at most 8)
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("heads,kv,s,t", [(8, 8, 24, 24), (8, 2, 24, 24), (6, 3, 1, 20), (4, 2, 5, 9), (4, 2, 19, 30),
                                          (4, 4, 37, 37)])
def test_explicit_equals_sdpa_forward_and_backward(causal, heads, kv, s, t, block_rows, monkeypatch):
    monkeypatch.setattr(fa, "QUERY_BLOCK_ROWS", block_rows)
    q, k, v = _qkv(torch.float64, heads, kv, s, t)
    out = fa.explicit_attention(q, k, v, 0.3, causal)
    w = torch.randn(out.shape, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    grads = torch.autograd.grad((out * w).sum(), (q, k, v))
    # causal is bottom-right aligned: the s queries are the last s of t positions (as with a KV cache)
    mask = torch.ones(s, t, dtype=torch.bool).tril(t - s) if causal else None
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3, enable_gqa=heads != kv)
    ref_grads = torch.autograd.grad((ref * w).sum(), (q, k, v))
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
    for a, b in zip(grads, ref_grads):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-10)


def test_bf16_error_is_that_of_sdpa():
    """In bf16 both kernels round; the explicit one stays within 2x SDPA's error against fp64."""
    q, k, v = _qkv(torch.bfloat16, 8, 2, 64, 64)
    exact = F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=True, enable_gqa=True)
    err_fast = (fa.explicit_attention(q, k, v, 0.25, True).double() - exact).abs().max().item()
    err_sdpa = (F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True).double() - exact).abs().max().item()
    assert fa.explicit_attention(q, k, v, 0.25, True).dtype == torch.bfloat16
    assert err_fast <= 2 * err_sdpa + 1e-3, (err_fast, err_sdpa)


def test_causal_bias_is_cached_and_masks_the_future():
    b1 = fa.causal_bias(3, 5, 2, torch.float32, torch.device("cpu"))
    assert b1 is fa.causal_bias(3, 5, 2, torch.float32, torch.device("cpu")), "built once per shape"
    row = b1[0]  # query 0 of 3 over 5 keys (2 in the past): sees keys 0..2
    assert torch.equal(torch.isinf(row), torch.tensor([False, False, False, True, True]))
    assert torch.equal(b1[:3], b1[3:]), "repeated for each query head of a KV group"


def test_device_rule(monkeypatch):
    cpu, cuda = torch.device("cpu"), torch.device("cuda", 0)
    monkeypatch.delenv("MEGAZOO_ATTENTION", raising=False)
    assert device.attention_kernel(cuda, torch.bfloat16) == "sdpa"
    assert device.attention_kernel(cuda, torch.float32, 512, 512, True) == "sdpa"
    # CPU fp32: the blocked explicit kernel for causal training shapes up to 1024 keys, SDPA otherwise
    assert device.attention_kernel(cpu, torch.float32, 512, 512, True) == "explicit"
    assert device.attention_kernel(cpu, torch.float32, 1024, 1024, True) == "explicit"
    assert device.attention_kernel(cpu, torch.float32, 2048, 2048, True) == "sdpa"
    assert device.attention_kernel(cpu, torch.float32, 1, 40, True) == "sdpa", "decoding one token"
    assert device.attention_kernel(cpu, torch.float32, 512, 512, False) == "sdpa", "no causal blocks to skip"
    assert device.attention_kernel(cpu, torch.float32, 512, 512, True, backward=False) == "sdpa", "forward only"
    want = "explicit" if device.cpu_has_native_bf16() else "sdpa"
    assert device.attention_kernel(cpu, torch.bfloat16) == want
    assert device.attention_kernel(cpu, torch.bfloat16, 512, 512, True) == want
    monkeypatch.setenv("MEGAZOO_ATTENTION", "explicit")
    assert device.attention_kernel(cpu, torch.float32) == "explicit"


def test_a_forward_without_graph_takes_sdpa_in_fp32_on_a_cpu(monkeypatch):
    """A prefill or an evaluation (no backward to follow) at a training shape where the explicit
    kernel wins with its backward: SDPA, which allocates no score matrix."""
    monkeypatch.delenv("MEGAZOO_ATTENTION", raising=False)
    calls = []
    real = fa.explicit_attention
    monkeypatch.setattr(fa, "explicit_attention", lambda *a: calls.append(1) or real(*a))
    q, k, v = _qkv(torch.float32, 4, 2, 256, 256, b=1)
    out = fa.fast_attention(q, k, v, 0.25, True)
    assert calls == [1], "with a graph: the explicit kernel"
    with torch.no_grad():
        again = fa.fast_attention(q, k, v, 0.25, True)
    assert calls == [1], "forward only: SDPA"
    torch.testing.assert_close(again, out.detach(), rtol=1e-5, atol=1e-6)


def test_large_scores_fall_back_to_sdpa(monkeypatch):
    calls = []
    monkeypatch.setenv("MEGAZOO_ATTENTION", "explicit")
    monkeypatch.setattr(fa, "explicit_attention", lambda *a: calls.append(1) or a[0])
    q, k, v = _qkv(torch.float32)
    fa.fast_attention(q, k, v, 0.25, True)
    assert calls == [1]
    monkeypatch.setattr(fa, "EXPLICIT_MAX_BYTES", 100)
    out = fa.fast_attention(q, k, v, 0.25, True)
    assert calls == [1] and out.shape == q.shape


@pytest.mark.parametrize("kernel", ["sdpa", "explicit"])
def test_causal_queries_fewer_than_keys_are_the_last_positions(kernel, monkeypatch):
    """Causal with s < t queries (a decoder's last layer computing a suffix, a prefill after a
    cache): both kernels align the queries with the last s keys, where SDPA's own is_causal would
    align them with the first s."""
    monkeypatch.setenv("MEGAZOO_ATTENTION", kernel)
    q, k, v = _qkv(torch.float64, 4, 2, 5, 12)
    out = fa.fast_attention(q, k, v, 0.3, True)
    mask = torch.ones(5, 12, dtype=torch.bool).tril(12 - 5)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=0.3, enable_gqa=True)
    torch.testing.assert_close(out, ref, rtol=1e-10, atol=1e-10)
    top_left = F.scaled_dot_product_attention(q, k, v, is_causal=True, scale=0.3, enable_gqa=True)
    assert not torch.allclose(out, top_left)

def _assert_close(a, b, what):
    err = (a - b).abs().max().item()
    assert err <= TOL * max(1.0, b.abs().max().item()), f"{what}: max abs difference {err:.3e}"


def test_model_parity_with_the_explicit_kernel_at_tp_1_2_4(monkeypatch):
    """gpt (MHA) and llama (GQA) with the explicit kernel: equal to SDPA at tp=1, then tp 2 and 4 with
    and without sequence parallelism equal to tp=1."""
    ctx = ParallelContext.single()
    monkeypatch.setenv("MEGAZOO_ATTENTION", "sdpa")
    sdpa = {layout: run_model(layout, ctx) for layout in ("gpt-tiny", "llama-tiny")}
    monkeypatch.setenv("MEGAZOO_ATTENTION", "explicit")  # inherited by the spawned ranks
    ref = {layout: run_model(layout, ctx) for layout in ("gpt-tiny", "llama-tiny")}
    for layout in ref:
        _assert_close(ref[layout]["loss"], sdpa[layout]["loss"], f"{layout} explicit vs sdpa loss")
        for name, g in ref[layout]["grads"].items():
            _assert_close(g, sdpa[layout]["grads"][name], f"{layout} explicit vs sdpa grad {name}")
    for tp in (2, 4):
        results = spawn(tp_cases, tp, tp, timeout=300)
        for (layout, sp), got in results[0].items():
            tag = f"{layout} tp={tp} sp={sp}"
            _assert_close(got["loss"], ref[layout]["loss"], f"{tag} loss")
            _assert_close(got["logits"], ref[layout]["logits"], f"{tag} logits")
            for name, g in got["grads"].items():
                _assert_close(g, ref[layout]["grads"][name], f"{tag} grad {name}")


def test_generation_goes_through_the_fast_path(monkeypatch):
    """Greedy decoding (prefill, then one token at a time against the KV cache, GQA) takes the fast
    path and picks the same tokens with either kernel."""
    from megazoo.zoo.generate import generate
    from megazoo.zoo.gpt import TINY, GPTModel

    model = GPTModel(TINY["llama-tiny"](), ParallelContext.single()).initialize(5).eval()
    calls = []
    real = fa.explicit_attention
    monkeypatch.setattr(fa, "explicit_attention", lambda *a: calls.append(a[0].shape[2]) or real(*a))
    out = {}
    for kernel in ("sdpa", "explicit"):
        monkeypatch.setenv("MEGAZOO_ATTENTION", kernel)
        out[kernel] = generate(model, [[5, 6, 7, 8, 9]], 6)
    assert out["explicit"] == out["sdpa"] and len(out["sdpa"][0]) == 6
    layers = len(model.layers)
    assert calls[:layers] == [5] * layers and set(calls[layers:]) == {1}, f"prefill, then one token at a time: {calls}"
