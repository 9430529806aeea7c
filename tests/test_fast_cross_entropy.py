"""The fused, chunked vocab-parallel cross-entropy equals F.cross_entropy at tp 1, 2 and 4 (several
chunks, padded vocabulary, ignored labels, label smoothing), writes its gradient in the logits'
dtype, never makes a [tokens x vocab] fp32 tensor, and traces whole under torch.compile."""

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.utils._python_dispatch import TorchDispatchMode

from megazoo.core.parallel import cross_entropy as ce
from megazoo.core.parallel.launch import spawn

VOCAB, PADDED, TOKENS = 250, 256, (4, 9)
TOL = {torch.float64: 1e-10, torch.float32: 1e-5}


def _inputs(dtype):
    g = torch.Generator().manual_seed(3)
    logits = (3 * torch.randn(*TOKENS, PADDED, generator=g, dtype=torch.float64)).to(dtype)
    target = torch.randint(0, VOCAB, TOKENS, generator=g)
    target[0, :3] = -100
    target[1, 0] = VOCAB - 1  # the last real column, next to the padding
    return logits, target


def _reference(dtype, smoothing):
    logits, target = _inputs(dtype)
    x = logits.double().requires_grad_()  # the same (rounded) values, exact arithmetic
    loss = F.cross_entropy(x[..., :VOCAB].reshape(-1, VOCAB), target.reshape(-1), ignore_index=-100,
                           label_smoothing=smoothing, reduction="none").view(TOKENS)
    (loss * _weights()).sum().backward()
    return loss.detach(), x.grad


def _weights():
    return torch.arange(TOKENS[0] * TOKENS[1], dtype=torch.float64).view(TOKENS) / 10


def _run(dtype, smoothing, group, rank, world, chunk):
    ce.CHUNK_ELEMENTS = chunk
    logits, target = _inputs(dtype)
    local = logits.chunk(world, -1)[rank].clone().requires_grad_()
    loss = ce.vocab_parallel_cross_entropy(local, target, VOCAB, group, label_smoothing=smoothing)
    (loss * _weights().to(loss.dtype)).sum().backward()
    return loss.detach(), local.grad


def _cases(chunk):
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {}
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        for smoothing in (0.0, 0.1):
            loss, grad = _run(dtype, smoothing, dist.group.WORLD, rank, world, chunk)
            parts = [torch.empty_like(grad) for _ in range(world)]
            dist.all_gather(parts, grad.contiguous())
            out[(dtype, smoothing)] = (loss, torch.cat(parts, -1))
    return out


def _check(results):
    for (dtype, smoothing), (loss, grad) in results.items():
        ref_loss, ref_grad = _reference(dtype, smoothing)
        tag = f"{dtype} smoothing={smoothing}"
        assert grad.dtype == dtype, f"{tag}: the gradient must come in the logits' dtype"
        assert loss.dtype == (torch.float64 if dtype == torch.float64 else torch.float32)
        tol = TOL.get(dtype, 1e-5)
        torch.testing.assert_close(loss.double(), ref_loss, rtol=tol, atol=tol, msg=f"{tag} loss")
        gtol = TOL.get(dtype, 4e-3)  # bf16: the gradient itself is rounded to bf16 (8 bits)
        torch.testing.assert_close(grad[..., :VOCAB].double(), ref_grad[..., :VOCAB], rtol=gtol, atol=gtol * 1e-2,
                                   msg=f"{tag} grad")
        assert torch.all(grad[..., VOCAB:] == 0), f"{tag}: padded columns get no gradient"
        assert torch.all(loss[0, :3] == 0) and torch.all(grad[0, :3] == 0), f"{tag}: ignored labels count"


@pytest.mark.parametrize("chunk", [1, 700, 2**22])  # one row, a few rows, everything in one chunk
def test_tp1_equals_cross_entropy(chunk, monkeypatch):
    monkeypatch.setattr(ce, "CHUNK_ELEMENTS", chunk)
    out = {}
    for dtype in (torch.float64, torch.float32, torch.bfloat16):
        for smoothing in (0.0, 0.1):
            out[(dtype, smoothing)] = _run(dtype, smoothing, None, 0, 1, chunk)
    _check(out)


@pytest.mark.parametrize("tp", [2, 4])
def test_tp_equals_cross_entropy(tp):
    # at tp=4 the last shard (columns 192..255) holds 58 real columns and the padding
    _check(spawn(_cases, tp, 300, timeout=300)[0])


def test_only_one_chunk_of_fp32(monkeypatch):
    """bf16 logits: no fp32 tensor larger than one chunk is made, forward or backward."""
    monkeypatch.setattr(ce, "CHUNK_ELEMENTS", 1024)
    seen = []

    class Sizes(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for t in (out if isinstance(out, (tuple, list)) else [out]):
                if isinstance(t, torch.Tensor) and t.dtype in (torch.float32, torch.float64):
                    seen.append((t.numel(), str(func)))
            return out

    logits, target = _inputs(torch.bfloat16)
    logits.requires_grad_()
    with Sizes():
        loss = ce.vocab_parallel_cross_entropy(logits, target, VOCAB)
        loss.sum().backward()
    assert logits.grad.dtype == torch.bfloat16
    biggest = max(seen)
    assert biggest[0] <= 1024, f"an fp32 tensor of {biggest[0]} elements ({biggest[1]}); logits have {logits.numel()}"


def test_traces_without_graph_breaks():
    """No data-dependent Python branch: dynamo traces forward and backward as one graph."""
    logits, target = _inputs(torch.float32)
    fn = torch.compile(lambda x, t: ce.vocab_parallel_cross_entropy(x, t, VOCAB).sum(), backend="eager", fullgraph=True)
    x = logits.clone().requires_grad_()
    fn(x, target).backward()
    ref = logits.clone().requires_grad_()
    ce.vocab_parallel_cross_entropy(ref, target, VOCAB).sum().backward()
    torch.testing.assert_close(x.grad, ref.grad)


def _masked_case(group=None, rank=0, world=1):
    """Logits at -inf (a vocabulary mask): row 0 masks a whole tp=2 shard, row 1 every other column."""
    logits, target = _inputs(torch.float32)
    logits, target = logits.reshape(-1, PADDED), target.reshape(-1)
    logits[0, :PADDED // 2] = float("-inf")
    logits[1, ::2] = float("-inf")
    target[0], target[1] = PADDED // 2 + 5, 3
    local = logits.chunk(world, -1)[rank].clone().requires_grad_()
    loss = ce.vocab_parallel_cross_entropy(local, target, VOCAB, group)
    loss.sum().backward()
    return logits, target, loss.detach(), local.grad


def _masked_rank():
    return _masked_case(dist.group.WORLD, dist.get_rank(), dist.get_world_size())


def _masked_reference(logits, target):
    x = logits.double().requires_grad_()
    loss = F.cross_entropy(x[:, :VOCAB], target, ignore_index=-100, reduction="none")
    loss.sum().backward()
    return loss.detach(), x.grad


@pytest.mark.parametrize("tp", [1, 2])
def test_masked_logits(tp):
    if tp == 1:
        logits, target, loss, grad = _masked_case()
    else:
        parts = spawn(_masked_rank, 2, timeout=300)
        logits, target, loss = parts[0][:3]
        grad = torch.cat([p[3] for p in parts], -1)
    ref_loss, ref_grad = _masked_reference(logits, target)
    assert torch.isfinite(loss).all(), "a masked shard or column must not make the loss inf or nan"
    torch.testing.assert_close(loss.double(), ref_loss, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(grad[:, :VOCAB].double(), ref_grad[:, :VOCAB], rtol=1e-5, atol=1e-7)
