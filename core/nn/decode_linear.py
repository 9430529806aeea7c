"""Decoding's small products, y = x W^T for 1-4 tokens, through weights packed for them.

While generating one token per sequence, each step multiplies a few rows (the batch) by every
weight: it reads each weight once per token, and the weights dominate the step (about 70% of
SmolLM2-135M's decode step with these products; norms, attention, the KV cache and Python the rest),
so a step is bounded by memory bandwidth (bench/bench_generate.py measures how far
from that bound it runs). On a CPU, F.linear's kernels stream a weight from memory at well under
the machine's read bandwidth for so few rows. oneDNN's matrix product over a weight reordered into
its blocked layout for a batch of 4 rows (torch.ops.mkldnn._reorder_linear_weight) streams at about
three quarters of it (29 against 38 GB/s: twice F.linear's rate), for 1, 2 and 4 rows alike. Measured at SmolLM2's shapes (1 thread, weights not in cache,
AMD EPYC with a 38 GB/s single-thread read rate), all products of one decode step:
  - fp32: 18.6 ms packed against 25.5 ms before (a cached input-major copy for one token, W x^T for
    2-4; F.linear for the narrow layers) and 34.6 ms with 4 rows; F.linear alone 34-36 ms;
  - bf16: 10.6-11.8 ms packed (1-4 rows) against 20 ms through F.linear.
Packing for 1 row gives F.linear's layout and speed; the 4-row layout is as fast from 1 to 16 rows.
Which devices and dtypes take this path is a per-device rule
(`megazoo.core.parallel.device.decode_products`); training and prefill never take it (it needs
autograd off and at most 4 rows). The result is the same product summed in another order
(differences of about 1e-7 relative, as between two BLAS builds). Without oneDNN in the torch build
the layers run as they are.

The packed copy costs memory: one more copy of every weight while the model lives (SmolLM2-135M:
538 MB on top of its 538 MB in fp32), made at the first decoding product and remade only when the
parameter changes (storage or version: an optimizer step or a load); `release` drops them. A gated
MLP's gate and up projections share one copy, [2 * ffn, in], so that a token makes one product
instead of two. Row-parallel layers (the attention output, the MLP's down projection) take it with
one tensor-parallel rank only (with more, their output is reduced across ranks: they run as they are).

`decode_dtype(device)` is the rule for the weights' dtype in decoding: bf16 where bf16 products are
faster than fp32 ones on the device (megazoo.core.train.precision_probe), else fp32.
"""

from __future__ import annotations

import functools
import weakref

import torch

from megazoo.core.parallel.collectives import group_size
from megazoo.core.parallel.device import decode_products
from megazoo.core.parallel.layers import ColumnParallelLinear, RowParallelLinear

MAX_ROWS = 4  # tokens per product (batch x new positions) up to which the packed products pay
PACK_ROWS = 4  # the batch oneDNN's layout is chosen for (1 would keep F.linear's layout)
_COPIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # module -> (key, packed weight)


def decode_dtype(device: torch.device | str = "cpu") -> torch.dtype:
    """The dtype to keep a model's weights in for decoding on `device`: bf16 where bf16 products
    beat fp32 ones there (the cached probe of megazoo.core.train.precision_probe; MEGAZOO_BF16_PROBE
    injects it), else fp32. A step reads every weight once, so bf16 also halves the bytes read."""
    from megazoo.core.train.precision_probe import bf16_is_faster  # measures once per machine

    return torch.bfloat16 if bf16_is_faster(device) else torch.float32


@functools.cache
def _onednn() -> bool:
    """oneDNN's packed products exist in this torch build (asked once: each product checks it)."""
    ops = torch.ops.mkldnn
    return torch.backends.mkldnn.is_available() and hasattr(ops, "_linear_pointwise") and hasattr(
        ops, "_reorder_linear_weight")


def _key(weights) -> tuple:
    return tuple((w.data_ptr(), w._version, w.dtype, w.device, tuple(w.shape)) for w in weights)


def packed(owner: torch.nn.Module, weights: list[torch.Tensor]) -> torch.Tensor:
    """The weights ([out_i, in] each) stacked on their outputs and reordered by oneDNN for
    PACK_ROWS rows; cached on `owner` until one of them changes."""
    key = _key(weights)
    hit = _COPIES.get(owner)
    if hit is not None and hit[0] == key:
        return hit[1]
    _COPIES.pop(owner, None)  # free the stale copy before making the new one
    with torch.no_grad():
        stacked = weights[0].detach() if len(weights) == 1 else torch.cat([w.detach() for w in weights], 0)
        copy = torch.ops.mkldnn._reorder_linear_weight(stacked, PACK_ROWS)  # a copy in oneDNN's layout
    _COPIES[owner] = (key, copy)
    return copy


def _product(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """x W^T + b with W packed (x of any leading shape)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


def _plain(layer, kind) -> bool:
    """`layer` is a `kind` itself (not a subclass) without hooks: its forward is known."""
    return type(layer) is kind and not (layer._forward_hooks or layer._forward_pre_hooks)


def applies(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """True when x W^T is a decoding product the packed kernels speed up."""
    # weights made under inference_mode have no version counter to tell a stale copy: plain path
    return (not torch.is_grad_enabled() and x.numel() <= MAX_ROWS * x.shape[-1] and not weight.is_inference()
            and x.dtype == weight.dtype and decode_products(x.device, weight.dtype) == "tuned" and _onednn())


def column_linear(layer, x: torch.Tensor) -> torch.Tensor:
    """layer(x) for a ColumnParallelLinear, through the packed products when `applies`.
    Without sequence parallelism and output gathering, the layer's forward is x W^T + b on this
    rank's weight slice (the input copy into the tp region is an identity in the forward pass)."""
    if not _plain(layer, ColumnParallelLinear):
        return layer(x)
    weight = layer.get_weight()
    if layer.ctx.sp or layer.gather_output or not applies(x, weight):
        return layer(x)
    return _product(x, packed(layer, [weight]), layer.bias)


def row_linear(layer, x: torch.Tensor) -> torch.Tensor:
    """layer(x) for a RowParallelLinear, through the packed products when `applies` and the layer
    has one tensor-parallel rank (its forward is then x W^T + b)."""
    if not _plain(layer, RowParallelLinear) or layer.ctx.sp or group_size(layer.ctx.tp_group) > 1:
        return layer(x)
    if not applies(x, layer.weight):
        return layer(x)
    return _product(x, packed(layer, [layer.weight]), layer.bias)


def gated_pair(mlp, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(gate(x), up(x)) of a gated MLP through one packed product over the shared copy, or None
    where that does not apply (the caller runs the layers)."""
    gate, up = mlp.gate, mlp.fc1
    if not (_plain(gate, ColumnParallelLinear) and _plain(up, ColumnParallelLinear)) or gate.ctx.sp:
        return None
    if gate.bias is not None or up.bias is not None or not applies(x, gate.get_weight()):
        return None
    both = _product(x, packed(mlp, [gate.get_weight(), up.get_weight()]), None)
    return both.split(gate.get_weight().shape[0], dim=-1)


def release(model: torch.nn.Module) -> None:
    """Drop the packed copies held for `model`'s modules (they are rebuilt when needed)."""
    for m in model.modules():
        _COPIES.pop(m, None)
