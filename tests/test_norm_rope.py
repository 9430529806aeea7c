"""RMSNorm and rotary embeddings as single autograd nodes (core/nn/norm.py, core/nn/rope.py): the
same values and gradients as the plain formulas they replace, fp64 gradients checked numerically,
and no full-size zero-filled buffers in the rotary backward."""

import pytest
import torch
import torch.nn.functional as F

from megazoo.core.nn.norm import _RMSNorm
from megazoo.core.nn.rope import apply_rope, rope_tables


def rotate_half_reference(x, cos, sin):
    """The Llama / Hugging Face form: x cos + cat(-x2, x1) sin."""
    cos, sin = (cos[:, None, None, :], sin[:, None, None, :]) if cos.dim() == 2 else (cos[:, :, None], sin[:, :, None])
    half = x.shape[-1] // 2
    return x * cos.to(x.dtype) + torch.cat([-x[..., half:], x[..., :half]], dim=-1) * sin.to(x.dtype)


def hf_llama_rms_norm(x, weight, eps):
    """transformers' LlamaRMSNorm forward, written out."""
    xf = x.float()
    return weight * (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)


def test_rms_norm_fp64_gradients_and_fp32_equals_torch():
    x = torch.randn(6, 3, 16, dtype=torch.float64, requires_grad=True)
    w = torch.randn(16, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda a, b: _RMSNorm.apply(a, b, 1e-6), (x, w))
    torch.manual_seed(0)
    x = torch.randn(32, 2, 96, requires_grad=True)
    w = (1 + 0.1 * torch.randn(96)).requires_grad_()
    dy = torch.randn(32, 2, 96)
    y = _RMSNorm.apply(x, w, 1e-5)
    gx, gw = torch.autograd.grad(y, (x, w), dy)
    y2 = F.rms_norm(x, (96,), w, 1e-5)
    gx2, gw2 = torch.autograd.grad(y2, (x, w), dy)
    assert torch.equal(y, y2)
    torch.testing.assert_close(gx, gx2, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gw, gw2, rtol=1e-5, atol=1e-5)


def test_rms_norm_bf16_is_hf_llama_bit_for_bit():
    torch.manual_seed(1)
    x = torch.randn(16, 2, 64).to(torch.bfloat16).requires_grad_()
    w = (1 + 0.1 * torch.randn(64)).to(torch.bfloat16).requires_grad_()
    y = _RMSNorm.apply(x, w, 1e-5)
    assert y.dtype == torch.bfloat16 and torch.equal(y, hf_llama_rms_norm(x, w, 1e-5))
    gx, gw = torch.autograd.grad(y, (x, w), torch.ones_like(y))
    assert gx.dtype == gw.dtype == torch.bfloat16
    x64, w64 = x.detach().double().requires_grad_(), w.detach().double().requires_grad_()
    ref = torch.autograd.grad(hf_llama_rms_norm(x64, w64, 1e-5), (x64, w64), torch.ones_like(x64))
    for got, want in zip((gx, gw), ref):  # within bf16's own rounding of the exact gradient
        assert ((got.double() - want).abs().max() / want.abs().max()) < 1e-2


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_rope_equals_rotate_half_and_its_gradient(dtype):
    torch.manual_seed(2)
    cos, sin = rope_tables(12, 8, 10000.0)
    x = torch.randn(12, 2, 3, 8, dtype=dtype, requires_grad=True)
    g = torch.randn(12, 2, 3, 8, dtype=dtype)
    y = apply_rope(x, cos, sin)
    (gx,) = torch.autograd.grad(y, x, g)
    y2 = rotate_half_reference(x, cos, sin)
    (gx2,) = torch.autograd.grad(y2, x, g)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(y, y2, **tol)
    torch.testing.assert_close(gx, gx2, **tol)


def test_rope_general_tables_per_sample_positions_and_strided_input():
    """Tables whose halves differ (not rope_tables' duplicated angles), [s, b, d] tables for per-sample
    positions, and a non-contiguous x (k is a strided view of the fused qkv)."""
    c, s = torch.randn(10, 8, dtype=torch.float64), torch.randn(10, 8, dtype=torch.float64)
    x = torch.randn(10, 2, 3, 8, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: apply_rope(t, c, s), (x,))
    torch.testing.assert_close(apply_rope(x, c, s), rotate_half_reference(x, c, s))
    c3, s3 = torch.randn(10, 2, 8, dtype=torch.float64), torch.randn(10, 2, 8, dtype=torch.float64)
    strided = torch.randn(2, 10, 3, 8, dtype=torch.float64).transpose(0, 1)
    torch.testing.assert_close(apply_rope(strided, c3, s3), rotate_half_reference(strided, c3, s3))


def test_rope_backward_fills_no_full_size_buffer():
    """The backward is the inverse rotation: no aten::fill_ (the zero-filled buffers of slice
    backwards) and no concatenation."""
    cos, sin = rope_tables(16, 8, 10000.0)
    x = torch.randn(16, 2, 3, 8, requires_grad=True)
    g = torch.randn(16, 2, 3, 8)
    with torch.profiler.profile() as prof:
        torch.autograd.grad(apply_rope(x, cos, sin), x, g)
    names = {e.name for e in prof.events()}
    assert "aten::fill_" not in names and "aten::cat" not in names, sorted(names)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_without_a_graph_the_same_values_and_no_autograd_node(dtype):
    """Decoding (no gradient wanted) skips the autograd nodes: RMSNorm and the rotation give the
    values they give with a graph, bit for bit, and their outputs carry no grad_fn."""
    from megazoo.core.nn.norm import RMSNorm
    from megazoo.core.parallel.context import ParallelContext

    torch.manual_seed(0)
    norm = RMSNorm(32, ParallelContext.single(), dtype=dtype)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(32))
    x = torch.randn(5, 2, 32, dtype=dtype)
    cos, sin = rope_tables(5, 32, 10000.0)
    q = torch.randn(5, 2, 4, 32, dtype=dtype)
    graph = norm(x.clone().requires_grad_())
    rotated = apply_rope(q.clone().requires_grad_(), cos, sin)
    assert graph.grad_fn is not None and rotated.grad_fn is not None
    with torch.no_grad():
        plain, plain_rot = norm(x), apply_rope(q, cos, sin)
    assert plain.grad_fn is None and plain_rot.grad_fn is None
    assert torch.equal(plain, graph.detach()) and torch.equal(plain_rot, rotated.detach())


def test_model_without_a_graph_equals_the_model_with_one():
    """A Llama-style model's logits under no_grad (q and k rotated together, no autograd nodes)
    equal those of the same forward building its graph, bit for bit, with GQA and per-sample
    positions (left padding)."""
    from megazoo.core.parallel.context import ParallelContext
    from megazoo.zoo.gpt import TINY, GPTModel

    cfg = TINY["llama-tiny"]()
    assert cfg.num_heads > cfg.num_kv_heads  # grouped queries
    model = GPTModel(cfg, ParallelContext.single()).initialize(5)
    ids = torch.randint(0, cfg.vocab_size, (2, 9))
    mask = torch.ones(2, 9, dtype=torch.long)
    mask[1, :3] = 0
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with_graph = model(ids, position_ids=positions, attention_mask=mask)
    assert with_graph.requires_grad
    with torch.no_grad():
        without = model(ids, position_ids=positions, attention_mask=mask)
    assert torch.equal(without, with_graph.detach())


@pytest.mark.parametrize("per_sample", [False, True])
def test_rope_over_several_head_dimensions_equals_one(per_sample):
    """q and k rotated together, [s, b, kv, group + 1, d], give what the same heads give as
    [s, b, heads, d], bit for bit, for shared and per-sample tables."""
    torch.manual_seed(0)
    cos, sin = rope_tables(6, 8, 10000.0)
    if per_sample:
        order = torch.tensor([[0, 1, 2, 3, 4, 5], [2, 3, 4, 5, 0, 1]]).T  # [s, b] positions
        cos, sin = cos[order], sin[order]
    x = torch.randn(6, 2, 3, 4, 8)
    together = apply_rope(x, cos, sin)
    flat = apply_rope(x.reshape(6, 2, 12, 8), cos, sin).reshape(x.shape)
    assert torch.equal(together, flat)
    torch.testing.assert_close(together.reshape(6, 2, 12, 8), rotate_half_reference(x.reshape(6, 2, 12, 8), cos, sin))
