"""Ring attention: core attention over a sequence split across the context-parallel (cp) group.

Each cp rank holds two chunks of every sequence (the load-balanced split of
megazoo.core.parallel.cp_split: chunks r and 2cp-1-r of 2cp), as queries, keys and values. The keys
and values travel around the ring (rank r sends to r+1, receives from r-1); at step i rank r holds
those of rank src = r - i and attends its queries to them. The partial results are merged by online
softmax: per query row the running log-sum-exp L and the output O, kept in fp32 (fp64 for fp64
inputs) whatever the compute dtype.

Each block is computed by a kernel that returns (and in backward takes) its log-sum-exp: on CPUs
torch's flash-attention kernels (no block's score matrix is stored), elsewhere an explicit
matmul-softmax-matmul in the accumulation dtype.

Causal masking follows from the chunks' global positions (Megatron-LM's scheme):
  - step 0 (own keys): the two local chunks are in increasing global order, so the mask is the
    plain lower triangle of the local 2c x 2c block;
  - src < r: both local query chunks come after key chunk src and before key chunk 2cp-1-src: all
    queries see the first half of the keys, unmasked;
  - src > r: only query chunk 2cp-1-r comes after the keys, and after both of them: the second half
    of the queries sees all keys, unmasked.
Bidirectional attention attends every query to every key block.

The backward pass runs the ring again: with the forward's final L, each block's probabilities are
recomputed (no s x t matrix is kept), dQ accumulates locally, and dK/dV accumulate on the key block
as it travels; after the last step one more shift brings each block's dK/dV home.

Communication is point-to-point over the cp group with torch.distributed.batch_isend_irecv (gloo and
NCCL both take it), started before a step's compute and waited for after it.
"""

from __future__ import annotations

import torch
import torch.distributed as dist

from megazoo.core.parallel.context import ParallelContext


class Ring:
    """This rank's neighbours in the cp group: sends go to the next rank, receives come from the previous."""

    def __init__(self, group, ranks: tuple, index: int):
        self.group, self.size = group, len(ranks)
        self.next, self.prev = ranks[(index + 1) % self.size], ranks[(index - 1) % self.size]

    def start(self, tensors: list[torch.Tensor]) -> tuple[list[torch.Tensor], list]:
        """Send `tensors` to the next rank and receive same-shaped ones from the previous; returns
        (receive buffers, works to wait for)."""
        ops, bufs = [], []
        for t in tensors:
            ops.append(dist.P2POp(dist.isend, t.contiguous(), self.next, self.group))
        for t in tensors:
            bufs.append(torch.empty_like(t))
            ops.append(dist.P2POp(dist.irecv, bufs[-1], self.prev, self.group))
        return bufs, dist.batch_isend_irecv(ops)

    @staticmethod
    def finish(works: list) -> None:
        for w in works:
            w.wait()


def accum_dtype(dtype: torch.dtype) -> torch.dtype:
    """The dtype of the softmax statistics and accumulators: fp32, or fp64 for fp64 inputs."""
    return torch.float64 if dtype == torch.float64 else torch.float32


def _scores(q, k, scale, causal):
    """q [b, kv, g, s, d], k [b, kv, t, d] (accumulation dtype) -> [b, kv, g, s, t]."""
    scores = torch.matmul(q, k.unsqueeze(2).transpose(-1, -2)).mul_(scale)
    if causal:
        s, t = scores.shape[-2:]
        keep = torch.ones(s, t, dtype=torch.bool, device=q.device).tril(t - s)
        scores.masked_fill_(~keep, float("-inf"))
    return scores


def _grouped(q, k):
    """q [b, h, s, d] as [b, kv, g, s, d] in the accumulation dtype (the g query heads of a KV head)."""
    b, h, s, d = q.shape
    kv = k.shape[1]
    return q.to(accum_dtype(q.dtype)).reshape(b, kv, h // kv, s, d)


class ExplicitBlock:
    """Block attention as matmul, softmax statistics, matmul, in the accumulation dtype (stores the
    block's scores); any device."""

    @staticmethod
    def forward(q, k, v, scale, causal):
        """One block's normalised output [b, h, s, d] and log-sum-exp [b, h, s] (accumulation dtype)."""
        acc = accum_dtype(q.dtype)
        q5, k, v = _grouped(q, k), k.to(acc), v.to(acc)
        scores = _scores(q5, k, scale, causal)
        lse = torch.logsumexp(scores, -1)
        out = torch.matmul(torch.exp(scores - lse.unsqueeze(-1)), v.unsqueeze(2))
        return out.flatten(1, 2), lse.flatten(1, 2)

    @staticmethod
    def backward(q, k, v, dout, out, lse, scale, causal):
        """Gradients (dq [b, h, s, d], dk, dv [b, kv, t, d]) of one block, given the whole
        attention's output and log-sum-exp on these query rows."""
        acc = accum_dtype(q.dtype)
        q5, k, v = _grouped(q, k), k.to(acc), v.to(acc)
        do5, o5 = _grouped(dout, k), _grouped(out, k)
        lse5 = lse.to(acc).view(q5.shape[:-1])
        delta = (do5 * o5).sum(-1)
        probs = torch.exp(_scores(q5, k, scale, causal) - lse5.unsqueeze(-1))
        dv = torch.matmul(probs.transpose(-1, -2), do5).sum(2)
        ds = probs * (torch.matmul(do5, v.unsqueeze(2).transpose(-1, -2)) - delta.unsqueeze(-1))
        dq = torch.matmul(ds, k.unsqueeze(2)).mul_(scale)
        dk = torch.matmul(ds.transpose(-1, -2), q5).sum(2).mul_(scale)
        return dq.flatten(1, 2), dk, dv


class CpuFlashBlock:
    """Block attention with torch's CPU flash-attention kernels (aten
    _scaled_dot_product_flash_attention_for_cpu and its backward), which return and take the
    log-sum-exp and never store a block's scores. GQA keys and values are repeated per query head
    (O(s) memory) and their gradients summed back."""

    @staticmethod
    def available(q) -> bool:
        return q.device.type == "cpu" and hasattr(torch.ops.aten, "_scaled_dot_product_flash_attention_for_cpu")

    @staticmethod
    def _repeat(q, k, v):
        group = q.shape[1] // k.shape[1]
        return (k, v) if group == 1 else (k.repeat_interleave(group, 1), v.repeat_interleave(group, 1))

    @staticmethod
    def forward(q, k, v, scale, causal):
        k, v = CpuFlashBlock._repeat(q, k, v)
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal, scale=scale)
        acc = accum_dtype(q.dtype)
        return out.to(acc), lse.to(acc)

    @staticmethod
    def backward(q, k, v, dout, out, lse, scale, causal):
        kv = k.shape[1]
        k, v = CpuFlashBlock._repeat(q, k, v)
        dq, dk, dv = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward(
            dout.contiguous(), q.contiguous(), k, v, out.contiguous(), lse.contiguous(), 0.0, causal, scale=scale)
        acc = accum_dtype(q.dtype)
        if k.shape[1] != kv:
            b, h, t, d = dk.shape
            dk, dv = (g.to(acc).view(b, kv, h // kv, t, d).sum(2) for g in (dk, dv))
        return dq.to(acc), dk.to(acc), dv.to(acc)


def pick_kernel(q, kernel: str | None = None):
    """"flash" (torch's CPU flash kernels, the default on CPUs) or "explicit" (any device)."""
    if kernel == "explicit" or (kernel is None and not CpuFlashBlock.available(q)):
        return ExplicitBlock
    if kernel in (None, "flash") and CpuFlashBlock.available(q):
        return CpuFlashBlock
    raise ValueError(f"ring attention kernel {kernel!r} is not available for {q.device.type} tensors")


def merge(out, lse, rows, block_out, block_lse) -> None:
    """Online softmax: fold a block's (output, lse) into the running (out, lse) on `rows`, in place
    (the block's output is scaled in place too: it is the caller's scratch)."""
    o, l_old = out[..., rows, :], lse[..., rows]
    l_new = torch.logaddexp(l_old, block_lse)
    o.mul_(torch.exp(l_old - l_new).unsqueeze(-1)).add_(block_out.mul_(torch.exp(block_lse - l_new).unsqueeze(-1)))
    lse[..., rows] = l_new


def plan(step: int, rank: int, cp: int, c: int, causal: bool):
    """(query rows, key rows, causal mask?) of ring step `step` on cp rank `rank`; c = chunk length."""
    every = slice(None)
    if not causal:
        return every, every, False
    src = (rank - step) % cp
    if step == 0:
        return every, every, True
    if src < rank:
        return every, slice(0, c), False
    return slice(c, 2 * c), every, False


class RingAttention(torch.autograd.Function):
    """softmax(q k^T * scale [+ causal mask]) v over the cp group; q [b, h, s, d], k, v [b, kv, s, d]."""

    @staticmethod
    def forward(fctx, q, k, v, scale, causal, ring, rank, kernel):
        s = q.shape[2]
        out = lse = None
        block = torch.stack([k, v])
        for step in range(ring.size):
            works = []
            if step < ring.size - 1:
                nxt, works = ring.start([block])
            rows, cols, mask = plan(step, rank, ring.size, s // 2, causal)
            bo, bl = kernel.forward(q[:, :, rows], block[0, :, :, cols], block[1, :, :, cols], scale, mask)
            if step == 0:  # every query row sees its own block: the running state starts from it
                out, lse = bo, bl
            else:
                merge(out, lse, rows, bo, bl)
            ring.finish(works)
            if works:
                block = nxt[0]
        out = out.to(q.dtype)
        fctx.save_for_backward(q, k, v, out, lse)
        fctx.scale, fctx.causal, fctx.ring, fctx.rank, fctx.kernel = scale, causal, ring, rank, kernel
        return out

    @staticmethod
    def backward(fctx, dout):
        q, k, v, out, lse = fctx.saved_tensors
        ring, rank, scale, causal, kernel = fctx.ring, fctx.rank, fctx.scale, fctx.causal, fctx.kernel
        s = q.shape[2]
        dq = torch.zeros(q.shape, dtype=lse.dtype, device=q.device)
        block = torch.stack([k, v])
        dblock = torch.zeros(block.shape, dtype=lse.dtype, device=q.device)
        received, dworks = None, []
        for step in range(ring.size):
            works = []
            if step < ring.size - 1:
                nxt, works = ring.start([block])
            rows, cols, mask = plan(step, rank, ring.size, s // 2, causal)
            g_q, g_k, g_v = kernel.backward(q[:, :, rows], block[0, :, :, cols], block[1, :, :, cols],
                                            dout[:, :, rows], out[:, :, rows], lse[:, :, rows], scale, mask)
            dq[:, :, rows] += g_q
            # the gradient of this block arrives from the previous rank (its shift overlapped this
            # step's compute), takes this rank's part and follows the block to the next rank; after
            # the last step that shift brings it home to its owner (a ring of one is home already)
            ring.finish(dworks)
            if dworks:
                dblock = received[0]
            dblock[0, :, :, cols] += g_k
            dblock[1, :, :, cols] += g_v
            if ring.size > 1:
                received, dworks = ring.start([dblock])
            ring.finish(works)
            if works:
                block = nxt[0]
        ring.finish(dworks)
        if dworks:
            dblock = received[0]
        return dq.to(q.dtype), dblock[0].to(k.dtype), dblock[1].to(v.dtype), None, None, None, None, None


def ring_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, scale: float, causal: bool,
                   ctx: ParallelContext, kernel: str | None = None) -> torch.Tensor:
    """Attention of this rank's two chunks (q [b, h, s, d], k, v [b, kv, s, d], s = 2 chunks) over
    the whole sequence of its cp group; `kernel` of each block: None (the device's default),
    "flash" (CPU) or "explicit"."""
    if q.shape[2] % 2:
        raise ValueError(f"ring attention needs the local sequence as two equal chunks, got length {q.shape[2]}")
    ring = Ring(ctx.cp_group, ctx.cp_ranks, ctx.cp_rank)
    return RingAttention.apply(q, k, v, scale, causal, ring, ctx.cp_rank, pick_kernel(q, kernel))
