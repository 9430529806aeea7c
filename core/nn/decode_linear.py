"""Decoding's small products, y = x W^T for 1-4 tokens, taken the way that is fastest here.

While generating one token per sequence, each step multiplies a few rows (the batch) by every
weight: it reads each weight once per token, and the weights dominate the step (84% of SmolLM2-135M's
decode time). On a CPU in fp32, MKL runs F.linear's layout poorly at these sizes for layers with
more outputs than inputs (QKV, gate and up, the output head). Measured at SmolLM2's shapes:
  - one token: a matrix-vector product over a cached input-major copy of the weight ([in, out]
    rows, y accumulated row by row) took 0.53-0.80x F.linear's time (head 5.1 against 9.6 ms,
    gate/up 194 against 313 us, QKV 150 against 187 us);
  - 2-4 tokens: the product W x^T, the weight read as stored, took 0.2-0.7x (F.linear's
    small-batch GEMM is slower there than even its matrix-vector product).
Narrower layers (the attention output, the MLP's down projection) gain nothing or lose, and from
8 tokens up F.linear wins again, so those keep F.linear. Training and prefill never take this
path (it needs autograd off and at most 4 rows). Which devices take it is a per-device rule
(`megazoo.core.parallel.device.decode_products`); the result is the same product summed in another
order (differences of about 1e-7 relative, as between two BLAS builds).

The input-major copy costs memory: one more copy of each such weight while the model lives
(SmolLM2-135M: 391 MB on top of its 540 MB), made at the first one-token step and remade only when
the parameter changes (storage or version: an optimizer step or a load); `release` drops them.
A gated MLP's gate and up projections share one copy, [in, 2 * ffn], so that a token makes one
product instead of two.
"""

from __future__ import annotations

import weakref

import torch
import torch.nn.functional as F

from megazoo.core.parallel.device import decode_products
from megazoo.core.parallel.layers import ColumnParallelLinear

MAX_ROWS = 4  # tokens per product (batch x new positions) up to which the tuned products pay
_COPIES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # module -> (key, [in, out] weight)


def _key(weights) -> tuple:
    return tuple((w.data_ptr(), w._version, w.dtype, w.device, tuple(w.shape)) for w in weights)


def input_major(owner: torch.nn.Module, weights: list[torch.Tensor]) -> torch.Tensor:
    """[in, sum of outs]: the weights ([out_i, in] each) side by side, transposed, contiguous;
    cached on `owner` until one of them changes."""
    key = _key(weights)
    hit = _COPIES.get(owner)
    if hit is not None and hit[0] == key:
        return hit[1]
    _COPIES.pop(owner, None)  # free the stale copy before making the new one
    with torch.no_grad():
        copy = torch.cat([w.detach().t() for w in weights], 1).contiguous()
    _COPIES[owner] = (key, copy)
    return copy


def _plain(layer) -> bool:
    """A ColumnParallelLinear itself (not a subclass) without hooks: its forward is known."""
    return type(layer) is ColumnParallelLinear and not (layer._forward_hooks or layer._forward_pre_hooks)


def applies(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """True when x W^T is a decoding product the tuned kernels speed up."""
    # weights made under inference_mode have no version counter to tell a stale copy: plain path
    return (not torch.is_grad_enabled() and x.numel() <= MAX_ROWS * x.shape[-1] and not weight.is_inference()
            and weight.shape[0] > weight.shape[1] and decode_products(x.device, weight.dtype) == "tuned")


def _output_major(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """x W^T computed as (W x^T)^T with the weight as stored."""
    rows = x.reshape(-1, x.shape[-1])
    return torch.mm(weight, rows.t()).t().contiguous().view(*x.shape[:-1], weight.shape[0])


def column_linear(layer, x: torch.Tensor) -> torch.Tensor:
    """layer(x) for a ColumnParallelLinear, through the tuned products when `applies`.
    Without sequence parallelism and output gathering, the layer's forward is x W^T + b on this
    rank's weight slice (the input copy into the tp region is an identity in the forward pass)."""
    if not _plain(layer):
        return layer(x)
    weight = layer.get_weight()
    if layer.ctx.sp or layer.gather_output or not applies(x, weight):
        return layer(x)
    if x.numel() == x.shape[-1]:
        return F.linear(x, input_major(layer, [weight]).t(), layer.bias)
    y = _output_major(x, weight)
    return y if layer.bias is None else y + layer.bias


def gated_pair(mlp, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor] | None:
    """(gate(x), up(x)) of a gated MLP through the tuned products (one product over the shared
    input-major copy for one token), or None where they do not apply (the caller runs the layers)."""
    gate, up = mlp.gate, mlp.fc1
    if not (_plain(gate) and _plain(up)) or gate.ctx.sp or gate.bias is not None or up.bias is not None:
        return None
    if not applies(x, gate.get_weight()):
        return None
    if x.numel() == x.shape[-1]:
        both = F.linear(x, input_major(mlp, [gate.get_weight(), up.get_weight()]).t())
        return both.split(gate.get_weight().shape[0], dim=-1)
    return _output_major(x, gate.get_weight()), _output_major(x, up.get_weight())


def release(model: torch.nn.Module) -> None:
    """Drop the input-major copies held for `model`'s modules (they are rebuilt when needed)."""
    for m in model.modules():
        _COPIES.pop(m, None)
