"""Every collective's backward is the adjoint of its forward; the vocab-parallel cross-entropy
equals torch's cross_entropy in value and gradient (padded vocabulary, ignore index, smoothing)."""

import pytest
import torch
import torch.distributed as dist
import torch.nn.functional as F

from megazoo.core.parallel import collectives as C
from megazoo.core.parallel.cross_entropy import vocab_parallel_cross_entropy
from megazoo.core.parallel.launch import spawn

# name -> (function, domain kind, codomain kind, input shape); "rep" = one logical tensor held by
# every rank (inner product counted once), "rank" = one tensor per rank (inner products summed)
OPS = {
    "copy_to_region": (lambda x, g: C.copy_to_region(x, g), "rep", "rank", (4, 6)),
    "reduce_from_region": (lambda x, g: C.reduce_from_region(x, g), "rank", "rep", (4, 6)),
    "scatter_to_region": (lambda x, g: C.scatter_to_region(x, g, -1), "rep", "rank", (4, 8)),
    "gather_from_region": (lambda x, g: C.gather_from_region(x, g, -1), "rank", "rep", (4, 3)),
    "scatter_to_sequence": (lambda x, g: C.scatter_to_sequence(x, g), "rep", "rank", (8, 2, 3)),
    "gather_from_sequence(partial grad)": (lambda x, g: C.gather_from_sequence(x, g, True), "rank", "rank", (2, 2, 3)),
    "gather_from_sequence(replicated grad)": (lambda x, g: C.gather_from_sequence(x, g, False), "rank", "rep", (2, 2, 3)),
    "reduce_scatter_to_sequence": (lambda x, g: C.reduce_scatter_to_sequence(x, g), "rank", "rank", (8, 2, 3)),
}


def _sample(shape, kind, rank, salt):
    seed = salt * 1000 + (0 if kind == "rep" else rank + 1)
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def _inner(a, b, kind):
    local = (a * b).sum()
    if kind == "rank":
        dist.all_reduce(local)
    return local


def adjoint_cases():
    rank, group = dist.get_rank(), dist.group.WORLD
    out = {}
    for i, (name, (fn, dom, cod, shape)) in enumerate(OPS.items()):
        x = _sample(shape, dom, rank, 2 * i).requires_grad_()
        y_shape = fn(x.detach(), group).shape
        y = _sample(y_shape, cod, rank, 2 * i + 1)
        fx = fn(x, group)
        (fx * y).sum().backward()
        lhs = _inner(fx.detach(), y, cod)
        rhs = _inner(x.detach(), x.grad, dom)
        grads = [torch.empty_like(x.grad) for _ in range(dist.get_world_size())]
        dist.all_gather(grads, x.grad)
        same_grad = all(torch.equal(g, grads[0]) for g in grads)
        out[name] = (lhs.item(), rhs.item(), same_grad)
    return out


@pytest.mark.parametrize("world", [2, 4])
def test_collective_backward_is_adjoint(world):
    results = spawn(adjoint_cases, world, timeout=180)
    for name, (lhs, rhs, same_grad) in results[0].items():
        assert abs(lhs - rhs) <= 1e-9 * max(1.0, abs(lhs)), f"{name}: <f(x), y> = {lhs} but <x, f*(y)> = {rhs}"
        if OPS[name][1] == "rep":
            assert same_grad, f"{name}: gradient of a replicated input differs across ranks"


# -- vocab-parallel cross-entropy ----------------------------------------------------------------
VOCAB, PADDED = 50, 64


def _ce_inputs():
    g = torch.Generator().manual_seed(7)
    logits = torch.randn(3, 5, PADDED, generator=g, dtype=torch.float64)
    target = torch.randint(0, VOCAB, (3, 5), generator=g)
    target[0, :2] = -100
    return logits, target


def _reference(smoothing):
    logits, target = _ce_inputs()
    logits.requires_grad_()
    loss = F.cross_entropy(logits[..., :VOCAB].reshape(-1, VOCAB), target.reshape(-1), ignore_index=-100,
                           label_smoothing=smoothing, reduction="none").view(3, 5)
    weights = torch.arange(15, dtype=torch.float64).view(3, 5)  # a non-uniform upstream gradient
    (loss * weights).sum().backward()
    return loss.detach(), logits.grad


def ce_cases():
    rank, world = dist.get_rank(), dist.get_world_size()
    out = {}
    for smoothing in (0.0, 0.1):
        logits, target = _ce_inputs()
        local = logits.chunk(world, -1)[rank].clone().requires_grad_()
        loss = vocab_parallel_cross_entropy(local, target, VOCAB, dist.group.WORLD, label_smoothing=smoothing)
        weights = torch.arange(15, dtype=torch.float64).view(3, 5)
        (loss * weights).sum().backward()
        full_grad = [torch.empty_like(local.grad) for _ in range(world)]
        dist.all_gather(full_grad, local.grad.contiguous())
        out[smoothing] = (loss.detach(), torch.cat(full_grad, -1))
    return out


@pytest.mark.parametrize("smoothing", [0.0, 0.1])
def test_vocab_parallel_cross_entropy_single_process(smoothing):
    logits, target = _ce_inputs()
    logits.requires_grad_()
    loss = vocab_parallel_cross_entropy(logits, target, VOCAB, None, label_smoothing=smoothing)
    weights = torch.arange(15, dtype=torch.float64).view(3, 5)
    (loss * weights).sum().backward()
    ref_loss, ref_grad = _reference(smoothing)
    torch.testing.assert_close(loss, ref_loss, rtol=1e-10, atol=1e-10)
    torch.testing.assert_close(logits.grad[..., :VOCAB], ref_grad[..., :VOCAB], rtol=1e-10, atol=1e-10)
    assert torch.all(logits.grad[..., VOCAB:] == 0), "padded vocabulary columns must get no gradient"
    assert torch.all(loss[0, :2] == 0) and torch.all(logits.grad[0, :2] == 0), "ignored labels must not count"


def test_vocab_parallel_cross_entropy_tp4():
    results = spawn(ce_cases, 4, timeout=120)
    for smoothing in (0.0, 0.1):
        ref_loss, ref_grad = _reference(smoothing)
        loss, grad = results[0][smoothing]
        torch.testing.assert_close(loss, ref_loss, rtol=1e-10, atol=1e-10)
        torch.testing.assert_close(grad[..., :VOCAB], ref_grad[..., :VOCAB], rtol=1e-10, atol=1e-10)
        assert torch.all(grad[..., VOCAB:] == 0)
